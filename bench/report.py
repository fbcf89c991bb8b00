#!/usr/bin/env python3
"""Turn normkit_bench's Google Benchmark JSON into docs/benchmarks.md and docs/benchmarks.png.

    ./normkit_bench --benchmark_out=bench.json --benchmark_out_format=json
    python3 bench/report.py bench.json --md docs/benchmarks.md --png docs/benchmarks.png

Reads the benchmark names that bench/src/suites.cu writes:
    copy/<memcpy|vector>/moved_MiB:<n>
    sweep/<op>/<dtype>/N:<n>/M:<m>
    small_batch/<op>/<dtype>/N:<n>/M:<m>
    misaligned/<op>/<dtype>/N:<n>/M:<m>
    shape/<op>/<dtype>/N:<n>/M:<m>/shape:<shape>
and prints, per op and dtype, the worst and the median share of the copy ceiling. Ops: layer_norm,
rms_norm, rms_norm_gemma, layer_norm_gemma, add_rms_norm, add_rms_norm_inplace, add_layer_norm, rms_norm_fp8,
rms_norm_int8, rms_norm_fp8_static, rms_norm_int8_static, rms_norm_fp8_e5m2, rms_norm_fp8_e5m2_static, layer_norm_fp8,
layer_norm_fp8_static, layer_norm_int8, layer_norm_int8_static, layer_norm_fp8_e5m2, layer_norm_fp8_e5m2_static (others are reported under their own name).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

# Op name -> title, in report order.
OPS = {
    "layer_norm": "LayerNorm",
    "rms_norm": "RMSNorm",
    "rms_norm_gemma": "RMSNorm, (1 + w)",
    "layer_norm_gemma": "LayerNorm, (1 + w)",
    "add_rms_norm": "Add + RMSNorm",
    "add_rms_norm_inplace": "Add + RMSNorm, in place",
    "add_layer_norm": "Add + LayerNorm",
    "rms_norm_fp8": "RMSNorm to fp8 e4m3",
    "rms_norm_int8": "RMSNorm to int8",
    "rms_norm_fp8_static": "RMSNorm to fp8 e4m3, static scale",
    "rms_norm_int8_static": "RMSNorm to int8, static scale",
    "rms_norm_fp8_e5m2": "RMSNorm to fp8 e5m2",
    "rms_norm_fp8_e5m2_static": "RMSNorm to fp8 e5m2, static scale",
    "layer_norm_fp8": "LayerNorm to fp8 e4m3",
    "layer_norm_fp8_static": "LayerNorm to fp8 e4m3, static scale",
    "layer_norm_int8": "LayerNorm to int8",
    "layer_norm_int8_static": "LayerNorm to int8, static scale",
    "layer_norm_fp8_e5m2": "LayerNorm to fp8 e5m2",
    "layer_norm_fp8_e5m2_static": "LayerNorm to fp8 e5m2, static scale",
}
# What each op's bytes count (normkit_bench's bytes_moved), for the markdown.
OP_BYTES = {
    "layer_norm": "x read once, y written once, weight and bias read once, 4 bytes per row for each of mean and "
                  "rstd written",
    "rms_norm": "x read once, y written once, weight read once, 4 bytes per row of rstd written",
    "add_rms_norm": "x and residual read, residual_out and y written (4 passes of N per row, all bf16), weight "
                    "read once; no rstd",
    "add_rms_norm_inplace": "as Add + RMSNorm, with residual_out = residual and y = x (vLLM's fused_add_rms_norm)",
    "rms_norm_fp8": "x read (bf16), y written (1 byte per element), one fp32 scale per row written (dynamic "
                    "per-row scales), weight read once; no rstd",
    "rms_norm_int8": "as RMSNorm to fp8 e4m3, with int8 y",
    "rms_norm_gemma": "as RMSNorm (Gemma's and TransformerEngine's zero-centred weight, scale 1 + w)",
    "layer_norm_gemma": "as LayerNorm (TransformerEngine's zero-centred weight, scale 1 + w)",
    "add_layer_norm": "x and residual read, residual_out and y written (4 passes of N per row, all bf16), weight "
                      "and bias read once; no mean or rstd",
    "rms_norm_fp8_static": "x read (bf16), y written (1 byte per element), weight read once; one static "
                           "per-tensor scale, no row scales, no rstd",
    "rms_norm_int8_static": "as RMSNorm to fp8 e4m3 with a static scale, with int8 y",
    "rms_norm_fp8_e5m2": "as RMSNorm to fp8 e4m3, with e5m2 y",
    "rms_norm_fp8_e5m2_static": "as RMSNorm to fp8 e4m3 with a static scale, with e5m2 y",
    "layer_norm_fp8": "x read (bf16), y written (1 byte per element), one fp32 scale per row written (dynamic "
                      "per-row scales), weight and bias read once; no mean or rstd",
    "layer_norm_fp8_static": "as LayerNorm to fp8 e4m3, with one static per-tensor scale and no row scales",
    "layer_norm_int8": "as LayerNorm to fp8 e4m3, with int8 y",
    "layer_norm_int8_static": "as LayerNorm to fp8 e4m3 with a static scale, with int8 y",
    "layer_norm_fp8_e5m2": "as LayerNorm to fp8 e4m3, with e5m2 y",
    "layer_norm_fp8_e5m2_static": "as LayerNorm to fp8 e4m3 with a static scale, with e5m2 y",
}
PLOT_COLUMNS = 3
DTYPE_ORDER = ["fp32", "fp16", "bf16"]
DTYPE_COLORS = {"fp32": "C0", "fp16": "C1", "bf16": "C2"}  # the same colour in every subplot
SHAPE_ORDER = ["rows_per_warp", "row_per_block", "row_in_smem", "row_in_cluster", "streaming",
               "row_in_cluster_registers"]
TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# Suffixes Google Benchmark adds to a registered name.
GBENCH_SUFFIXES = ("iterations:", "repeats:", "threads:", "manual_time", "real_time", "min_time:", "min_warmup_time:")


def parse_name(name):
    """'sweep/rms_norm/bf16/N:4096/M:65536/iterations:1/manual_time' -> ('sweep', ['rms_norm', 'bf16'], {'N': '4096', ...})."""
    parts = [p for p in name.split("/") if not p.startswith(GBENCH_SUFFIXES)]
    positional = [p for p in parts[1:] if ":" not in p]
    keyed = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
    return parts[0], positional, keyed


def load_runs(path):
    """The context and one record per benchmark (the median over repetitions, if any)."""
    with open(path) as f:
        doc = json.load(f)
    groups = defaultdict(list)
    errors = []
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates (mean, median, stddev) of --benchmark_repetitions: recomputed below
        if b.get("error_occurred"):
            errors.append((b["name"], b.get("error_message", "")))
            continue
        groups[b.get("run_name", b["name"])].append(b)
    records = []
    for name, runs in groups.items():
        kind, positional, keyed = parse_name(name)
        run = sorted(runs, key=lambda r: r["real_time"])[len(runs) // 2]  # the median repetition
        rec = {
            "kind": kind,
            "name": name,
            "time_us": run["real_time"] * TO_US[run.get("time_unit", "ns")],
            "label": run.get("label", ""),
        }
        for key in ("bytes", "TBps", "copy_TBps", "copy_share", "min_us", "max_us", "spread"):
            if key in run:
                rec[key] = run[key]
        if kind == "copy":
            rec["method"] = positional[0]
        else:
            rec["op"], rec["dtype"] = positional[0], positional[1]
            rec["N"], rec["M"] = int(keyed["N"]), int(keyed["M"])
            rec["shape"] = keyed.get("shape", rec["label"])
        records.append(rec)
    return doc.get("context", {}), records, errors


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def op_order(op):
    """Sort key of an op: OPS order, then unknown ops by name."""
    names = list(OPS)
    return (names.index(op), "") if op in OPS else (len(names), op)


def order(op, dtype, n=0, m=0):
    """Sort key: op in OPS order, then dtype in DTYPE_ORDER, then N and M."""
    return (op_order(op), DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER), n, m)


def record_order(r):
    return order(r["op"], r["dtype"], r["N"], r["M"])


def op_title(op):
    return OPS.get(op, op)


def fmt_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def sweep_table(sweep):
    rows = [
        (op_title(r["op"]), r["dtype"], r["N"], r["M"], r["shape"], f"{r['time_us']:.1f}", f"{r['TBps']:.2f}",
         f"{r['copy_TBps']:.2f}", f"{100 * r['copy_share']:.0f}%")
        for r in sorted(sweep, key=record_order)
    ]
    return fmt_table(["op", "dtype", "N", "M", "shape", "time (us)", "TB/s", "copy TB/s", "share of copy"], rows)


def small_batch_table(small):
    rows = [
        (op_title(r["op"]), r["dtype"], r["N"], r["M"], r["shape"], f"{r['time_us']:.2f}",
         f"{r['bytes'] / r['copy_TBps'] * 1e-6:.2f}", f"{100 * r['copy_share']:.0f}%")
        for r in sorted(small, key=record_order)
    ]
    return fmt_table(["op", "dtype", "N", "M", "shape", "time per call (us)", "copy per call (us)", "share of copy"], rows)


def misaligned_table(misaligned, sweep):
    """Misaligned rows beside the sweep's aligned rows of the same op, dtype and N."""
    aligned = {(r["op"], r["dtype"], r["N"]): r for r in sweep}
    rows = []
    for r in sorted(misaligned, key=record_order):
        a = aligned.get((r["op"], r["dtype"], r["N"]))
        rows.append((op_title(r["op"]), r["dtype"], r["N"], r["M"], r["shape"], f"{r['TBps']:.2f}",
                     f"{100 * r['copy_share']:.0f}%", "" if a is None else f"{a['TBps']:.2f}",
                     "" if a is None else f"{a['TBps'] / r['TBps']:.2f}x"))
    return fmt_table(["op", "dtype", "N", "M", "shape", "TB/s", "share of copy", "aligned TB/s", "aligned / misaligned"],
                     rows)


