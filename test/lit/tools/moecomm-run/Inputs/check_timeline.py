#!/usr/bin/env python3
"""Checks a moecomm-run --trace timeline against the run's --json report.

usage: check_timeline.py TRACE.json TIMELINE.png REPORT.json {exact|at-least}

- TRACE.json parses (json module) as Chrome trace-event JSON with one
  process per rank of the report (process_name metadata "rank R");
- every "X" event has ts >= 0 and dur >= 0;
- on each track (pid, tid) events nest or are disjoint, never partially
  overlap (1 ns of rounding allowed);
- each exchange stage of the report's plan ("stages": direction, stage)
  appears as an "exchange" event on every rank once per iteration (`exact`:
  the runtime called directly) or at least once per iteration (`at-least`:
  compiled graphs, whose layers and chunks run a stage several times);
- TIMELINE.png exists and starts with the PNG signature.
Prints "timeline ok: R ranks, N events" and exits 0, else prints the first
failure and exits 1.
"""
import collections
import json
import sys

EPS_US = 1e-3  # ts and dur are rounded to nanoseconds


def fail(message):
    print(f"check_timeline: {message}")
    sys.exit(1)


def main():
    trace_path, png_path, report_path, mode = sys.argv[1:5]
    with open(trace_path) as f:
        trace = json.load(f)
    with open(report_path) as f:
        report = json.load(f)
    events = trace["traceEvents"]
    ranks = report["ranks"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    if names != {r: f"rank {r}" for r in range(ranks)}:
        fail(f"processes {sorted(names.items())} are not ranks 0..{ranks - 1}")
    spans = [e for e in events if e["ph"] == "X"]
    tracks = collections.defaultdict(list)
    for e in spans:
        if not (e["ts"] >= 0 and e["dur"] >= 0):
            fail(f"negative ts or dur: {e}")
        if e["pid"] not in names:
            fail(f"event of no rank: {e}")
        tracks[(e["pid"], e["tid"])].append(e)
    for key, track in tracks.items():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []  # ends of the enclosing spans, innermost last
        for e in track:
            while open_ends and open_ends[-1] <= e["ts"] + EPS_US:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + EPS_US:
                fail(f"track {key}: {e} partially overlaps a span ending at "
                     f"{open_ends[-1]}")
            open_ends.append(end)
    exchanges = collections.Counter(
        (e["pid"], e["args"]["direction"], e["args"]["stage"])
        for e in spans if e["name"] == "exchange")
    iterations = report["iterations"]
    for r in range(ranks):
        for st in report["stages"]:
            n = exchanges[(r, st["direction"], st["stage"])]
            if n != iterations and (mode == "exact" or n < iterations):
                fail(f"rank {r}: {st['direction']} stage {st['stage']} "
                     f"exchanged {n} times in {iterations} iterations")
    with open(png_path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail(f"{png_path} is not a PNG")
    print(f"timeline ok: {ranks} ranks, {len(spans)} events")


if __name__ == "__main__":
    main()
