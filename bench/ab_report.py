#!/usr/bin/env python3
"""Table of bench/ab.sh's passes: share of copy per benchmark (rows) and variant
(columns), the median over passes, with each variant's spread (max - min over
passes) and its difference from the first variant; then, for benchmarks without
a copy share (small batches), the time per call in the same layout."""
import glob
import json
import os
import statistics
import sys


def main():
    folder, names = sys.argv[1], sys.argv[2:]
    shares = {}  # benchmark -> variant -> [share per pass]
    times = {}  # benchmarks without a copy share (small batches): benchmark -> variant -> [us per call]
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for name in names:
        for path in sorted(glob.glob(os.path.join(folder, f"{name}.*.json"))):
            with open(path) as f:
                for b in json.load(f).get("benchmarks", []):
                    key = b["name"].replace("/iterations:1/manual_time", "")
                    if "copy_share" in b:
                        shares.setdefault(key, {}).setdefault(name, []).append(100.0 * b["copy_share"])
                    elif "real_time" in b and b.get("run_type", "iteration") == "iteration":
                        us = b["real_time"] * scale.get(b.get("time_unit", "ns"), 1e-3)
                        times.setdefault(key, {}).setdefault(name, []).append(us)
    print_table("benchmark", names, shares, lambda med, v: f"{med:6.1f} ±{max(v) - min(v):4.1f}",
                lambda med, base: f" {med - base:+5.1f}")
    if times:
        print()
        print_table("benchmark (us a call; difference in %)", names, times,
                    lambda med, v: f"{med:7.3f} ±{max(v) - min(v):5.3f}",
                    lambda med, base: f" {100.0 * (med - base) / base:+5.1f}")


def print_table(title, names, values, cell_of, difference):
    """One row per benchmark: per variant the median over passes and its spread
    (cell_of), then the difference from the first variant's median."""
    print(f"{title:52s}" + "".join(f"{n:>22s}" for n in names))
    for key in sorted(values):
        row = f"{key:52s}"
        base = statistics.median(values[key][names[0]]) if names[0] in values[key] else None
        for n in names:
            v = values[key].get(n)
            if not v:
                row += f"{'-':>22s}"
                continue
            med = statistics.median(v)
            cell = cell_of(med, v)
            if base and n != names[0]:
                cell += difference(med, base)
            row += f"{cell:>22s}"
        print(row)


if __name__ == "__main__":
    main()
