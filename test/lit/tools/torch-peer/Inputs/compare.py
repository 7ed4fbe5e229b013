#!/usr/bin/env python3
"""Compares a torch_dispatcher.py report with moecomm-bench's JSON on the
same routing file: the peer verified, and its inter-node row bytes per
direction and per node equal the per_expert cell's with a bf16 wire (fp16
rows have bf16's 2*H bytes; the peer's split sizes are its own metadata and
moecomm-bench's per-node counts include the layout's, so per node the peer's
rows are compared with the payload bytes only).

usage: compare.py PEER_JSON BENCH_JSON
Prints "peer ok: ..." and exits 0, or the first difference and exits 1.
"""
import json
import sys


def main():
    peer = json.load(open(sys.argv[1]))
    bench = json.load(open(sys.argv[2]))
    cells = [c for c in bench["cells"]
             if c["strategy"] == "per_expert" and c["dtype"] == "bf16"]
    if len(cells) != 1:
        sys.exit("expected one per_expert bf16 cell, got %d" % len(cells))
    cell = cells[0]
    problems = []
    if peer["format"] != "moecomm-torch-peer-v1" or not peer["verified"]:
        problems.append("the peer did not verify")
    if len(peer["seconds"]) != peer["iterations"] or peer["min_s"] <= 0:
        problems.append("the peer's times are incomplete")
    inter = peer["inter_node_bytes"]
    for direction in ("dispatch", "combine"):
        want = cell["bytes"][direction]["inter_node"]
        if inter[direction] != want:
            problems.append("%s inter-node bytes: peer %d, moecomm-bench %d" %
                            (direction, inter[direction], want))
    G, W = peer["ranks_per_node"], peer["ranks"]
    L = peer["num_experts"] // W
    split_bytes = (W - G) * L * 8  # per rank, to the ranks of other nodes
    rows = [b - G * split_bytes for b in peer["node_inter_node_bytes"]]
    if rows != cell["baseline_node_inter_node_bytes"]:
        problems.append("per-node row bytes: peer %s, moecomm-bench %s" %
                        (rows, cell["baseline_node_inter_node_bytes"]))
    if problems:
        sys.exit(problems[0])
    print("peer ok: %d ranks, %d per node, verified, %d iterations, dispatch "
          "%d B combine %d B inter-node == moecomm-bench per_expert bf16" %
          (W, G, peer["iterations"], inter["dispatch"], inter["combine"]))


if __name__ == "__main__":
    main()
