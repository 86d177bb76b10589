"""fake_scaler.py: torch.cuda.amp.GradScaler's API and update rule on the CPU.

Debian's torch 1.13 disables GradScaler without CUDA (it warns and keeps only
_enabled), so the recorder's tests run this stand-in: the same attributes the
Recorder reads (is_enabled, get_scale, _scale, _init_scale) and the same rule
as torch/cuda/amp/grad_scaler.py (scale the loss; unscale the gradients in
place, found-inf if any is non-finite; skip the optimizer's step then; update:
backoff on found-inf, growth after growth_interval clean steps).
"""
import torch


class FakeGradScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
        self._init_scale = init_scale
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._scale = None
        self._growth_tracker = 0
        self._found_inf = False

    def is_enabled(self):
        return True

    def get_scale(self):
        return self._init_scale if self._scale is None else self._scale.item()

    def scale(self, loss):
        if self._scale is None:
            self._scale = torch.full((), self._init_scale, dtype=torch.float32)
        return loss * self._scale

    def step(self, optimizer):
        inv = (1.0 / self._scale.double()).float()
        found = False
        for g in optimizer.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.grad.mul_(inv)
                    found = found or not bool(torch.isfinite(p.grad).all())
        self._found_inf = found
        if not found:
            optimizer.step()

    def update(self):
        if self._found_inf:
            self._scale = self._scale * self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale = self._scale * self._growth_factor
                self._growth_tracker = 0
