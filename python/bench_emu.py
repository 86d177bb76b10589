#!/usr/bin/env python3
"""bench_emu.py: the speed of ampscope_torch.emu (ctypes) against the C library
called directly, on large arrays.

    /usr/bin/python3 python/bench_emu.py --driver build/tests/python/emu_driver [--log2n 24]

For each format and mode, the best of --reps calls of emu.round_to_bits on 2^n
float32 values (N(0, 1) * 1e-3, gradient-like: some flush, some become
subnormal in fp16), into a preallocated output and into a new one, against
the best of as many runs (in turns with the binding's calls) of
fpe_chop_f32_to_u16 on the same values by emu_driver (tests/python/emu_driver.c, a C program linked against the
library).  Prints the times and the ratio binding / C (1.00 = no overhead).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ampscope_torch import emu  # noqa: E402


def best_of(reps, fn):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", required=True, help="emu_driver (built with the tests)")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--lib", help="libampscope-emu.so (default: emu's search)")
    a = ap.parse_args()
    lib = emu.library(a.lib)
    n = 1 << a.log2n
    x = (np.random.default_rng(1).standard_normal(n, dtype=np.float32) * np.float32(1e-3))
    out = np.empty(n, dtype=np.uint16)
    print("library %s, %d elements (2^%d), best of %d" % (lib.path, n, a.log2n, a.reps))
    print("%-5s %-11s %10s %12s %12s %8s %8s" % ("fmt", "mode", "C s", "binding s", "+alloc s",
                                                 "ratio", "+alloc"))
    worst, fastest = 0.0, float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.f32")
        x.tofile(path)
        for fmt in ("fp16", "bf16"):
            for mode in ("near_even", "stoch_prop"):
                # C and the binding in turns, so that both see the machine's noise
                # alike: each C run times 2 calls (the first touches its output)
                c = t = ta = float("inf")
                for _ in range(a.reps):
                    c = min(c, float(subprocess.run(
                        [a.driver, "time", fmt, mode, "2", path], check=True,
                        capture_output=True, text=True).stdout))
                    t = min(t, best_of(1, lambda: emu.round_to_bits(x, fmt, mode, out=out,
                                                                    lib=lib)))
                    ta = min(ta, best_of(1, lambda: emu.round_to_bits(x, fmt, mode, lib=lib)))
                worst = max(worst, t / c)
                fastest = min(fastest, c)
                print("%-5s %-11s %10.4f %12.4f %12.4f %8.3f %8.3f" % (fmt, mode, c, t, ta, t / c,
                                                                      ta / c))
    # the binding's own cost, apart from the machine's noise: a call on one element
    one, one_out = x[:1].copy(), out[:1].copy()
    calls = 20000
    t0 = time.perf_counter()
    for _ in range(calls):
        emu.round_to_bits(one, "fp16", "near_even", out=one_out, lib=lib)
    per_call = (time.perf_counter() - t0) / calls
    print("worst ratio binding / C: %.3f (the issue asks <= 1.2)" % worst)
    print("the binding's cost per call (1 element, %d calls): %.1f us = %.4f%% of the fastest "
          "C time above" % (calls, 1e6 * per_call, 100 * per_call / fastest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
