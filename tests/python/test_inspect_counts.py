"""test_inspect_counts.py: the Recorder's counts (tensors.csv, hist.csv) against
`ampscope inspect` on the same tensors, field for field.

Each layer of a small module holds one tensor as its weight and, as the
weight's gradient, the same tensor; a Recorder with a scaler fixed at S records
one step, so its weight rows are at scale 1 and its weight_grad rows at S.  The
tensors are saved as safetensors (ampscope_torch.safetensors) and inspected
with --csv --scales 1,S and --hist --csv.  The tensors put values on every
rounding threshold of fp16 and bf16 at each power-of-two scale (the ties) and
one and two fp32 ulps either side, both signs, zeros, infinities, NaN, fp32
subnormals and random bit patterns; fp16 and bf16 tensors hold random patterns
(widened exactly).  S = 3 has no exact ties: the fp32 values nearest them.
The activation gradients (the Recorder's hook on a module's output) are checked
the same way: probes x * w, w = 1, sent the tie tensors times S by the backward
of the scaled loss (S a power of two >= 1, so the stored gradient is exact).

Exit 77 when `ampscope inspect` does not exist (it comes from branch
i17-inspect), unless AMPSCOPE_PEER_REQUIRED=1."""
import argparse
import csv
import io
import math
import os
import struct
import subprocess
import sys
import tempfile

import torch

import ampscope_torch
from ampscope_torch import counts as C
from ampscope_torch.safetensors import save_file

SCALES = [1.0, 0.5, 3.0, 1024.0, 65536.0, 2.0 ** 24]


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def f32_of_bits(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def near(v, ulps=2):
    """v (an fp32 value) and its fp32 neighbours up to ulps away, both signs."""
    b = f32_bits(v)
    out = []
    for d in range(-ulps, ulps + 1):
        if 0 <= b + d < 0x7F800000:
            x = f32_of_bits(b + d)
            out += [x, -x]
    return out


def ties(scale):
    """Every threshold of fp16 and bf16 divided by scale (exactly, or the
    nearest fp32 value when the quotient is not one), with neighbours."""
    vals = []
    for target in ("fp16", "bf16"):
        for t in C.thresholds(target):
            q = t / scale
            x = struct.unpack("<f", struct.pack("<f", q))[0] if q < 3.4e38 else None
            if x is None or x == 0 or math.isinf(x):
                continue
            vals += near(x)
    return vals


def tensors(seed):
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(-2 ** 31, 2 ** 31 - 1, (4096,), generator=g, dtype=torch.int64)
    random32 = bits.to(torch.int32).view(torch.float32)
    extra = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, 2.0 ** -149, 2.0 ** -140,
                          -2.0 ** -130, 3.0e38], dtype=torch.float32)
    out = {}
    for k, s in enumerate(SCALES):
        out["ties_%d" % k] = torch.cat([torch.tensor(ties(s), dtype=torch.float32), extra])
        # the ties alone, for the activation gradients: times s they stay finite and exact
        out["act_%d" % k] = torch.tensor(ties(s), dtype=torch.float32)
    out["random32"] = torch.cat([random32, extra]).reshape(2, -1)
    b16 = torch.randint(-2 ** 15, 2 ** 15 - 1, (2048,), generator=g, dtype=torch.int64).to(torch.int16)
    out["random16"] = b16.view(torch.float16).reshape(32, 64)
    out["randombf16"] = b16.flip(0).view(torch.bfloat16).reshape(2048)
    # gradients of ordinary size, near the scaled thresholds
    out["normal"] = (torch.randn(1000, generator=g) * 1e-6).float()
    return out


class Holder(torch.nn.Module):
    def __init__(self, t):
        super().__init__()
        self.weight = torch.nn.Parameter(t.clone(), requires_grad=True)


class Probe(torch.nn.Module):
    """x * w with w = 1: its output's gradient is what the loss sends back."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(()))

    def forward(self, x):
        return x * self.weight


def activation_grads(run, ts, s, target):
    """A Recorder's activation_grad rows when the scaled loss sends each probe
    the gradient ts[k] * s (exact: s a power of two >= 1, ts[k] * s finite): the
    hook divides the stored gradient by s again, so the rows are ts[k]'s at s."""
    probes = torch.nn.Module()
    for k in ts:
        probes.add_module(k, Probe())
    rec = ampscope_torch.Recorder(probes, run, target=target, scaler=FixedScaler(s), every=1,
                                  trace=False)
    loss = sum((getattr(probes, k)(torch.zeros_like(g)) * g).sum() for k, g in ts.items())
    (loss * torch.tensor(s, dtype=torch.float32)).backward()
    rec.step(loss)
    rec.close()
    with open(os.path.join(run, "tensors.csv")) as f:
        return [r for r in csv.DictReader(f) if r["kind"] == "activation_grad"]


class FixedScaler:
    """A scaler whose scale never changes (the Recorder reads get_scale)."""

    def __init__(self, s):
        self.s = s

    def is_enabled(self):
        return True

    def get_scale(self):
        return self.s