def shape_table(shaped):
    """One row per op, dtype and N; one column per forced shape (TB/s), the fastest in bold."""
    cells = defaultdict(dict)
    for r in shaped:
        cells[(r["op"], r["dtype"], r["N"])][r["shape"]] = r["TBps"]
    shapes = [s for s in SHAPE_ORDER if any(s in c for c in cells.values())]
    rows = []
    for (op, dtype, n), by_shape in sorted(cells.items(), key=lambda kv: order(*kv[0])):
        best = max(by_shape.values())
        row = [op_title(op), dtype, n]
        for s in shapes:
            v = by_shape.get(s)
            row.append("" if v is None else (f"**{v:.2f}**" if v == best else f"{v:.2f}"))
        rows.append(row)
    return fmt_table(["op", "dtype", "N"] + [f"{s} (TB/s)" for s in shapes], rows)


def share_summary(sweep):
    """(op, dtype, worst share, N of the worst, median share) per op and dtype."""
    by = defaultdict(list)
    for r in sweep:
        by[(r["op"], r["dtype"])].append(r)
    out = []
    for (op, dtype), rs in sorted(by.items(), key=lambda kv: order(*kv[0])):
        worst = min(rs, key=lambda r: r["copy_share"])
        out.append((op, dtype, worst["copy_share"], worst["N"], statistics.median(r["copy_share"] for r in rs)))
    return out


