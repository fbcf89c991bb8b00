#!/usr/bin/env python3
"""Table of bench/ab.sh's passes: share of copy per benchmark (rows) and variant
(columns), the median over passes, with each variant's spread (max - min over
passes) and its difference from the first variant."""
import glob
import json
import os
import statistics
import sys


def main():
    folder, names = sys.argv[1], sys.argv[2:]
    shares = {}  # benchmark -> variant -> [share per pass]
    for name in names:
        for path in sorted(glob.glob(os.path.join(folder, f"{name}.*.json"))):
            with open(path) as f:
                for b in json.load(f).get("benchmarks", []):
                    if "copy_share" in b:
                        key = b["name"].replace("/iterations:1/manual_time", "")
                        shares.setdefault(key, {}).setdefault(name, []).append(100.0 * b["copy_share"])
    head = f"{'benchmark':52s}" + "".join(f"{n:>22s}" for n in names)
    print(head)
    for key in sorted(shares):
        row = f"{key:52s}"
        base = statistics.median(shares[key][names[0]]) if names[0] in shares[key] else None
        for n in names:
            v = shares[key].get(n)
            if not v:
                row += f"{'-':>22s}"
                continue
            med = statistics.median(v)
            cell = f"{med:6.1f} ±{max(v) - min(v):4.1f}"
            if base is not None and n != names[0]:
                cell += f" {med - base:+5.1f}"
            row += f"{cell:>22s}"
        print(row)


if __name__ == "__main__":
    main()
