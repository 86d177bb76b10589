#!/usr/bin/env python3
"""torch_bench.py: the PyTorch BASELINE for issue 18's training-speed comparison.

Not part of ampscope.  It times, in PyTorch, the nets and the step that
`ampscope bench train --net NET --backend cuda` times, in every way a
PyTorch user who cares about speed would run them, so that ampscope is
compared with the fastest of them and not with a straw man.

The nets (tests/peer/peer_nets.py, the same modules the peer tests hold
ampscope's gradients to; sizes and batches are `ampscope bench train`'s
defaults, app/bench_train.c and experiments/nets*.c):

  simplenet    3 x Linear(4096, 4096) with bias, ReLU between, MSE against
               Gaussian targets, batch 512, SGD lr 1e-4
  resnet       ResNet-8 (width 16, one BasicBlock a stage) on 1 x 28 x 28
               inputs, cross-entropy over 10 classes, batch 64, SGD lr 0.01
  transformer  GPT (width 64, 2 blocks, 4 heads, context 64, 98 tokens),
               next-token cross-entropy, batch 64, AdamW lr 1e-3 betas
               (0.9, 0.999) eps 1e-8 weight decay 0; attention through
               F.scaled_dot_product_attention(is_causal=True) where torch
               has it (--attention manual: peer_nets.py's masked softmax)

The data are Gaussian inputs (integer labels and tokens for the other two),
16 distinct batches resident on the device, cycled through as ampscope's
bench does; nothing is copied from the host inside the timed loop.

Modes (mode and dtype columns as ampscope names them):
  fp32      O0 fp32   fp32, TF32 off
  tf32      O0 tf32   fp32 with TF32 matmuls and convolutions
  amp-fp16  O1 fp16   torch.autocast(float16) + GradScaler
  amp-bf16  O1 bf16   torch.autocast(bfloat16), no scaler
  o2-fp16   O2 fp16   "O2-like" (Apex O2 without Apex): the model in fp16
                      (BatchNorm kept fp32), fp32 master weights the
                      optimizer updates, fp16 gradients cast to fp32, the
                      loss in fp32 and scaled by a GradScaler, the masters
                      copied back to the model after the update
  o2-bf16   O2 bf16   the same in bf16, no scaler

Variants (each a fresh model, seed 1):
  eager              the optimizer as constructed by default (foreach on
                     CUDA where torch picks it)
  eager-forloop      foreach=False: one kernel per tensor per operation
  eager-foreach      foreach=True: multi-tensor kernels
  eager-fused        fused=True: one fused kernel (GradScaler's found_inf
                     and scale go into it, so its step does not sync)
  compile-model      torch.compile(model), the best eager optimizer
  compile-step       torch.compile of the whole training step (zero_grad,
                     forward, loss, backward, scaler, optimizer step);
                     backward is a graph break unless compiled autograd
  compile-step-ca    the same with compiled autograd
                     (torch._dynamo.config.compiled_autograd): backward
                     traced into the compiled step
  compile-step-max-autotune      mode="max-autotune" (Triton GEMM
                     autotuning and CUDA graphs)
  compile-step-reduce-overhead   mode="reduce-overhead" (CUDA graphs)
  cuda-graph         the whole step captured once by hand
                     (torch.cuda.graph, static input buffers the batch is
                     copied into) and replayed; with GradScaler only when
                     the optimizer is fused: otherwise GradScaler.step
                     reads found_inf on the host, which capture forbids

compile-model uses the fused optimizer where it works, else foreach;
compile-step* use foreach (inductor compiles the foreach step into its own
fused kernels) and, with GradScaler, the fused optimizer where it works
(else GradScaler.step's host read is a graph break and a sync).

A variant that cannot run here (no torch.compile, no CUDA, no fused
optimizer, no fp16 on this device...) is a row with its reason; one that
raises is a row with the error.  Timing: after --warmup steps (which hold
the compilation), --repeats repetitions of --steps steps between CUDA
events (on the cpu, the host clock); ms_per_step is the median, min_ms the
least; host_ms is how long the host took to enqueue the steps (close to
ms_per_step: the host is the bottleneck).  The fastest variant of each
(net, dtype) is marked.  --csv FILE writes the rows as CSV ('-': standard
output); bench/gpu/perf_table.py merges them with ampscope's rows.

  python3 bench/torch_bench.py                        # every net, mode, variant on cuda
  python3 bench/torch_bench.py --device cpu --tiny --steps 3 --strict   # the smoke test
"""
import argparse
import contextlib
import math
import os
import re
import statistics
import sys
import time
import traceback

