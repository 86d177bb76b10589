#!/usr/bin/env python3
"""torch_simplenet.py: the PyTorch BASELINE for issue 7's training-speed comparison.

Not part of ampscope: it times, in PyTorch, the network and step that
`ampscope bench train --net simplenet --backend cuda` times, so the two can
be put side by side from one session on one GPU.

The step: simplenet (depth x Linear(width, width), ReLU between, bias on),
MSE loss against synthetic targets, SGD (lr 1e-4, no momentum), batch 512;
16 distinct batches resident on the GPU and cycled through, as ampscope's
bench does.  Modes:

  fp32        eager, TF32 off (torch.backends.cuda.matmul.allow_tf32 = False)
  tf32        eager, TF32 on
  amp-fp16    eager, torch.autocast(float16) + torch.amp.GradScaler
  amp-bf16    eager, torch.autocast(bfloat16), no scaler
  *-compile   the same step's model under torch.compile (if it works here)

GradScaler.step() reads found_inf on the host every step (a device sync);
that is PyTorch's AMP as users run it, so it is kept.  Timing: CUDA events
around N steps after W warm-up steps (and after compilation), the median
of R repetitions.  Output: a table, or CSV with --csv.
"""
import argparse
import statistics
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--steps", type=int, default=100, help="timed steps per repetition")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--modes", default="fp32,tf32,amp-fp16,amp-bf16,amp-fp16-compile,amp-bf16-compile")
    p.add_argument("--csv", action="store_true")
    a = p.parse_args()
    for name in ("width", "depth", "batch", "steps", "warmup", "repeats"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    return a


def main():
    a = parse_args()
    try:
        import torch
    except ImportError:
        print("torch_simplenet.py: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_simplenet.py: no CUDA device", file=sys.stderr)
        return 77
    known = {"fp32", "tf32", "amp-fp16", "amp-bf16"}
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in modes:
        if m.removesuffix("-compile") not in known:
            print(f"torch_simplenet.py: unknown mode '{m}'", file=sys.stderr)
            return 2
    dev = torch.device("cuda")
    torch.manual_seed(1)
    n_batches = 16
    xs = torch.randn(n_batches, a.batch, a.width, device=dev)
    ys = torch.randn(n_batches, a.batch, a.width, device=dev)

    def make_model():
        torch.manual_seed(1)
        layers = []
        for i in range(a.depth):
            layers.append(torch.nn.Linear(a.width, a.width))
            if i + 1 < a.depth:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers).to(dev)

    rows = []
    for mode in modes:
        base = mode.removesuffix("-compile")
        compiled = mode.endswith("-compile")
        torch.backends.cuda.matmul.allow_tf32 = base == "tf32"
        torch.backends.cudnn.allow_tf32 = base == "tf32"
        model = make_model()
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)
        amp_dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(base)
        scaler = torch.amp.GradScaler("cuda") if base == "amp-fp16" else None
        loss_fn = torch.nn.MSELoss()
        fwd = model
        if compiled:
            try:
                fwd = torch.compile(model)
            except Exception as e:  # noqa: BLE001 - report and go on
                rows.append((mode, None, f"torch.compile failed: {e}"))
                continue

        def step(k):
            opt.zero_grad(set_to_none=True)
            if amp_dtype is not None:
                with torch.autocast("cuda", dtype=amp_dtype):
                    loss = loss_fn(fwd(xs[k]), ys[k])
            else:
                loss = loss_fn(fwd(xs[k]), ys[k])
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            return loss

        try:
            for i in range(a.warmup):
                step(i % n_batches)
            torch.cuda.synchronize()
            times = []
            for _ in range(a.repeats):
                t0 = torch.cuda.Event(enable_timing=True)
                t1 = torch.cuda.Event(enable_timing=True)
                t0.record()
                for i in range(a.steps):
                    loss = step(i % n_batches)
                t1.record()
                torch.cuda.synchronize()
                times.append(t0.elapsed_time(t1) / 1e3 / a.steps)
            rows.append((mode, statistics.median(times), f"final loss {loss.item():.6g}"))
        except Exception as e:  # noqa: BLE001 - a mode that fails is reported, not fatal
            rows.append((mode, None, f"failed: {e}"))

    device = torch.cuda.get_device_name(0)
    base_time = next((t for m, t, _ in rows if m == "fp32" and t), None)
    if a.csv:
        print("framework,device,net,mode,batch,steps,seconds_per_step,ratio_to_fp32,note")
        for m, t, note in rows:
            ratio = f"{t / base_time:.4f}" if t and base_time else ""
            sec = f"{t:.6g}" if t else ""
            note = note.replace('"', "'")
            print(f'pytorch {torch.__version__},"{device}",simplenet,{m},{a.batch},{a.steps},'
                  f'{sec},{ratio},"{note}"')
    else:
        print(f"PyTorch {torch.__version__} baseline on {device}: simplenet {a.depth} x "
              f"{a.width}, batch {a.batch}, median of {a.repeats} x {a.steps} steps")
        print(f"{'mode':<18} {'time/step':>12} {'ratio':>7}  note")
        for m, t, note in rows:
            ratio = f"{t / base_time:7.3f}" if t and base_time else "       "
            ts = f"{t * 1e3:9.3f} ms" if t else "         -  "
            print(f"{m:<18} {ts:>12} {ratio}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
