"""recorder.py: Recorder, a run directory in ampscope's format written from a
PyTorch training loop, so that `ampscope report` and `ampscope recommend`
read it as they read `ampscope train`'s.

    rec = ampscope_torch.Recorder(model, "runs/mine", target="fp16", scaler=scaler,
                                  every=10, optimizer=opt)
    ...   # each step, after backward (and after scaler.update() if there is one):
    rec.step(loss)
    ...   # after an evaluation, optionally:
    rec.eval(test_loss, test_accuracy)
    rec.close()

What it writes (analyze/record.h has every column):
  steps.csv       every step: the loss, the scale the step's loss was multiplied
                  by, found-inf and the skipped update (from the GradScaler)
  trace.csv, trace_hist.csv   every step: the weight gradients as the scaled
                  backward stored them (fp32 g * S: after scaler.update() the
                  gradients are unscaled, and g * S is the stored value exactly
                  when S is a power of two, as GradScaler's scales are)
  tensors.csv, hist.csv   every `every` steps, per module with parameters of
                  its own: weights, weight gradients, activation gradients
                  (a hook on the module's output) and, with activations=True,
                  activations; gradients at the step's scale S (their values
                  unscaled, the scale column S), the others at scale 1
  updates.csv     every `every` steps, for torch.optim.SGD: the weight updates
                  lost to rounding (the intended update -lr * d from the
                  gradient and the momentum buffer, the applied one new - old)
  eval.csv        one row per rec.eval()
  run.json        what ran: PyTorch's version, the device, the model's class and
                  parameter count, what was recorded
The statistics are torch reductions on the tensors' device (counts.py); only
the counts come to the host.
"""
import math
import os
import platform
import time

import torch

from . import counts as C
from . import rundir

__all__ = ["Recorder"]

KINDS = ("weight", "activation", "weight_grad", "activation_grad")


def _utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _fp32(v):
    return float(torch.tensor(float(v), dtype=torch.float32))


