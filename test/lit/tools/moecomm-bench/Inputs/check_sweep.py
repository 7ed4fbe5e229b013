#!/usr/bin/env python3
"""Checks a moecomm-bench run from its CSV and JSON files.

usage: check_sweep.py CSV JSON [--measured-max-ranks N] [--baseline KIND]
                      [--cells N]

- the CSV has the documented columns and one row per JSON cell, with the
  same numbers;
- every cell with W <= N (and only those) was measured, and its runtime
  counters (measured.counters) equal the counted bytes and messages (bytes,
  messages) for both directions and link classes - counting == measured;
- the measured baseline kind is KIND, measured times and ratios are
  positive;
- hierarchical inter-node bytes equal the lower bound, and no strategy sends
  fewer inter-node bytes than it;
- auto's strategy_used is the choice under the auto preset, is never slower
  (modelled) than the best fixed strategy by more than 5%, and when measured
  is what the runtime chose.
Prints "sweep ok: C cells, M measured" and exits 0, or the first problem and
exits 1.
"""
import argparse
import csv
import json
import sys

CSV_KEYS = [
    "sweep", "config", "model", "hidden", "config_experts", "experts", "topk",
    "nodes", "ranks_per_node", "ranks", "tokens_per_rank", "seed", "routing",
    "routing_effective", "dtype", "strategy", "strategy_used",
    "auto_link_preset", "dispatch_row_bytes", "combine_row_bytes", "dispatch_intra_node_bytes",
    "dispatch_inter_node_bytes", "combine_intra_node_bytes",
    "combine_inter_node_bytes", "dispatch_intra_node_messages",
    "dispatch_inter_node_messages", "combine_intra_node_messages",
    "combine_inter_node_messages", "dispatch_inter_node_lower_bound_bytes",
    "combine_inter_node_lower_bound_bytes", "inter_node_vs_lower_bound",
    "dispatch_inter_node_vs_baseline", "inter_node_vs_baseline",
    "dispatch_stages", "combine_stages",
    "h200-dgx_modelled_dispatch_stage0_s", "h200-dgx_modelled_total_s",
    "h200-dgx_modelled_vs_baseline", "h200-dgx_auto_choice",
    "h200-dgx_auto_gap", "gb200-nvl72_modelled_total_s",
    "h100-dgx_modelled_total_s", "measured_backend", "measured_total_s",
    "baseline_kind", "baseline_s", "measured_vs_baseline",
    "counters_dispatch_inter_node_bytes", "counters_match",
    "runtime_strategy", "payload_max_err", "payload_ok",
]
JSON_CELL_KEYS = [
    "sweep", "config", "model", "hidden", "num_experts", "topk", "nodes",
    "ranks_per_node", "ranks", "tokens_per_rank", "routing", "dtype",
    "strategy", "strategy_used", "auto_link_preset", "row_bytes", "bytes", "messages",
    "inter_node_bytes", "inter_node_lower_bound_bytes",
    "baseline_inter_node_bytes", "stages", "modelled", "measured",
]