def write_markdown(path, meta, records, errors, png_name):
    sweep = [r for r in records if r["kind"] == "sweep"]
    small = [r for r in records if r["kind"] == "small_batch"]
    shaped = [r for r in records if r["kind"] == "shape"]
    misaligned = [r for r in records if r["kind"] == "misaligned"]
    copies = {r["method"]: r for r in records if r["kind"] == "copy"}
    out = ["# normkit benchmarks", ""]
    out.append(f"- Date: {meta['date']}")
    out.append(f"- GPU: {meta['gpu']}")
    out.append(f"- Commit: {meta['commit']}")
    if copies:
        parts = [f"{m} {r['TBps']:.2f} TB/s" for m, r in sorted(copies.items())]
        moved = next(iter(copies.values()))["bytes"] / 2**30
        out.append(f"- Copy ceiling ({moved:.0f} GiB moved, read + write): " + ", ".join(parts))
    out += [
        "",
        "Generated by `bench/report.py` from `normkit_bench`'s JSON output. Times are medians over the samples of",
        "each benchmark. Large calls: x is about 512 MiB, one launch per sample, the L2 cache flushed before each.",
        "The copy ceiling is the faster of `cudaMemcpyAsync` and a 16-byte-vector copy kernel moving the same",
        "bytes as the call, timed the same way; share of copy = TB/s / copy TB/s. Bytes moved per call:",
        "",
    ]
    ops = sorted({r["op"] for r in records if r["kind"] != "copy"}, key=op_order)
    out += [f"- {op_title(op)} (`{op}`): {OP_BYTES.get(op, 'see bench/src')}" for op in ops]
    out += [
        "",
        f"![TB/s against N]({png_name})",
        "",
    ]
    if sweep:
        out += ["## Share of the copy ceiling", ""]
        out.append(fmt_table(["op", "dtype", "worst share", "at N", "median share"],
                             [(op_title(op), dt, f"{100 * w:.0f}%", n, f"{100 * m:.0f}%") for op, dt, w, n, m in share_summary(sweep)]))
        out += ["", "## Large batches (x about 512 MiB)", ""]
        for op in sorted({r["op"] for r in sweep}, key=op_order):
            out += [f"### {op_title(op)}", "", sweep_table([r for r in sweep if r["op"] == op]), ""]
    if small:
        out += ["## Small batches (per call, CUDA-graph replay, no L2 flush)", "",
                "Each sample replays a graph of back-to-back launches; the time is divided by the launch count.",
                "The copy column times a copy of the same bytes the same way.", "", small_batch_table(small), ""]
    if misaligned:
        out += ["## Misaligned rows (x one element off 16-byte alignment)", "",
                "As the large batches, with x (and the residual; in place also y and residual_out) starting one",
                "element past a 16-byte boundary. The plan does not depend on alignment (the same bits either way),",
                "so these rows run the checked forms of the same kernels (docs/performance.md, \"Misaligned long",
                "rows\").", "", misaligned_table(misaligned, sweep), ""]
    if shaped:
        out += ["## Forced kernel shapes (NORMKIT_BENCH_SHAPES=1)", "", shape_table(shaped), ""]
    if errors:
        out += ["## Benchmarks that failed", ""] + [f"- `{n}`: {m}" for n, m in errors] + [""]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(out))