def inspect(ampscope, path, target, scales, hist):
    cmd = [ampscope, "inspect", path, "--csv", "--dtype", target,
           "--scales", ",".join("%.9g" % s for s in scales)]
    if hist:
        cmd.append("--hist")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ampscope", required=True)
    a = ap.parse_args()
    p = subprocess.run([a.ampscope, "inspect", "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        print("this ampscope has no inspect command (branch i17-inspect): %s" % p.stderr.strip())
        return 1 if os.environ.get("AMPSCOPE_PEER_REQUIRED") == "1" else 77
    ts = tensors(17)
    model = torch.nn.Module()
    for name, t in ts.items():
        model.add_module(name, Holder(t))
    failures = 0
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tensors.safetensors")
        save_file(ts, path)
        for target in ("fp16", "bf16"):
            theirs = {}
            text = inspect(a.ampscope, path, target, SCALES, False)
            rd = csv.DictReader(io.StringIO(text))
            want_header = ("file,tensor,dtype,shape,target,scale,count,nonzero,nonfinite,flushed,"
                           "flushed_frac_of_nonzero,subnormal,subnormal_frac_of_nonzero,overflowed,"
                           "overflow_frac_of_nonzero,zero_frac_of_count,amax")
            if text.splitlines()[0] != want_header:
                print("inspect's header: %s" % text.splitlines()[0])
                failures += 1
            for r in rd:
                theirs[(r["tensor"], float(r["scale"]))] = r
            hist_theirs = {}
            for r in csv.DictReader(io.StringIO(inspect(a.ampscope, path, target, [1.0], True))):
                hist_theirs.setdefault(r["tensor"], {})[r["bin"]] = int(r["count"])
            for s in SCALES:
                run = os.path.join(tmp, "run_%s_%g" % (target, s))
                for name, t in ts.items():
                    getattr(model, name).weight.grad = t.clone()
                rec = ampscope_torch.Recorder(model, run, target=target, scaler=FixedScaler(s),
                                              every=1, trace=False)
                rec.step(0.0)
                rec.close()
                with open(os.path.join(run, "tensors.csv")) as f:
                    ours = list(csv.DictReader(f))
                with open(os.path.join(run, "hist.csv")) as f:
                    hist_ours = {}
                    for r in csv.DictReader(f):
                        if r["kind"] == "weight_grad":
                            hist_ours.setdefault(r["layer"], {})[r["bin"]] = int(r["count"])
                for r in ours:
                    scale = float(r["scale"])
                    want = theirs[(r["layer"], scale)]
                    bad = [k for k in ("count", "nonzero", "nonfinite", "flushed", "subnormal",
                                       "overflowed") if int(r[k]) != int(want[k])]
                    for k in ("flushed_frac_of_nonzero", "subnormal_frac_of_nonzero",
                              "overflow_frac_of_nonzero", "zero_frac_of_count", "amax"):
                        mine = "" if r[k] == "" else "%.9g" % float(r[k])
                        other = "" if want[k] == "" else "%.9g" % float(want[k])
                        if mine != other:
                            bad.append(k)
                    compared += 1
                    if bad:
                        failures += 1
                        print("%s %s %s scale %g: %s differ" % (target, r["layer"], r["kind"],
                                                               scale, bad))
                        print("   ours   ", dict((k, r[k]) for k in bad))
                        print("   inspect", dict((k, want[k]) for k in bad))
                    if s == 1.0 and r["kind"] == "weight_grad":
                        print("%s %-11s scale 1: count %s flushed %s subnormal %s overflowed %s" % (
                            target, r["layer"], r["count"], r["flushed"], r["subnormal"],
                            r["overflowed"]))
                # activation gradients, through the hooks, at the power-of-two scales >= 1 (below
                # 1, g * s underflows in fp32 near 2^-149: the stored gradient is not exact)
                if math.frexp(s)[0] == 0.5 and s >= 1:
                    ties_ts = {"act_%d" % SCALES.index(s): ts["act_%d" % SCALES.index(s)]}
                    got = activation_grads(run + "_act", ties_ts, s, target)
                    if len(got) != len(ties_ts):
                        failures += 1
                        print("%s scale %g: %d activation_grad rows" % (target, s, len(got)))
                    ours = ours + got
                    for r in got:
                        want = theirs[(r["layer"], float(r["scale"]))]
                        compared += 1
                        if any(int(r[k]) != int(want[k]) for k in
                               ("count", "nonzero", "nonfinite", "flushed", "subnormal",
                                "overflowed")) or "%.9g" % float(r["amax"]) != \
                                "%.9g" % float(want["amax"]):
                            failures += 1
                            print("%s %s activation_grad scale %g differs: ours %s inspect %s" % (
                                target, r["layer"], s, r, want))
                for layer, h in hist_ours.items():
                    compared += 1
                    if h != hist_theirs.get(layer):
                        failures += 1
                        print("%s %s: histograms differ" % (target, layer))
        # the ties do land on both sides: at scale 1 fp16's thresholds split flushed,
        # subnormal and overflowed values as the rule says (hand-checked counts)
        st = C.tensor_stats(torch.tensor(near(2.0 ** -25, 1), dtype=torch.float32), "fp16", 1.0)
        if (st["flushed"], st["subnormal"]) != (4, 2):  # -1 ulp and the tie flush, +1 ulp not
            failures += 1
            print("fp16 2^-25 and neighbours: flushed %d subnormal %d, want 4 2"
                  % (st["flushed"], st["subnormal"]))
        st = C.tensor_stats(torch.tensor(near(65520.0, 1), dtype=torch.float32), "fp16", 1.0)
        if st["overflowed"] != 4:  # the tie and +1 ulp overflow, -1 ulp not
            failures += 1
            print("fp16 65520 and neighbours: overflowed %d, want 4" % st["overflowed"])
        st = C.tensor_stats(torch.tensor(near(2.0 ** -14 - 2.0 ** -25, 1), dtype=torch.float32),
                            "fp16", 1.0)
        if st["subnormal"] != 2:  # -1 ulp stays subnormal; the tie rounds to 2^-14
            failures += 1
            print("fp16 2^-14 - 2^-25 and neighbours: subnormal %d, want 2" % st["subnormal"])
    print("%d rows and histograms compared, %d differ" % (compared, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
