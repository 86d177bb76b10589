"""test_emu.py: ampscope_torch.emu (the ctypes binding of libampscope-emu) against
emu_driver, a C program that rounds each element with the library's scalar
conversion (fpe_f32_to_f16 / fpe_f32_to_bf16, random index INDEX + i) and
counts the results itself: the expected values come neither from the binding
nor from chop.  Every rounding mode of fp16 and bf16, the stochastic ones
with a fixed seed, stream and index; numpy arrays and torch tensors; bits,
counts and the float32 values."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from ampscope_torch import emu

MODES = ["near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"]
SEED, STREAM, INDEX = 0x0123456789ABCDEF, 7, 1000


def inputs():
    """Random bit patterns (every class: zeros, subnormals, normals, inf, NaN),
    values near the formats' rounding thresholds and their neighbours, and
    values near fp16/bf16 midpoints."""
    rng = np.random.default_rng(17)
    parts = [rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32)]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0 ** -25, 2.0 ** -14 - 2.0 ** -25,
                        65520.0, 65504.0, 2.0 ** -24, 2.0 ** -134, 2.0 ** -126 - 2.0 ** -134,
                        3.3895313892515355e38],
                       dtype=np.float32).view(np.uint32)
    near = np.concatenate([special + d for d in (-2, -1, 0, 1, 2)]).astype(np.uint32)
    parts += [near, near | 0x80000000]
    # narrow magnitudes, where halves and subnormals are dense
    mags = rng.integers(0x33000000 - (1 << 20), 0x38800000 + (1 << 20), 1 << 14, dtype=np.int64)
    parts.append(mags.astype(np.uint32))
    big = rng.integers(0x7F000000, 0x7F800000, 1 << 12, dtype=np.int64).astype(np.uint32)
    parts.append(big)
    return np.concatenate(parts).view(np.float32)


def reference(driver, fmt, mode, x, tmp):
    src, dst = os.path.join(tmp, "in.f32"), os.path.join(tmp, "out.u16")
    x.tofile(src)
    out = subprocess.run([driver, "ref", fmt, mode, str(SEED), str(STREAM), str(INDEX), src, dst],
                         check=True, capture_output=True, text=True).stdout.split()
    return np.fromfile(dst, dtype=np.uint16), tuple(int(v) for v in out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    a = ap.parse_args()
    lib = emu.library()
    print("library:", lib.path)
    x = inputs()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("fp16", "bf16"):
            for mode in MODES:
                want_bits, want_counts = reference(a.driver, fmt, mode, x, tmp)
                bits, counts = emu.round_to_bits(x, fmt, mode, seed=SEED, stream=STREAM,
                                                 index=INDEX)
                ok = np.array_equal(bits, want_bits) and tuple(counts) == want_counts
                # a torch tensor, zero-copy: the same bits
                tb, tc = emu.round_to_bits(torch.from_numpy(x), fmt, mode, seed=SEED,
                                           stream=STREAM, index=INDEX)
                ok = ok and np.array_equal(tb.numpy().view(np.uint16), want_bits) and tc == counts
                # split in two with the index advanced: the same result (chop's contract)
                h = len(x) // 3
                b1, c1 = emu.round_to_bits(x[:h], fmt, mode, seed=SEED, stream=STREAM, index=INDEX)
                b2, c2 = emu.round_to_bits(x[h:], fmt, mode, seed=SEED, stream=STREAM,
                                           index=INDEX + h)
                ok = ok and np.array_equal(np.concatenate([b1, b2]), want_bits)
                ok = ok and tuple(a_ + b_ for a_, b_ in zip(c1, c2)) == want_counts
                # an env passed in advances its index by n, as in C
                env = emu.make_env(mode, seed=SEED, stream=STREAM, index=INDEX)
                emu.round_to_bits(x[:h], fmt, env=env)
                b3, _ = emu.round_to_bits(x[h:], fmt, env=env)
                ok = ok and env.sr_index == INDEX + len(x) and np.array_equal(b3, want_bits[h:])
                # float32 values: the reference patterns widened (NaNs compared as NaNs)
                vals, vc = emu.round(x, fmt, mode, seed=SEED, stream=STREAM, index=INDEX)
                wv = emu.to_float32(want_bits, fmt)
                nan = np.isnan(wv)
                ok = ok and np.array_equal(np.isnan(vals), nan) and \
                    np.array_equal(vals[~nan].view(np.uint32), wv[~nan].view(np.uint32)) and \
                    tuple(vc) == want_counts
                inplace = x.copy()
                emu.round(inplace, fmt, mode, seed=SEED, stream=STREAM, index=INDEX, out=inplace)
                ok = ok and np.array_equal(inplace.view(np.uint32), vals.view(np.uint32))
                print("%-4s %-11s %s  counts %s" % (fmt, mode, "ok" if ok else "MISMATCH", want_counts))
                if not ok:
                    failures += 1
                    diff = np.nonzero(bits != want_bits)[0][:5]
                    for i in diff:
                        print("   x=0x%08x got 0x%04x want 0x%04x" % (x.view(np.uint32)[i], bits[i],
                                                                     want_bits[i]))
                    print("   counts got %s want %s" % (tuple(counts), want_counts))
    # the Recorder's thresholds (counts.py) against the emulator: each threshold and its
    # fp32 neighbours rounded to nearest even by the library land in the class counts.py says
    from ampscope_torch import counts as C
    for fmt in ("fp16", "bf16"):
        fbits = 10 if fmt == "fp16" else 7
        vals = []
        for t in C.thresholds(fmt):
            b = int(np.float32(t).view(np.uint32))
            assert float(np.float32(t)) == t, "threshold %r is an fp32 value" % t
            vals += [np.uint32(b + d).view(np.float32) for d in range(-3, 4)]
        v = np.array(vals, dtype=np.float32)
        bits, _ = emu.round_to_bits(v, fmt)
        mag = bits & 0x7FFF
        emu_class = np.where(mag == 0, "flushed", np.where(mag >> fbits == 0, "subnormal",
                             np.where(mag == (0x7C00 if fmt == "fp16" else 0x7F80), "overflowed",
                                      "normal")))
        st_class = []
        for xv in v:
            st = C.tensor_stats(torch.tensor([xv]), fmt, 1.0)
            st_class.append("flushed" if st["flushed"] else "subnormal" if st["subnormal"]
                            else "overflowed" if st["overflowed"] else "normal")
        same = list(emu_class) == st_class
        print("%s thresholds and neighbours: counts.py %s the emulator" % (fmt, "agrees with" if
                                                                          same else "DIFFERS from"))
        if not same:
            failures += 1
            print("   emulator", list(emu_class), "\n   counts  ", st_class)
    # the random bits: Random123's known answer for Philox4x32-10 at key 0, counter 0
    kat = [emu.random_bits(0, 0, i) for i in range(4)]
    if kat != [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]:
        failures += 1
        print("random_bits(0, 0, 0..3) = %s, not Random123's" % [hex(v) for v in kat])
    # bad input is refused, not guessed
    with np.errstate(invalid="ignore"):  # the signaling NaNs among x
        wide = x.astype(np.float64)
    for bad in (wide, x[::2], torch.from_numpy(x).double()):
        try:
            emu.round_to_bits(bad, "fp16")
            print("accepted a %s input" % type(bad).__name__)
            failures += 1
        except TypeError:
            pass
    print("%d elements, %d of 16 combinations failed" % (len(x), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