def write_plot(path, meta, records):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = [r for r in records if r["kind"] == "sweep"]
    ops = sorted({r["op"] for r in sweep}, key=op_order)
    if not ops:
        return False
    # One subplot per op, PLOT_COLUMNS to a row.
    ncols = min(PLOT_COLUMNS, len(ops))
    nrows = math.ceil(len(ops) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols, 4.5 * nrows), sharey=True, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(ops):]:
        ax.set_visible(False)
    for ax, op in zip(flat, ops):
        rs = [r for r in sweep if r["op"] == op]
        for dtype in sorted({r["dtype"] for r in rs}, key=lambda d: order(op, d)):
            pts = sorted((r["N"], r["TBps"]) for r in rs if r["dtype"] == dtype)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=dtype, color=DTYPE_COLORS.get(dtype))
        # The ceiling is measured per byte count; the dtypes' counts differ only slightly, so draw their median.
        ceiling = defaultdict(list)
        for r in rs:
            ceiling[r["N"]].append(r["copy_TBps"])
        ns = sorted(ceiling)
        ax.plot(ns, [statistics.median(ceiling[n]) for n in ns], color="black", linestyle="--", label="copy ceiling")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n) for n in ns], rotation=60)
        ax.set_title(f"{op_title(op)} forward")
        ax.set_xlabel("N (row length)")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower left", fontsize=8)
        ax.yaxis.set_tick_params(labelleft=True)  # shared y, but every subplot keeps its numbers
    for row in axes:
        row[0].set_ylabel("TB/s (bytes moved / median time)")
    fig.suptitle(f"normkit on {meta['gpu']}, x about 512 MiB ({meta['commit']}, {meta['date']})", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="normkit_bench output (--benchmark_out=FILE --benchmark_out_format=json)")
    ap.add_argument("--md", default="docs/benchmarks.md", help="markdown to write (default: %(default)s)")
    ap.add_argument("--png", default="docs/benchmarks.png", help="plot to write (default: %(default)s)")
    ap.add_argument("--commit", help="commit hash for the header (default: the JSON's 'commit' context, else git)")
    ap.add_argument("--gpu", help="GPU name for the header (default: the JSON's 'gpu_name' context)")
    ap.add_argument("--date", help="date for the header (default: the JSON's 'date' context)")
    args = ap.parse_args()

    context, records, errors = load_runs(args.json)
    meta = {
        "date": args.date or context.get("date", "unknown"),
        "gpu": args.gpu or context.get("gpu_name", "unknown GPU"),
        "commit": args.commit or context.get("commit") or git_commit() or "unknown",
    }
    if not records:
        sys.exit(f"report.py: no successful benchmark in {args.json}")
    png_rel = os.path.relpath(os.path.abspath(args.png), os.path.dirname(os.path.abspath(args.md)))
    write_markdown(args.md, meta, records, errors, png_rel)
    wrote_png = write_plot(args.png, meta, records)
    print(f"wrote {args.md}" + (f" and {args.png}" if wrote_png else " (no sweep results: no plot)"))

    sweep = [r for r in records if r["kind"] == "sweep"]
    if sweep:
        print(f"\nshare of the copy ceiling ({meta['gpu']}):")
        print(f"{'op':<21} {'dtype':<6} {'worst':>7} {'at N':>8} {'median':>7}")
        for op, dtype, worst, n, median in share_summary(sweep):
            print(f"{op:<21} {dtype:<6} {100 * worst:>6.0f}% {n:>8} {100 * median:>6.0f}%")
    if errors:
        print(f"\n{len(errors)} benchmark(s) failed:", file=sys.stderr)
        for name, msg in errors:
            print(f"  {name}: {msg}", file=sys.stderr)


if __name__ == "__main__":
    main()
