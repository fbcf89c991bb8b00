#!/usr/bin/env bash
# A/B timing on the GPU machine: PASSES alternating runs of each normkit_bench
# binary (variants of the library built from different trees) over the same
# benchmarks, then one table of share of copy per benchmark and variant (the
# median over passes). Results: $OUT/ab.tgz (every pass's JSON) and the table.
#
#   bash bench/ab.sh PASSES FILTER name=path/to/normkit_bench ...
#
# Alternating the binaries pass by pass spreads the card's drift over all of
# them; compare variants only by differences larger than a variant's own
# spread across passes (the table prints it).
set -uo pipefail
passes=$1 filter=$2
shift 2
OUT=${OUT:-/tmp/normkit-ab}
dir="$OUT/ab"
mkdir -p "$dir"
for ((i = 1; i <= passes; ++i)); do
  for spec in "$@"; do
    name=${spec%%=*} bin=${spec#*=}
    "$bin" --benchmark_filter="$filter" --benchmark_out="$dir/$name.$i.json" --benchmark_out_format=json \
      >"$dir/$name.$i.log" 2>&1 || echo "$name pass $i: rc=$?"
  done
done
python3 "$(dirname "$0")/ab_report.py" "$dir" "${@%%=*}"
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$dir"
