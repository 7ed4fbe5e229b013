#!/usr/bin/env python3
"""Properties of a generated moecomm-routing-v1 file (from --save-routing).

usage: routing_stats.py ROUTING.json CHECK [ARGS...]
  groups M G           every token's experts lie in at most M of G equal
                       contiguous expert groups
  proportional TRACE MODEL DOMAIN LAYER
                       (K = 1, E = the trace's expert count) each expert's
                       share of tokens is within max(10% relative, 4 binomial
                       standard deviations) of its share of the trace's load,
                       and the most and least used experts have the largest
                       and smallest load
  counts N0,N1,...     expert e fills exactly Ne slots
  top-share FRACTION   the most popular expert takes more than FRACTION of
                       all slots
  spread FRACTION      every expert's slot count is within FRACTION
                       (relative) of the mean
Prints "<check> ok" or the failure and exits 1.
"""
import json
import sys
from collections import Counter


def main():
    r = json.load(open(sys.argv[1]))
    check = sys.argv[2]
    E = r["num_experts"]
    slots = [e for rank in r["topk_idx"] for row in rank for e in row if e >= 0]
    counts = Counter(slots)
    total = len(slots)
    if check == "groups":
        M, G = int(sys.argv[3]), int(sys.argv[4])
        size = E // G
        for s, rank in enumerate(r["topk_idx"]):
            for t, row in enumerate(rank):
                used = {e // size for e in row if e >= 0}
                if len(used) > M:
                    sys.exit(f"rank {s} token {t} uses groups {sorted(used)}")
    elif check == "proportional":
        trace = json.load(open(sys.argv[3]))
        loads = trace["models"][sys.argv[4]]["domains"][sys.argv[5]]["layer" + sys.argv[6]]
        assert len(loads) == E and r["topk"] == 1
        # Relative to the largest load, so that loads near the double range
        # sum without overflow.
        loads = [x / max(loads) for x in loads]
        for e in range(E):
            want = loads[e] / sum(loads)
            got = counts[e] / total
            sigma = (want * (1 - want) / total) ** 0.5
            if abs(got - want) > max(0.1 * want, 4 * sigma):
                sys.exit(f"expert {e}: share {got:.4f}, trace share {want:.4f}")
        least = min(range(E), key=lambda e: counts[e])
        most = max(range(E), key=lambda e: counts[e])
        if (loads[least], loads[most]) != (min(loads), max(loads)):
            sys.exit(f"least/most used {least}/{most} have loads "
                     f"{loads[least]}/{loads[most]}, trace "
                     f"{min(loads)}/{max(loads)}")
    elif check == "counts":
        want = [int(n) for n in sys.argv[3].split(",")]
        got = [counts[e] for e in range(E)]
        if got != want:
            sys.exit(f"slots per expert {got}, expected {want}")
    elif check == "top-share":
        share = counts.most_common(1)[0][1] / total
        if share <= float(sys.argv[3]):
            sys.exit(f"top expert share {share:.3f}")
    elif check == "spread":
        mean = total / E
        for e in range(E):
            if abs(counts[e] - mean) > float(sys.argv[3]) * mean:
                sys.exit(f"expert {e}: {counts[e]} slots, mean {mean:.1f}")
    else:
        sys.exit(f"unknown check {check}")
    print(f"{check} ok")


if __name__ == "__main__":
    main()
