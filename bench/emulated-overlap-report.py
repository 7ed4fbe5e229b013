#!/usr/bin/env python3
"""The table of bench/emulated-overlap.sh.

Usage: emulated-overlap-report.py DIR CHUNKS TOPOLOGY RATE

Reads DIR/<layer>-c1.json and DIR/<layer>-c<CHUNKS>.json (moecomm-run
reports, docs/moecomm-run.md) for the layers ffn and identity, and writes
DIR/table.md: per layer the median and minimum of `iteration_seconds`
(per iteration, the slowest rank) without the first iteration (the
warm-up), for chunks=1 and chunks=CHUNKS, and their ratio of medians.
Exit 2 with one line when a report is missing, unverified or has fewer
than two iterations.
"""

import json
import statistics
import sys


def fail(message):
    sys.stderr.write(f"emulated-overlap-report: {message}\n")
    sys.exit(2)


def timed(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")
    if not report.get("verified"):
        fail(f"{path}: the run did not verify")
    seconds = report.get("iteration_seconds") or []
    if len(seconds) < 2:
        fail(f"{path}: needs at least two iterations, got {len(seconds)}")
    return seconds[1:]


def main():
    if len(sys.argv) != 5:
        fail("usage: emulated-overlap-report.py DIR CHUNKS TOPOLOGY RATE")
    out, chunks, topology, rate = sys.argv[1:]
    rows = [
        f"Emulated cluster {topology} at {rate}, DeepSeek-V3 hidden/top-k, "
        f"hierarchical, one process per rank; times per iteration (slowest "
        f"rank), warm-up left out.",
        "",
        f"| layer | chunks=1 median ms | min ms | chunks={chunks} median ms "
        f"| min ms | chunks={chunks} / chunks=1 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for layer in ("ffn", "identity"):
        one = timed(f"{out}/{layer}-c1.json")
        many = timed(f"{out}/{layer}-c{chunks}.json")
        m1, mc = statistics.median(one), statistics.median(many)
        rows.append(
            f"| {layer} | {m1 * 1e3:.1f} | {min(one) * 1e3:.1f} | "
            f"{mc * 1e3:.1f} | {min(many) * 1e3:.1f} | {mc / m1:.3f} |")
    with open(f"{out}/table.md", "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
