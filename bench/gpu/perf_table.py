#!/usr/bin/env python3
"""perf_table.py: ampscope's `bench train --csv` rows beside the fastest PyTorch
variant of bench/torch_bench.py --csv, as docs/PERFORMANCE.md's table:

  | device | net | mode | dtype | ampscope ms | best PyTorch variant | its ms | ratio |

One row per ampscope row (on cuda); the PyTorch side is the fastest variant
with status ok of the same net and dtype, whatever its mode (O1 autocast or
the O2-like model): the best PyTorch way at that precision.  ratio = its ms
/ ampscope ms, so above 1 ampscope is faster (issue 18 asks >= 1.3 for resnet
and the transformer).  --variants also prints every PyTorch row.

  bench/gpu/perf_table.py --ampscope train-*.csv --torch torch-*.csv [--variants]
"""
import argparse
import csv
import re
import sys


def short_device(name):
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name)
    return m.group(1) if m else name


def read(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            text = [line for line in f if line.strip()]
        # ampscope's CSV starts at its header; anything before (a warning) is skipped
        start = next((i for i, line in enumerate(text)
                      if line.startswith(("backend,", "device,"))), None)
        if start is None:
            raise SystemExit(f"perf_table.py: {p}: no CSV header")
        header = text[start]
        # several runs appended to one file: each one's header again
        rows += list(csv.DictReader([header] + [line for line in text[start + 1:]
                                                if line != header]))
    return rows


def ms(x):
    return f"{x:.3f} ms" if x >= 0.1 else f"{x * 1e3:.1f} us"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ampscope", nargs="+", default=[], help="bench train --csv files")
    p.add_argument("--torch", nargs="+", default=[], help="torch_bench.py --csv files")
    p.add_argument("--variants", action="store_true", help="also every PyTorch row")
    a = p.parse_args(argv)
    amp = [r for r in read(a.ampscope) if r.get("backend") == "cuda"]
    tor = read(a.torch)
    best = {}
    for r in tor:
        if r["status"] != "ok":
            continue
        key = (r["device"], r["net"], r["dtype"])
        if key not in best or float(r["ms_per_step"]) < float(best[key]["ms_per_step"]):
            best[key] = r
    print("| device | net | mode | dtype | ampscope ms | best PyTorch variant | its ms | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in amp:
        dev = short_device(r["device"])
        t = float(r["seconds_per_step"]) * 1e3
        b = best.get((dev, r["net"], r["dtype"]))
        if b:
            bt = float(b["ms_per_step"])
            cells = [f"{b['mode']} {b['variant']}", ms(bt), f"{bt / t:.2f}"]
        else:
            cells = ["(none measured)", "", ""]
        print(f"| {dev} | {r['net']} | {r['mode']} | {r['dtype']} | {ms(t)} | "
              + " | ".join(cells) + " |")
    if a.variants:
        print()
        print("| device | net | mode | dtype | PyTorch variant | ms (median) | min | host | "
              "status | note |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in tor:
            ok = r["status"] == "ok"
            star = " **(fastest)**" if r.get("fastest") == "yes" else ""
            cells = [ms(float(r[k])) if ok else "" for k in ("ms_per_step", "min_ms", "host_ms")]
            note = r["note"].replace("|", "/")
            print(f"| {r['device']} | {r['net']} | {r['mode']} | {r['dtype']} | "
                  f"{r['variant']}{star} | " + " | ".join(cells)
                  + f" | {r['status']} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