class Recorder:
    """Writes the record of a PyTorch training loop into the folder out."""

    def __init__(self, model, out, target="fp16", scaler=None, every=10, hist_every=None,
                 activations=False, optimizer=None, overwrite=False, trace=True):
        if target not in ("fp16", "bf16", "fp32"):
            raise ValueError("target %r: expected fp16, bf16 or fp32" % (target,))
        if int(every) < 1 or (hist_every is not None and int(hist_every) < 1):
            raise ValueError("every and hist_every must be >= 1")
        self.model, self.out, self.target = model, out, target
        self.scaler, self.optimizer = scaler, optimizer
        self.every = int(every)
        self.hist_every = self.every if hist_every is None else int(hist_every)
        self.activations, self.trace = bool(activations), bool(trace)
        self._step = 0
        self._epoch = 0
        self._closed = False
        self._layers = []  # (name, module, [params])
        for name, m in model.named_modules():
            ps = [p for p in m.parameters(recurse=False)]
            if not ps:
                continue
            name = name or "model"
            if not rundir.name_ok(name):
                raise ValueError("module name %r is not a layer name of ampscope's "
                                 "([A-Za-z0-9_.-], at most 63 characters)" % name)
            self._layers.append((name, m, ps))
        if not self._layers:
            raise ValueError("the model has no parameters")
        params = list({id(p): p for _, _, ps in self._layers for p in ps}.values())  # tied once
        self.device = params[0].device
        self._sgd = isinstance(optimizer, torch.optim.SGD)
        self._lock = rundir.open_run_dir(out, overwrite)
        try:
            self._logs = {n: rundir.Log(out, n) for n in rundir.HEADERS}
            self._scale = self._scaler_scale()  # the scale the next step uses
            self._live = {}  # (layer, kind) -> counts.Stats of this step's hooks
            self._hooks = []
            for name, m, _ in self._layers:
                self._hooks.append(m.register_forward_hook(self._forward_hook(name)))
            self._prev = self._snapshot() if self._sgd else None
            self._start = time.time()
            self._run = self._describe(params)
            self._write_run_json(ended=False)
        except BaseException:
            self._release()
            raise

    # ---- the scaler --------------------------------------------------------------------------
    def _scaler_on(self):
        s = self.scaler
        return s is not None and (not hasattr(s, "is_enabled") or s.is_enabled())

    def _scaler_scale(self):
        """The scaler's scale now, as an fp32 value (1 without a scaler).  Read
        with get_scale(), public in torch 1.13 and 2.x (the init scale before
        the first step), else its _scale tensor."""
        if not self._scaler_on():
            return 1.0
        s = self.scaler
        if hasattr(s, "get_scale"):
            return _fp32(s.get_scale())
        return _fp32(s._scale.item() if s._scale is not None else s._init_scale)

    # ---- hooks ---------------------------------------------------------------------------------
    def _stats_step(self):
        return self._step % self.every == 0 or self._step % self.hist_every == 0

    def _stats_of(self, layer, kind):
        key = (layer, kind)
        if key not in self._live:
            self._live[key] = C.Stats(self.device)
        return self._live[key]

    def _forward_hook(self, layer):
        def hook(module, inputs, output):
            # a training forward of a step whose statistics are taken
            if (not torch.is_grad_enabled() or not module.training or not self._stats_step()
                    or self._closed):
                return
            outs = output if isinstance(output, (tuple, list)) else (output,)
            for o in outs:
                if not isinstance(o, torch.Tensor) or not o.is_floating_point():
                    continue
                if self.activations:
                    C.accumulate(self._stats_of(layer, "activation"), o, self.target, 1.0)
                if o.requires_grad:
                    o.register_hook(self._grad_hook(layer))
        return hook

    def _grad_hook(self, layer):
        def hook(g):
            # the stored (scaled) gradient, divided by the scale in float64:
            # exact for a power-of-two scale, and its fate at scale S is the
            # stored value's own
            s = self._scale
            x = g.detach().to(torch.float64) / s if s not in (0.0, 1.0) and math.isfinite(s) \
                else g.detach()
            C.accumulate(self._stats_of(layer, "activation_grad"), x, self.target, s)
        return hook

    # ---- the step ------------------------------------------------------------------------------
    def step(self, loss, epoch=None, lr=None):
        """Records the step just done: call it after backward, the optimizer's
        step and scaler.update()."""
        if self._closed:
            raise RuntimeError("the Recorder is closed")
        step = self._step
        if epoch is not None:
            self._epoch = int(epoch)
        used = self._scale
        new = self._scaler_scale()
        grads = [(name, [p.grad for p in ps if p.grad is not None]) for name, _, ps in self._layers]
        if self._scaler_on():
            found_inf = new < used  # GradScaler lowers its scale only on found-inf
            skipped = found_inf  # ... and then skips the optimizer's step
        else:
            found_inf = any(not bool(torch.isfinite(g).all()) for _, gs in grads for g in gs)
            skipped = False
        loss_value = float(loss.detach().float()) if isinstance(loss, torch.Tensor) else float(loss)
        if lr is None:
            lr = self.optimizer.param_groups[0]["lr"] if self.optimizer is not None else float("nan")
        L = self._logs
        L["steps.csv"].row(step, self._epoch, rundir.f32(_fp32(loss_value)), rundir.f32(used),
                           int(found_inf), int(skipped), rundir.f32(_fp32(lr)))
        if self.trace:
            self._write_trace(step, used, found_inf, grads)
        stats = step % self.every == 0
        hist = step % self.hist_every == 0
        if stats or hist:
            self._write_stats(step, used, grads, stats, hist)
        if self._sgd and stats:
            self._write_updates(step, bool(skipped))
        if self._sgd and (step + 1) % self.every == 0:
            self._prev = self._snapshot()
        for log in L.values():
            log.flush()
        self._live = {}
        self._scale = new
        self._step = step + 1

    def _write_trace(self, step, scale, found_inf, grads):
        st = C.Stats(self.device)
        for _, gs in grads:
            for g in gs:
                stored = (g.detach().reshape(-1).to(torch.float64) * scale).to(torch.float32)
                C.accumulate(st, stored, self.target, 1.0, classify=False)
        c, amax, h = st.host()
        self._logs["trace.csv"].row(step, rundir.f64(scale), int(found_inf), c[C.COUNT],
                                    c[C.ZERO], c[C.NONFINITE], rundir.f64(amax))
        for i, n in enumerate(h):
            if n:
                self._logs["trace_hist.csv"].row(step, C.bin_label(i), n)

    def _write_stats(self, step, scale, grads, want_stats, want_hist):
        for (name, _, ps), (_, gs) in zip(self._layers, grads):
            w = C.Stats(self.device)
            for p in ps:
                C.accumulate(w, p, self.target, 1.0)
            self._live[(name, "weight")] = w
            if gs:
                wg = C.Stats(self.device)
                for g in gs:
                    C.accumulate(wg, g, self.target, scale)
                self._live[(name, "weight_grad")] = wg
        keys = [(name, kind) for name, _, _ in self._layers for kind in KINDS
                if (name, kind) in self._live]
        # one copy to the host for the whole step
        stats = [self._live[k] for k in keys]
        counts = torch.stack([st.counts for st in stats]).tolist()
        amaxes = torch.stack([st.amax for st in stats]).tolist()
        hists = torch.stack([st.hist for st in stats]).tolist()
        for (name, kind), c, amax, h in zip(keys, counts, amaxes, hists):
            kind_scale = scale if kind.endswith("_grad") else 1.0
            if want_stats:
                nz = c[C.NONZERO]
                self._logs["tensors.csv"].row(
                    step, name, kind, self.target, rundir.f32(kind_scale), c[C.COUNT], nz,
                    c[C.NONFINITE], c[C.FLUSHED], rundir.frac(c[C.FLUSHED], nz),
                    c[C.SUBNORMAL], rundir.frac(c[C.SUBNORMAL], nz), c[C.OVERFLOWED],
                    rundir.frac(c[C.OVERFLOWED], nz), rundir.frac(c[C.ZERO], c[C.COUNT]),
                    rundir.f64(amax))
            if want_hist:
                for i, n in enumerate(h):
                    if n:
                        self._logs["hist.csv"].row(step, name, kind, C.bin_label(i), n)

    # ---- lost updates (torch.optim.SGD) -------------------------------------------------------
    def _snapshot(self):
        return {id(p): p.detach().clone() for _, _, ps in self._layers for p in ps}

    def _intended(self, p, old, group):
        """SGD's update of p this step (torch/optim/sgd.py), in float64."""
        g = p.grad.detach().to(torch.float64)
        if group.get("maximize", False):
            g = -g
        wd, mom = group.get("weight_decay", 0), group.get("momentum", 0)
        if wd:
            g = g + wd * old.to(torch.float64)
        if mom:
            buf = self.optimizer.state.get(p, {}).get("momentum_buffer")
            if buf is not None:
                b = buf.detach().to(torch.float64)
                g = g + mom * b if group.get("nesterov", False) else b
        return -group["lr"] * g

    def _write_updates(self, step, skipped):
        groups = {id(p): g for g in self.optimizer.param_groups for p in g["params"]}
        for name, _, ps in self._layers:
            n = nonzero = lost = predicted = 0
            err = total = 0.0
            for p in ps:
                if skipped or p.grad is None or id(p) not in groups:
                    continue
                old = self._prev[id(p)]
                intended = self._intended(p, old, groups[id(p)])
                o64, n64 = old.to(torch.float64), p.detach().to(torch.float64)
                ok = torch.isfinite(o64) & torch.isfinite(n64) & torch.isfinite(intended)
                nz = ok & (intended != 0)
                bits = {torch.float16: 11, torch.bfloat16: 8}.get(p.dtype, 24)
                n += p.numel()
                nonzero += int(nz.sum())
                lost += int((nz & (n64 == o64)).sum())
                predicted += int((nz & (o64.abs() >= 2.0 ** bits * intended.abs())).sum())
                err += float(torch.where(ok, (n64 - o64 - intended).abs(),
                                         torch.zeros_like(o64)).sum())
                total += float(torch.where(ok, intended.abs(), torch.zeros_like(o64)).sum())
            self._logs["updates.csv"].row(step, name, n, nonzero, lost,
                                          rundir.frac(lost, nonzero), rundir.frac(err, total),
                                          predicted, rundir.frac(predicted, nonzero),
                                          int(skipped))

    # ---- evaluation, run.json, the end ---------------------------------------------------------
    def eval(self, test_loss, test_accuracy, epoch=None):
        """One row of eval.csv: after the steps recorded so far."""
        if epoch is not None:
            self._epoch = int(epoch)
        log = self._logs["eval.csv"]
        log.row(self._epoch, max(self._step - 1, 0), rundir.f64(float(test_loss)),
                rundir.f64(float(test_accuracy)))
        log.flush()

    def _describe(self, params):
        dev = self.device
        if dev.type == "cuda":
            device = torch.cuda.get_device_name(dev)
        else:
            device = platform.processor() or platform.machine() or "cpu"
        scaler = type(self.scaler).__name__ if self.scaler is not None else "none"
        opts = {
            "recorder": rundir.RECORDER,
            "framework": "pytorch",
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "device": str(dev),
            "model": type(self.model).__name__,
            "parameters": int(sum(p.numel() for p in params)),
            "net": type(self.model).__name__,
            "mode": "pytorch",
            "dtype": self.target,
            "stats_dtype": self.target,
            "scaler": scaler if self._scaler_on() else scaler + " (disabled)",
            "stats-every": self.every,
            "hist-every": self.hist_every,
            "trace-every": 1 if self.trace else 0,
            "trace_of": "weight gradients, as stored: fp32(g * S)",
            "activations": "recorded" if self.activations else "not recorded",
            "updates": ("torch.optim.SGD: intended -lr * d, applied new - old"
                        if self._sgd else "not recorded (only torch.optim.SGD's are)"),
            "out": self.out,
        }
        if self.optimizer is not None:
            opts["optimizer"] = type(self.optimizer).__name__
        if self._scaler_on():
            opts["loss-scale"] = "dynamic"
        return {"record_version": 1, "ampscope_version": "ampscope_torch " + _version(),
                "git_revision": "", "backend": "pytorch " + dev.type, "device": device,
                "start_time": _utc(self._start), "end_time": None,
                "given": [], "resumes": [], "options": opts}

    def _write_run_json(self, ended):
        if ended:
            self._run["end_time"] = _utc(time.time())
            self._run["options"]["steps"] = self._step
        rundir.write_json(os.path.join(self.out, "run.json"), self._run)

    def _release(self):
        for h in getattr(self, "_hooks", []):
            h.remove()
        for log in getattr(self, "_logs", {}).values():
            log.close()
        if getattr(self, "_lock", None) is not None:
            os.close(self._lock)
            self._lock = None

    def close(self):
        """Ends the record: run.json gets its end time, the logs are synced,
        the hooks removed and the lock released."""
        if self._closed:
            return
        self._closed = True
        try:
            for log in self._logs.values():
                log.sync()
            self._write_run_json(ended=True)
        finally:
            self._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _version():
    from . import __version__
    return __version__
