#!/usr/bin/env python3
"""Merges bench/emulated-sweep.sh's raw outputs into one CSV and draws its
plots with gnuplot (also the regeneration command: run it again on DIR).

usage: bench/emulated-sweep-plot.py DIR [--gnuplot PROGRAM]

Reads DIR/NxG/RATE/bench.json (moecomm-bench --link-rate) and
DIR/NxG/RATE/peer.json (bench/peers/torch_dispatcher.py) and writes:
- DIR/sweep.csv: one row per (topology, rate, implementation, wire dtype):
  median and min seconds of one iteration (layout + dispatch + combine for
  moecomm; the two all-to-alls for MPI_Alltoallv; the whole dispatcher step
  for torch), the link-limited seconds (the slowest node's inter-node bytes
  / rate; moecomm's include its layout metadata, torch's its split sizes),
  x link = median / link-limited, those bytes, and whether it verified;
- DIR/time-vs-rate-NxG.png per topology: median time against the link rate
  (log-log), bf16 and fp8 wire side by side, the link-limited times dashed
  in each line's colour;
- DIR/time-vs-nodes-1gbit.png when two or more topologies were measured at
  1 Gbit/s: median time against the node count, link-limited dashed;
- DIR/table.md: the rows as the Markdown table of docs/BENCHMARKS.md (per
  topology and implementation, one column per rate: median (min) ms and
  x link);
- DIR/plots.gp and DIR/plot-data/: the gnuplot script and its data.
Exit status: 0, 2 bad usage or no results (one line), 3 gnuplot failed.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

COLUMNS = ["topology", "nodes", "ranks_per_node", "rate", "rate_bits_per_s",
           "impl", "dtype", "median_s", "min_s", "link_limited_s", "x_link",
           "node_inter_node_bytes_max", "iterations", "verified"]
# Line colours and point types per implementation (fixed across plots).
STYLES = {"per_expert": ("#1f77b4", 4), "flat": ("#ff7f0e", 6),
          "hierarchical": ("#2ca02c", 7), "MPI_Alltoallv": ("#d62728", 8),
          "torch": ("#9467bd", 10)}


def die(status, message):
    sys.stderr.write("emulated-sweep-plot: %s\n" % message)
    sys.exit(status)


def rows_of(topology, rate, bench, peer):
    """The CSV rows of one (topology, rate)."""
    nodes, rpn = (int(v) for v in topology.split("x"))
    bps = bench["link_rate_bits_per_s"]
    base = {"topology": topology, "nodes": nodes, "ranks_per_node": rpn,
            "rate": rate, "rate_bits_per_s": bps}
    rows = []
    baseline = None
    unmeasured = [c for c in bench["cells"] if c["measured"] is None]
    if unmeasured or bps is None:
        die(2, "%s at %s: %d of %d cells were not measured or no --link-rate "
            "was given (see its bench.txt)" % (topology, rate,
                                               len(unmeasured),
                                               len(bench["cells"])))
    for c in bench["cells"]:
        m, link = c["measured"], c["link"]
        rows.append(dict(base, impl=c["strategy"], dtype=c["dtype"],
                         median_s=m["total_s"], min_s=m["total_min_s"],
                         link_limited_s=link["link_limited_s"],
                         x_link=link["x_link"],
                         node_inter_node_bytes_max=max(
                             c["node_inter_node_bytes"]),
                         iterations=m["iterations"],
                         verified=int(m["payload_ok"] and
                                      m["counters_match"])))
        baseline = baseline or dict(
            base, impl=m["baseline_kind"], dtype="bf16",
            median_s=m["baseline_s"], min_s=m["baseline_min_s"],
            link_limited_s=link["baseline_link_limited_s"],
            x_link=link["baseline_x_link"],
            node_inter_node_bytes_max=max(
                c["baseline_node_inter_node_bytes"]),
            iterations=m["iterations"], verified=1)
    if baseline:
        rows.append(baseline)
    if peer:
        most = max(peer["node_inter_node_bytes"])
        limit = most / (bps / 8)
        rows.append(dict(base, impl="torch", dtype=peer["dtype"],
                         median_s=peer["median_s"], min_s=peer["min_s"],
                         link_limited_s=limit,
                         x_link=peer["median_s"] / limit if limit else "",
                         node_inter_node_bytes_max=most,
                         iterations=peer["iterations"],
                         verified=int(peer["verified"])))
    return rows


def series(rows, key, wire):
    """{impl: [(x, median ms, link ms)]} of the rows for a panel: moecomm's
    strategies with this wire dtype, and the peers (they send bf16/fp16
    rows whatever the panel)."""
    out = {}
    for r in rows:
        if r["impl"] in ("per_expert", "flat", "hierarchical") and \
                r["dtype"] != wire:
            continue
        out.setdefault(r["impl"], []).append(
            (key(r), r["median_s"] * 1e3, r["link_limited_s"] * 1e3))
    return {k: sorted(v) for k, v in out.items()}


def panel(gp, data_dir, name, title, xlabel, data, logx):
    """Writes one panel's data files and its gnuplot `plot` command."""
    gp.append("set title %s" % json.dumps(title))
    gp.append("set xlabel %s" % json.dumps(xlabel))
    gp.append("set ylabel 'ms per iteration (median)'")
    gp.append("set logscale xy" if logx else "unset logscale; set logscale y")
    # Node counts are few and integral: a tick at each, a margin around them.
    xs = sorted({x for points in data.values() for x, _, _ in points})
    gp.append("set xtics autofreq; set offsets 0, 0, 0, 0" if logx else
              "set xtics (%s); set offsets graph 0.05, graph 0.05, 0, 0" %
              ", ".join("%r" % x for x in xs))
    parts = []
    for impl in sorted(data, key=lambda k: list(STYLES).index(k)
                       if k in STYLES else 99):
        path = os.path.join(data_dir, "%s-%s.dat" % (name, impl))
        with open(path, "w") as f:
            for x, t, link in data[impl]:
                f.write("%r %r %r\n" % (x, t, link))
        colour, point = STYLES.get(impl, ("#000000", 1))
        label = impl if impl in ("MPI_Alltoallv", "torch") else "moecomm " + impl
        parts.append("%s using 1:2 with linespoints lw 2 pt %d lc rgb '%s' "
                     "title %s" % (json.dumps(path), point, colour,
                                   json.dumps(label)))
        parts.append("%s using 1:3 with lines dt 2 lw 1 lc rgb '%s' notitle"
                     % (json.dumps(path), colour))
    gp.append("plot " + ", \\\n     ".join(parts))