from torch_bench_nets import (N_BATCHES, Caps, Unavailable, build_net, import_peer_nets,
                              make_data, make_optimizer, net_sizes, one_line, optimizer_args)

NETS = ("simplenet", "resnet", "transformer")
MODES = {  # name: (ampscope mode, dtype, autocast dtype, O2-like, scaler)
    "fp32": ("O0", "fp32", None, False, False),
    "tf32": ("O0", "tf32", None, False, False),
    "amp-fp16": ("O1", "fp16", "float16", False, True),
    "amp-bf16": ("O1", "bf16", "bfloat16", False, False),
    "o2-fp16": ("O2", "fp16", "float16", True, True),
    "o2-bf16": ("O2", "bf16", "bfloat16", True, False),
}
VARIANTS = ("eager", "eager-forloop", "eager-foreach", "eager-fused", "compile-model",
            "compile-step", "compile-step-ca", "compile-step-max-autotune",
            "compile-step-reduce-overhead", "cuda-graph")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--nets", default=",".join(NETS), help="default: " + ",".join(NETS))
    p.add_argument("--modes", default=",".join(MODES), help="default: " + ",".join(MODES))
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="default: all (" + ",".join(VARIANTS) + ")")
    p.add_argument("--steps", type=int, default=100, help="timed steps per repetition")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (compilation)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=0,
                   help="0: the net's (512, 64, 64); a size given applies to every net")
    p.add_argument("--width", type=int, default=0, help="0: the net's (4096, 16, 64)")
    p.add_argument("--depth", type=int, default=0, help="0: the net's (3, 1, 2)")
    p.add_argument("--heads", type=int, default=0, help="transformer (0: 4)")
    p.add_argument("--context", type=int, default=0, help="transformer (0: 64)")
    p.add_argument("--attention", choices=("sdpa", "manual"), default="sdpa")
    p.add_argument("--channels-last", action="store_true",
                   help="resnet: channels_last memory format (model and inputs)")
    p.add_argument("--tiny", action="store_true",
                   help="tiny sizes for a smoke test (every code path, rough times)")
    p.add_argument("--budget-s", type=float, default=0,
                   help="stop starting variants after this many seconds (0: no limit); "
                        "the rest are rows 'skipped: time budget'")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV ('-': stdout)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if a variant that is available here failed (the smoke test)")
    a = p.parse_args(argv)
    for name in ("steps", "warmup", "repeats"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    a.nets = [n.strip() for n in a.nets.split(",") if n.strip()]
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    a.variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    for kind, given, known in (("net", a.nets, NETS), ("mode", a.modes, MODES),
                               ("variant", a.variants, VARIANTS)):
        for g in given:
            if g not in known:
                p.error(f"unknown {kind} '{g}' (expected {', '.join(known)})")
    return a


def short_device(name):
    """'NVIDIA H100 80GB HBM3' -> 'H100' (the docs' device column)."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name)
    return m.group(1) if m else name


# ---- one variant ---------------------------------------------------------------------
class Setup:
    """A model, its optimizer, scaler and step for one (net, mode, variant)."""

    def __init__(self, torch, caps, a, peer_nets, net, mode, variant, data):
        self.torch, self.caps, self.net, self.mode, self.variant = torch, caps, net, mode, variant
        dev = caps.dev
        _, _, ac_name, o2, scaled = MODES[mode]
        self.o2 = o2
        self.batch, size = net_sizes(a, net)
        self.xs, self.ys = data
        tf32 = mode == "tf32"
        if tf32 and not caps.cuda:
            raise Unavailable("TF32 is a CUDA setting (on the cpu this is the fp32 row)")
        if caps.cuda:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest convolutions
        if ac_name and not o2:
            why = caps.autocast_ok(ac_name)
            if why:
                raise Unavailable(why)
        if o2:
            why = caps.half_ok(ac_name)
            if why:
                raise Unavailable(why)
        self.ac_dtype = getattr(torch, ac_name) if ac_name else None
        self.scaler = caps.scaler() if scaled else None
        model = build_net(torch, peer_nets, net, size, a.attention).to(dev)
        self.channels_last = a.channels_last and net == "resnet"
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
            self.xs = [x.contiguous(memory_format=torch.channels_last) for x in self.xs]
        model.train()
        self.model = model
        self.loss_of = model.loss
        # the optimizer's implementation
        self.notes = []
        compiled = variant.startswith("compile")
        graphed = variant == "cuda-graph"
        if variant in ("compile-model",) or graphed:
            impl = self.best_impl()
        elif variant.startswith("compile-step"):
            impl = self.best_impl() if self.scaler is not None else "foreach"
        else:
            impl = {"eager": "default", "eager-forloop": "forloop", "eager-foreach": "foreach",
                    "eager-fused": "fused"}[variant]
        if o2:
            model.to(self.ac_dtype)
            for m in model.modules():  # Apex O2's keep_batchnorm_fp32
                if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                    m.float()
            self.params = [p for p in model.parameters()]
            self.masters = [torch.nn.Parameter(p.detach().float().clone()) for p in self.params]
            opt_params = self.masters
        else:
            self.params = self.masters = list(model.parameters())
            opt_params = self.params
        try:
            self.opt = make_optimizer(torch, net, opt_params, impl, capturable=graphed)
        except Unavailable:
            if not graphed or impl != "fused":
                raise
            impl = "foreach"  # fused and capturable together refused: foreach, capturable
            self.opt = make_optimizer(torch, net, opt_params, impl, capturable=True)
        self.impl = impl
        if graphed and self.scaler is not None and not getattr(
                self.opt, "_step_supports_amp_scaling", False):
            raise Unavailable("GradScaler.step reads found_inf on the host (a sync, which CUDA "
                              "graph capture forbids) unless the optimizer is fused, and "
                              f"fused {type(self.opt).__name__} is not available here")
        self.fwd = model
        if compiled and not caps.has_compile:
            raise Unavailable(caps.compile_why)
        if variant == "compile-model":
            self.fwd = torch.compile(model)
        if graphed and not caps.cuda:
            raise Unavailable("CUDA graphs need a CUDA device")
        self.copy_back = getattr(torch, "_foreach_copy_", None)

    def best_impl(self):
        """fused where this torch has it for this optimizer on this device, else foreach."""
        name, kw = optimizer_args(self.net)
        try:
            p = self.torch.nn.Parameter(self.torch.zeros(4, device=self.caps.dev))
            p.grad = self.torch.zeros(4, device=self.caps.dev)
            o = getattr(self.torch.optim, name)([p], fused=True, **kw)
            o.step()
            return "fused"
        except Exception:  # noqa: BLE001
            return "foreach"

    def autocast(self, cache=True):
        if self.ac_dtype is None or self.o2:
            return contextlib.nullcontext()
        return self.torch.autocast(self.caps.dev.type, dtype=self.ac_dtype, cache_enabled=cache)

    def body(self, x, y, zero=True, cache=True):
        """One training step on (x, y); returns the loss."""
        torch = self.torch
        if zero:
            self.opt.zero_grad(set_to_none=True)
            if self.o2:
                for p in self.params:
                    p.grad = None
        with self.autocast(cache):
            if self.o2:
                out = self.fwd(x.to(self.ac_dtype) if x.is_floating_point() else x)
                loss = self.loss_of(out.float(), y)
            else:
                loss = self.loss_of(self.fwd(x), y)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        if self.o2:
            for m, p in zip(self.masters, self.params):
                m.grad = p.grad.float()
        if self.scaler is not None:
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        if self.o2:
            with torch.no_grad():
                if self.copy_back is not None:
                    self.copy_back(self.params, self.masters)
                else:
                    for p, m in zip(self.params, self.masters):
                        p.copy_(m)
        return loss

    def prepare(self):
        """Returns run(k): one step on batch k."""
        torch, v = self.torch, self.variant
        if v.startswith("compile-step"):
            import torch._dynamo as dynamo
            kw = {}
            if v.endswith("max-autotune"):
                kw["mode"] = "max-autotune"
            elif v.endswith("reduce-overhead"):
                kw["mode"] = "reduce-overhead"
            if v == "compile-step-ca":
                if not hasattr(dynamo.config, "compiled_autograd"):
                    raise Unavailable(f"torch {torch.__version__} has no "
                                      "torch._dynamo.config.compiled_autograd")
                dynamo.config.compiled_autograd = True
            step = torch.compile(self.body, **kw)
            mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
            use_mark = "mode" in kw and mark is not None

            def run(k):
                if use_mark:
                    mark()
                return step(self.xs[k], self.ys[k])
            return run
        if v == "cuda-graph":
            return self.capture()
        return lambda k: self.body(self.xs[k], self.ys[k])

    def capture(self):
        """The PyTorch docs' whole-network capture: warm up on a side stream, then
        capture one step with .grad set to None (backward allocates the gradients
        in the graph's pool and writes them afresh at every replay)."""
        torch = self.torch
        sx, sy = self.xs[0].clone(), self.ys[0].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.body(sx, sy, cache=False)
        torch.cuda.current_stream().wait_stream(s)
        self.opt.zero_grad(set_to_none=True)
        for p in self.params:
            p.grad = None
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.static_loss = self.body(sx, sy, zero=False, cache=False)
        self.graph = g

        def run(k):
            sx.copy_(self.xs[k], non_blocking=True)
            sy.copy_(self.ys[k], non_blocking=True)
            g.replay()
            return self.static_loss
        return run


def time_variant(torch, caps, a, st):
    run = st.prepare()
    sync = torch.cuda.synchronize if caps.cuda else (lambda: None)
    t0 = time.perf_counter()
    loss = None
    for i in range(a.warmup):
        loss = run(i % N_BATCHES)
    sync()
    warm_s = time.perf_counter() - t0
    times, host = [], []
    for _ in range(a.repeats):
        if caps.cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        h0 = time.perf_counter()
        for i in range(a.steps):
            loss = run(i % N_BATCHES)
        h1 = time.perf_counter()
        if caps.cuda:
            e1.record()
        sync()
        h2 = time.perf_counter()
        times.append(e0.elapsed_time(e1) / a.steps if caps.cuda else (h2 - h0) * 1e3 / a.steps)
        host.append((h1 - h0) * 1e3 / a.steps)
    final = float(loss.detach().float().item())
    if not math.isfinite(final):
        raise RuntimeError(f"the final loss is {final}")
    return statistics.median(times), min(times), statistics.median(host), warm_s, final


def dynamo_counts(torch):
    try:
        from torch._dynamo.utils import counters
        breaks = sum(counters["graph_break"].values())
        graphs = counters["stats"].get("unique_graphs", 0)
        return f"{graphs} graphs, {breaks} graph breaks"
    except Exception:  # noqa: BLE001
        return ""


def reset_dynamo(torch):
    if not hasattr(torch, "_dynamo"):
        return
    try:
        import torch._dynamo as dynamo
        dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        if hasattr(dynamo.config, "compiled_autograd"):
            dynamo.config.compiled_autograd = False
    except Exception:  # noqa: BLE001
        pass


# ---- output -------------------------------------------------------------------------
COLUMNS = ("device", "net", "mode", "dtype", "variant", "ms_per_step", "min_ms", "host_ms",
           "fastest", "status", "optimizer", "batch", "steps", "repeats", "torch",
           "device_name", "note")


def mark_fastest(rows):
    best = {}
    for r in rows:
        if r["status"] == "ok":
            key = (r["net"], r["dtype"])
            if key not in best or r["ms"] < best[key]["ms"]:
                best[key] = r
    for r in best.values():
        r["fastest"] = True


def print_table(rows, out):
    print("device net         mode dtype variant                       ms_per_step    min_ms "
          "  host_ms  note", file=out)
    for r in rows:
        if r["status"] == "ok":
            t = f"{r['ms']:11.4f} {r['min']:9.4f} {r['host']:9.4f}"
        else:
            t = f"{'-':>11} {'-':>9} {'-':>9}"
        star = "*" if r["fastest"] else " "
        note = r["note"] if r["status"] == "ok" else f"{r['status']}: {r['note']}"
        print(f"{r['device']:<6} {r['net']:<11} {r['mode']:<4} {r['dtype']:<5} "
              f"{r['variant'] + star:<29} {t}  {note}", file=out)
    print("* the fastest variant of its (net, dtype); ms_per_step: median over the repetitions",
          file=out)


def job_order(a):
    """(net, mode, variant) in the order they run: every eager and CUDA-graph
    variant first (cheap), then the compiled ones, autocast modes first and the
    variants that matter most first, so that a --budget-s that runs out leaves
    the least useful rows out."""
    compile_rank = ("compile-step-reduce-overhead", "compile-model", "compile-step",
                    "compile-step-max-autotune", "compile-step-ca")
    jobs = []
    for ni, net in enumerate(a.nets):
        for mi, mode in enumerate(a.modes):
            for vi, v in enumerate(a.variants):
                if not v.startswith("compile"):
                    key = (0, ni, mi, vi)
                else:
                    group = 1 if mode.startswith("amp-") else 2
                    key = (group, compile_rank.index(v), mi, ni)
                jobs.append((key, (net, mode, v)))
    return [j for _, j in sorted(jobs)]


def run_one(torch, caps, a, peer_nets, r, net, mode, variant, data):
    reset_dynamo(torch)
    st = None
    try:
        st = Setup(torch, caps, a, peer_nets, net, mode, variant, data)
        r["optimizer"] = f"{type(st.opt).__name__} {st.impl}"
        ms, mn, host, warm_s, final = time_variant(torch, caps, a, st)
        r.update(ms=ms, min=mn, host=host)
        notes = [f"loss {final:.5g}", f"warm-up {warm_s:.1f} s"]
        if variant.startswith("compile"):
            notes.append(dynamo_counts(torch))
        r["note"] = "; ".join(n for n in notes if n)
    except Unavailable as e:
        r["status"], r["note"] = "unavailable", str(e)
    except Exception as e:  # noqa: BLE001 - a variant that fails is a row
        r["status"], r["note"] = "failed", one_line(e)
        if os.environ.get("TORCH_BENCH_TRACEBACK"):
            traceback.print_exc()
    finally:
        del st
        reset_dynamo(torch)
        if caps.cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()


def open_csv(path):
    if not path:
        return None
    import csv
    f = sys.stdout if path == "-" else open(path, "w", newline="")
    csv.writer(f).writerow(COLUMNS)
    f.flush()
    return f


def csv_cells(r):
    ok = r["status"] == "ok"
    return [r["device"], r["net"], r["mode"], r["dtype"], r["variant"],
            f"{r['ms']:.6g}" if ok else "", f"{r['min']:.6g}" if ok else "",
            f"{r['host']:.6g}" if ok else "", "yes" if r["fastest"] else "",
            r["status"], r["optimizer"], r["batch"], r["steps"], r["repeats"],
            r["torch"], r["device_name"], r["note"]]


def write_row(f, r):
    import csv
    csv.writer(f).writerow(csv_cells(r))
    f.flush()


def write_csv(rows, path):
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow(csv_cells(r))


def main(argv=None):
    a = parse_args(argv)
    if a.tiny and a.warmup == 10:
        a.warmup = 2
    if a.tiny and a.repeats == 5:
        a.repeats = 2
    try:
        import torch
    except ImportError:
        print("torch_bench.py: PyTorch is not installed", file=sys.stderr)
        return 77
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("torch_bench.py: no CUDA device (--device cpu for the smoke test)", file=sys.stderr)
        return 77
    peer_nets = import_peer_nets()
    caps = Caps(torch, dev)
    device_name = torch.cuda.get_device_name(dev) if caps.cuda else "cpu"
    device = short_device(device_name) if caps.cuda else "cpu"
    print(f"torch_bench.py: PyTorch {torch.__version__} on {device_name}; "
          f"{a.repeats} x {a.steps} steps after {a.warmup} warm-up steps"
          f"{' (tiny sizes)' if a.tiny else ''}", flush=True)
    rows = []
    data = {}
    for net in a.nets:
        batch, size = net_sizes(a, net)
        data[net] = make_data(torch, net, batch, size, dev)
        print(f"  {net}: batch {batch}, {size}, optimizer {optimizer_args(net)[0]}", flush=True)
    csv_out = open_csv(a.csv)
    start = time.perf_counter()
    for net, mode, variant in job_order(a):
        batch, _ = net_sizes(a, net)
        amp_mode, dtype = MODES[mode][:2]
        r = dict(device=device, net=net, mode=amp_mode, dtype=dtype, variant=variant,
                 ms=None, min=None, host=None, fastest=False, status="ok", optimizer="",
                 batch=batch, steps=a.steps, repeats=a.repeats, torch=torch.__version__,
                 device_name=device_name, note="", order=(a.nets.index(net),
                                                          a.modes.index(mode),
                                                          a.variants.index(variant)))
        rows.append(r)
        if a.budget_s and time.perf_counter() - start > a.budget_s:
            r["status"], r["note"] = "skipped", f"time budget ({a.budget_s:g} s) spent"
        else:
            run_one(torch, caps, a, peer_nets, r, net, mode, variant, data[net])
        status = f"{r['ms']:.4f} ms" if r["status"] == "ok" else r["status"]
        print(f"    {net} {mode} {variant}: {status} {r['note']}", flush=True)
        if csv_out:  # as each row is done: a run stopped by a timeout keeps what it did
            write_row(csv_out, r)
    if csv_out and csv_out is not sys.stdout:
        csv_out.close()
    rows.sort(key=lambda r: r["order"])
    mark_fastest(rows)
    print()
    print_table(rows, sys.stdout)
    if a.csv and a.csv != "-":  # again, in table order with the fastest marked
        write_csv(rows, a.csv)
    failed = [r for r in rows if r["status"] == "failed"]
    if a.strict and failed:
        print(f"torch_bench.py: {len(failed)} available variant(s) failed", file=sys.stderr)
        return 1
    if a.strict and not any(r["status"] == "ok" for r in rows):
        print("torch_bench.py: no variant ran", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
