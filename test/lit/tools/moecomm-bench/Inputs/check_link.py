#!/usr/bin/env python3
"""Checks moecomm-bench's link-limited columns against numbers computed here
from the routing file and the JSON's own byte counts.

usage: check_link.py ROUTING_JSON BENCH_JSON BENCH_CSV RATE_BITS_PER_S

For every cell:
- node_inter_node_bytes[n] = the payload the cell's ranks of node n send to
  other nodes + the layout metadata computed here from the routing file
  (per rank: 8*W bytes of pair counts to every rank of another node, for
  auto also 8*(W+N), and 24 bytes per (token, expert) pair whose expert is
  on another node); the nodes' payload sums to inter_node_bytes;
- link.link_limited_s == max(node_inter_node_bytes) / (rate / 8), exactly,
  and the same for the baseline's per-node bytes (no metadata; they sum to
  baseline_inter_node_bytes);
- x_link == measured.total_s / link_limited_s (baseline: baseline_s);
- measured.total_min_s <= measured.total_s;
- the CSV's columns carry the same numbers.
Prints "link ok: C cells, M measured, N nodes" or the first problem (exit 1).
"""
import csv
import json
import sys


def main():
    routing = json.load(open(sys.argv[1]))
    bench = json.load(open(sys.argv[2]))
    rows = list(csv.DictReader(open(sys.argv[3])))
    rate = float(sys.argv[4])
    W, G, E = routing["ranks"], routing["ranks_per_node"], routing["num_experts"]
    N, L = W // G, E // W
    node = lambda r: r // G
    # Per rank: pairs whose expert's rank is on another node.
    remote_pairs = [sum(1 for row in routing["topk_idx"][r] for e in row
                        if e >= 0 and node(e // L) != node(r))
                    for r in range(W)]

    def metadata(rank, auto):
        b = (W - G) * 8 * W + 24 * remote_pairs[rank]
        return b + ((W - G) * 8 * (W + N) if auto else 0)

    if bench["link_rate_bits_per_s"] != rate:
        sys.exit("link_rate_bits_per_s %s != %s" %
                 (bench["link_rate_bits_per_s"], rate))
    if len(rows) != len(bench["cells"]):
        sys.exit("CSV rows != JSON cells")
    measured = 0
    for cell, row in zip(bench["cells"], rows):
        label = "%s %s" % (cell["dtype"], cell["strategy"])
        nodes = cell["node_inter_node_bytes"]
        meta = [sum(metadata(r, cell["strategy"] == "auto")
                    for r in range(n * G, (n + 1) * G)) for n in range(N)]
        payload = [b - m for b, m in zip(nodes, meta)]
        if len(nodes) != N or sum(payload) != cell["inter_node_bytes"] or \
                min(payload) < 0:
            sys.exit("%s: per-node bytes %s minus metadata %s do not sum to "
                     "the inter-node payload %d" %
                     (label, nodes, meta, cell["inter_node_bytes"]))
        base = cell["baseline_node_inter_node_bytes"]
        if sum(base) != sum(cell["baseline_inter_node_bytes"].values()):
            sys.exit("%s: baseline per-node bytes %s do not sum to %s" %
                     (label, base, cell["baseline_inter_node_bytes"]))
        link = cell["link"]
        want = max(nodes) / (rate / 8)
        want_base = max(base) / (rate / 8)
        if link["link_limited_s"] != want or \
                link["baseline_link_limited_s"] != want_base:
            sys.exit("%s: link_limited_s %r / %r, computed %r / %r" %
                     (label, link["link_limited_s"],
                      link["baseline_link_limited_s"], want, want_base))
        if float(row["link_limited_s"]) != want or \
                int(row["node_inter_node_bytes_max"]) != max(nodes) or \
                float(row["baseline_link_limited_s"]) != want_base:
            sys.exit("%s: the CSV's link columns differ from the JSON" % label)
        m = cell["measured"]
        if m is None:
            if link["x_link"] is not None or row["x_link"] != "":
                sys.exit("%s: x_link without a measurement" % label)
            continue
        measured += 1
        if link["x_link"] != m["total_s"] / want or \
                link["baseline_x_link"] != m["baseline_s"] / want_base:
            sys.exit("%s: x_link %r, computed %r" %
                     (label, link["x_link"], m["total_s"] / want))
        if not 0 < m["total_min_s"] <= m["total_s"] or \
                not 0 < m["baseline_min_s"] <= m["baseline_s"]:
            sys.exit("%s: min %r is not in (0, median %r]" %
                     (label, m["total_min_s"], m["total_s"]))
        if float(row["measured_total_min_s"]) != m["total_min_s"]:
            sys.exit("%s: the CSV's min differs from the JSON" % label)
    print("link ok: %d cells, %d measured, %d nodes" %
          (len(rows), measured, N))


if __name__ == "__main__":
    main()