def table(rows):
    """The Markdown table of `rows`: a row per (topology, implementation,
    wire), a column per rate."""
    rates = sorted({(r["rate_bits_per_s"], r["rate"]) for r in rows})
    keys = []
    for r in rows:
        k = (r["nodes"], r["ranks_per_node"], r["topology"], r["impl"],
             r["dtype"])
        if k not in keys:
            keys.append(k)
    order = list(STYLES)
    keys.sort(key=lambda k: (k[0], k[1], k[4] == "fp8",
                             order.index(k[3]) if k[3] in order else 99))
    out = ["| topology | impl | wire | " + " | ".join(
        "%s: median (min) ms, x link" % name for _, name in rates) + " |",
        "|---|---|---|" + "---|" * len(rates)]
    for k in keys:
        cells = []
        for bits, _ in rates:
            hit = [r for r in rows if (r["nodes"], r["ranks_per_node"],
                                       r["topology"], r["impl"],
                                       r["dtype"]) == k and
                   r["rate_bits_per_s"] == bits]
            x = hit[0]["x_link"] if hit else None
            cells.append("%.0f (%.0f), %s" % (
                hit[0]["median_s"] * 1e3, hit[0]["min_s"] * 1e3,
                "%.2fx" % x if isinstance(x, (int, float)) else "-")
                if hit else "")
        out.append("| %s | %s | %s | %s |" % (k[2], k[3], k[4],
                                              " | ".join(cells)))
    return "\n".join(out) + "\n"


