"""torch_bench_nets.py: what bench/torch_bench.py builds and asks of the machine: the nets
(tests/peer/peer_nets.py's modules at `ampscope bench train`'s sizes), their data, the
optimizers in each implementation (for-loop, foreach, fused), and what this torch and device
can do (Caps).  A benchmark helper, not part of ampscope."""
import os
import sys

N_BATCHES = 16  # distinct batches resident on the device, cycled through by every variant

class Unavailable(Exception):
    """This variant cannot run with this torch on this device (not an error)."""


# ---- the nets ------------------------------------------------------------------------
def import_peer_nets():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests", "peer"))
    import peer_nets  # noqa: E402 - tests/peer/peer_nets.py
    return peer_nets


def net_sizes(a, net):
    """(batch, size options) as `ampscope bench train --net NET` defaults them."""
    if a.tiny:
        tiny = {"simplenet": (8, dict(width=64, depth=3)),
                "resnet": (4, dict(width=4, depth=1)),
                "transformer": (4, dict(width=16, depth=1, heads=2, context=8))}
        batch, size = tiny[net]
    else:
        defaults = {"simplenet": (512, dict(width=4096, depth=3)),
                    "resnet": (64, dict(width=16, depth=1)),
                    "transformer": (64, dict(width=64, depth=2, heads=4, context=64))}
        batch, size = defaults[net]
    batch = a.batch or batch
    for k in ("width", "depth", "heads", "context"):
        if getattr(a, k) and k in size:
            size[k] = getattr(a, k)
    return batch, size


def build_net(torch, peer_nets, net, size, attention):
    torch.manual_seed(1)
    model = peer_nets.build(net, **size)
    if net == "transformer" and attention == "sdpa" and hasattr(torch.nn.functional,
                                                                "scaled_dot_product_attention"):
        sdpa = sdpa_attention(torch, peer_nets)
        for block in model.h:
            block.attn.__class__ = sdpa  # the same parameters, the fused attention kernels
    return model


def sdpa_attention(torch, peer_nets):
    """peer_nets.Attention's function through F.scaled_dot_product_attention."""
    F = torch.nn.functional

    class SdpaAttention(peer_nets.Attention):
        def forward(self, x):
            b, t, c = x.shape
            d = c // self.heads
            q, k, v = (z.view(b, t, self.heads, d).transpose(1, 2)
                       for z in self.c_attn(x).split(c, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(b, t, c))
    return SdpaAttention


def make_data(torch, net, batch, size, dev):
    """N_BATCHES batches resident on dev: inputs, targets."""
    g = torch.Generator().manual_seed(1)
    if net == "simplenet":
        w = size["width"]
        xs = torch.randn(N_BATCHES, batch, w, generator=g)
        ys = torch.randn(N_BATCHES, batch, w, generator=g)
    elif net == "resnet":
        xs = torch.randn(N_BATCHES, batch, 1, 28, 28, generator=g)
        ys = torch.randint(0, 10, (N_BATCHES, batch), generator=g)
    else:
        t = size["context"]
        seq = torch.randint(0, 98, (N_BATCHES, batch, t + 1), generator=g)
        xs, ys = seq[..., :-1].contiguous(), seq[..., 1:].contiguous()
    return xs.to(dev), ys.to(dev)


def optimizer_args(net):
    if net == "transformer":
        return "AdamW", dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    return "SGD", dict(lr=1e-4 if net == "simplenet" else 0.01)


def make_optimizer(torch, net, params, impl, capturable=False):
    """impl: default, forloop, foreach, fused."""
    name, kw = optimizer_args(net)
    cls = getattr(torch.optim, name)
    if impl == "forloop":
        kw["foreach"] = False
    elif impl == "foreach":
        kw["foreach"] = True
    elif impl == "fused":
        kw["fused"] = True
    if capturable and name != "SGD":  # AdamW's step count on the device (fused too: its
        kw["capturable"] = True           # step() refuses capture unless capturable)
    try:
        return cls(params, **kw)
    except (TypeError, RuntimeError, ValueError) as e:
        how = ", ".join(f"{k}={v}" for k, v in kw.items()
                        if k in ("foreach", "fused", "capturable"))
        raise Unavailable(f"{name}({how}): {one_line(e)}")


def one_line(e):
    s = str(e).strip().split("\n")[0]
    return (type(e).__name__ + ": " + s)[:200]


# ---- what this torch and device can do ----------------------------------------------
class Caps:
    def __init__(self, torch, dev):
        self.torch, self.dev = torch, dev
        self.cuda = dev.type == "cuda"
        self.has_compile = hasattr(torch, "compile")
        self.compile_why = None if self.has_compile else \
            f"torch {torch.__version__} has no torch.compile"
        if self.has_compile:
            try:
                import triton  # noqa: F401
            except Exception as e:  # noqa: BLE001
                if self.cuda:
                    self.has_compile = False
                    self.compile_why = f"no triton for inductor on cuda: {one_line(e)}"
        self._dtype_ok = {}

    def scaler(self):
        t = self.torch
        if hasattr(t, "amp") and hasattr(t.amp, "GradScaler"):
            try:
                return t.amp.GradScaler(self.dev.type)
            except Exception as e:  # noqa: BLE001
                raise Unavailable(f"torch.amp.GradScaler('{self.dev.type}'): {one_line(e)}")
        if not self.cuda:
            raise Unavailable(f"torch {t.__version__}'s GradScaler is CUDA-only")
        return t.cuda.amp.GradScaler()

    def autocast_ok(self, dtype_name):
        """Whether autocast on this device runs a matmul in dtype (torch 1.13's cpu
        autocast takes bf16 only)."""
        key = ("autocast", dtype_name)
        if key not in self._dtype_ok:
            t = self.torch
            dt = getattr(t, dtype_name)
            try:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with t.autocast(self.dev.type, dtype=dt):
                        y = t.nn.functional.linear(t.ones(2, 2, device=self.dev),
                                                   t.ones(2, 2, device=self.dev))
                self._dtype_ok[key] = None if y.dtype == dt else (
                    f"autocast on {self.dev.type} does not run {dtype_name} "
                    f"in torch {t.__version__}")
            except Exception as e:  # noqa: BLE001
                self._dtype_ok[key] = f"autocast {dtype_name} on {self.dev.type}: {one_line(e)}"
        return self._dtype_ok[key]

    def half_ok(self, dtype_name):
        """Whether a matmul in dtype runs on this device (O2-like models)."""
        key = ("half", dtype_name)
        if key not in self._dtype_ok:
            t = self.torch
            dt = getattr(t, dtype_name)
            try:
                a = t.ones(2, 2, device=self.dev, dtype=dt)
                t.nn.functional.linear(a, a, a[0])
                self._dtype_ok[key] = None
            except Exception as e:  # noqa: BLE001
                self._dtype_ok[key] = f"{dtype_name} matmul on {self.dev.type}: {one_line(e)}"
        return self._dtype_ok[key]