def fail(msg):
    print("check_sweep: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("json")
    ap.add_argument("--measured-max-ranks", type=int, default=0)
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--cells", type=int, default=None)
    a = ap.parse_args()

    with open(a.json) as f:
        d = json.load(f)
    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f))

    for k in ["format", "command", "backend", "baseline", "presets",
              "auto_preset", "cells", "skipped", "auto_check", "failures",
              "plots", "seconds"]:
        if k not in d:
            fail(f"JSON lacks '{k}'")
    if d["format"] != "moecomm-bench-v1":
        fail(f"format {d['format']}")
    for k in CSV_KEYS:
        if k not in header:
            fail(f"CSV lacks column '{k}'")
    cells = d["cells"]
    if len(rows) != len(cells):
        fail(f"{len(rows)} CSV rows, {len(cells)} JSON cells")
    if a.cells is not None and len(cells) != a.cells:
        fail(f"{len(cells)} cells, expected {a.cells}")
    if d["failures"]:
        fail(f"the run reports failures: {d['failures']}")

    measured = 0
    for i, (c, r) in enumerate(zip(cells, rows)):
        where = (f"cell {i} ({c['config']} {c['nodes']}x{c['ranks_per_node']} "
                 f"{c['routing']} {c['dtype']} {c['strategy']})")
        for k in JSON_CELL_KEYS:
            if k not in c:
                fail(f"{where}: JSON lacks '{k}'")
        # CSV and JSON agree.
        for direction in ("dispatch", "combine"):
            for link in ("intra_node", "inter_node"):
                if int(r[f"{direction}_{link}_bytes"]) != c["bytes"][direction][link]:
                    fail(f"{where}: CSV and JSON bytes differ")
                if int(r[f"{direction}_{link}_messages"]) != c["messages"][direction][link]:
                    fail(f"{where}: CSV and JSON messages differ")
        if r["strategy_used"] != c["strategy_used"]:
            fail(f"{where}: CSV and JSON strategy_used differ")
        if c["ranks"] != c["nodes"] * c["ranks_per_node"]:
            fail(f"{where}: ranks != nodes * ranks_per_node")
        if c["num_experts"] % c["ranks"]:
            fail(f"{where}: E % W != 0")

        # Lower bound.
        lb = c["inter_node_lower_bound_bytes"]
        for direction in ("dispatch", "combine"):
            inter = c["bytes"][direction]["inter_node"]
            if inter < lb[direction]:
                fail(f"{where}: {direction} inter-node bytes {inter} below "
                     f"the lower bound {lb[direction]}")
            if c["strategy_used"] == "hierarchical" and inter != lb[direction]:
                fail(f"{where}: hierarchical {direction} inter-node bytes "
                     f"{inter} != lower bound {lb[direction]}")

        # Auto.
        m = c["modelled"][c["auto_link_preset"]]
        if c["strategy"] == "auto":
            if c["strategy_used"] != m["auto_choice"]:
                fail(f"{where}: strategy_used {c['strategy_used']} is not the "
                     f"auto choice {m['auto_choice']}")
            for name, p in c["modelled"].items():
                if p["applies"] and p["total_s"] > 1.05 * p["best_fixed_total_s"]:
                    fail(f"{where} [{name}]: auto is more than 5% slower than "
                         f"{p['best_fixed']}")
        elif c["strategy_used"] != c["strategy"]:
            fail(f"{where}: a fixed strategy reports strategy_used "
                 f"{c['strategy_used']}")
        for name, p in c["modelled"].items():
            if abs(sum(p["dispatch_stage_s"]) - p["dispatch_s"]) > 1e-12 or \
               abs(sum(p["combine_stage_s"]) - p["combine_s"]) > 1e-12:
                fail(f"{where} [{name}]: stage times do not add up")
            if len(p["dispatch_stage_s"]) != len(c["stages"]["dispatch"]):
                fail(f"{where} [{name}]: one modelled time per stage expected")

        # Measured: exactly the small clusters; counting == measured.
        want_measured = c["ranks"] <= a.measured_max_ranks
        got = c["measured"]
        if want_measured != (got is not None):
            fail(f"{where}: measured is {got is not None}, expected "
                 f"{want_measured}")
        if got is None:
            if r["measured_total_s"] != "":
                fail(f"{where}: CSV has a measured time for a counted cell")
            continue
        measured += 1
        for direction in ("dispatch", "combine"):
            for link in ("intra_node", "inter_node"):
                counted = c["bytes"][direction][link]
                runtime = got["counters"]["bytes"][direction][link]
                if counted != runtime:
                    fail(f"{where}: {direction} {link} bytes: counted "
                         f"{counted}, runtime counters {runtime}")
                counted = c["messages"][direction][link]
                runtime = got["counters"]["messages"][direction][link]
                if counted != runtime:
                    fail(f"{where}: {direction} {link} messages: counted "
                         f"{counted}, runtime counters {runtime}")
        if not got["counters_match"] or not got["payload_ok"]:
            fail(f"{where}: counters_match / payload_ok false")
        if got["runtime_strategy"] != c["strategy_used"]:
            fail(f"{where}: the runtime ran {got['runtime_strategy']}, the "
                 f"report says {c['strategy_used']}")
        if a.baseline and got["baseline_kind"] != a.baseline:
            fail(f"{where}: baseline {got['baseline_kind']}")
        if not (got["total_s"] > 0 and got["baseline_s"] > 0 and
                got["vs_baseline"] > 0):
            fail(f"{where}: non-positive measured time or ratio")
        if abs(got["vs_baseline"] - got["total_s"] / got["baseline_s"]) > 1e-9 * got["vs_baseline"]:
            fail(f"{where}: vs_baseline is not total_s / baseline_s")
    print(f"sweep ok: {len(cells)} cells, {measured} measured")


if __name__ == "__main__":
    main()