def load(path):
    """The JSON document at `path` (exit 2, one line, when it is not one)."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        die(2, "%s: cannot read: %s" % (path, e.strerror))
    except ValueError as e:
        die(2, "%s: malformed JSON: %s" % (path, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--gnuplot", default="gnuplot")
    args = ap.parse_args()
    top = args.dir
    rows = []
    for topology in sorted(os.listdir(top) if os.path.isdir(top) else []):
        tdir = os.path.join(top, topology)
        if not os.path.isdir(tdir) or \
                not re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", topology):
            continue
        for rate in sorted(os.listdir(tdir)):
            bench_path = os.path.join(tdir, rate, "bench.json")
            if not os.path.isfile(bench_path):
                continue
            peer_path = os.path.join(tdir, rate, "peer.json")
            bench = load(bench_path)
            peer = load(peer_path) if os.path.isfile(peer_path) else None
            try:
                rows += rows_of(topology, rate, bench, peer)
            except (KeyError, IndexError, TypeError, ValueError) as e:
                die(2, "%s at %s: bench.json or peer.json is not moecomm-bench "
                    "--link-rate / torch_dispatcher.py output (%s: %s)" %
                    (topology, rate, type(e).__name__, e))
    if not rows:
        die(2, "no DIR/NxG/RATE/bench.json under %s" % top)
    rows.sort(key=lambda r: (r["nodes"], r["ranks_per_node"],
                             r["rate_bits_per_s"], r["impl"], r["dtype"]))
    with open(os.path.join(top, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(top, "table.md"), "w") as f:
        f.write(table(rows))

    data_dir = os.path.join(top, "plot-data")
    os.makedirs(data_dir, exist_ok=True)
    gp = ["set terminal pngcairo size 1300,520 noenhanced font 'sans,10'",
          "set key top right", "set grid"]
    pngs = []
    topologies = sorted({r["topology"] for r in rows},
                        key=lambda t: tuple(int(v) for v in t.split("x")))
    for topology in topologies:
        mine = [r for r in rows if r["topology"] == topology]
        png = os.path.join(top, "time-vs-rate-%s.png" % topology)
        gp += ["set output %s" % json.dumps(png),
               "set multiplot layout 1,2 title %s" % json.dumps(
                   "measured on the emulated cluster, %s nodes x ranks, "
                   "DeepSeek-V3 shapes; dashed: link-limited" % topology)]
        for wire in ("bf16", "fp8"):
            panel(gp, data_dir, "rate-%s-%s" % (topology, wire),
                  "moecomm %s wire vs peers" % wire,
                  "link rate per node, Gbit/s",
                  series(mine, lambda r: r["rate_bits_per_s"] / 1e9, wire),
                  True)
        gp += ["unset multiplot", "unset output"]
        pngs.append(png)
    at1 = [r for r in rows if r["rate_bits_per_s"] == 1e9]
    if len({r["topology"] for r in at1}) >= 2:
        png = os.path.join(top, "time-vs-nodes-1gbit.png")
        gp += ["set output %s" % json.dumps(png),
               "set multiplot layout 1,2 title %s" % json.dumps(
                   "measured at 1 Gbit/s per node, DeepSeek-V3 shapes; "
                   "dashed: link-limited")]
        for wire in ("bf16", "fp8"):
            panel(gp, data_dir, "nodes-%s" % wire,
                  "moecomm %s wire vs peers" % wire, "nodes",
                  series(at1, lambda r: r["nodes"], wire), False)
        gp += ["unset multiplot", "unset output"]
        pngs.append(png)
    script = os.path.join(top, "plots.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    try:
        done = subprocess.run([args.gnuplot, script], capture_output=True,
                              text=True)
    except OSError as e:
        die(3, "cannot run %s: %s" % (args.gnuplot, e.strerror))
    if done.returncode != 0:
        die(3, "gnuplot failed on %s: %s" % (
            script, (done.stderr.strip().splitlines() or ["?"])[-1]))
    print("emulated-sweep-plot: %s (%d rows), %s" % (
        os.path.join(top, "sweep.csv"), len(rows), ", ".join(pngs)))


if __name__ == "__main__":
    main()
