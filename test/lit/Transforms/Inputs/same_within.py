#!/usr/bin/env python3
"""usage: same_within.py A.out B.out --values N [--tolerance T]
Compares the printMemrefF32 output of two runs (MLIR's runner utilities:
a header line per memref, then its values): both must hold the same N
values, and max |a - b| / max |a| must be at most T (default 1e-5: f32
rounding of sums in a different order, plus the 6 significant digits the
printer keeps). Prints the figure; exits 1 with one line otherwise."""
import argparse
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("a")
parser.add_argument("b")
parser.add_argument("--values", type=int, required=True)
parser.add_argument("--tolerance", type=float, default=1e-5)
args = parser.parse_args()

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")


def values(path):
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith("Unranked Memref"):
                out += [float(x) for x in NUMBER.findall(line)]
    return out


a, b = values(args.a), values(args.b)
if len(a) != args.values or len(b) != args.values:
    sys.exit(f"expected {args.values} values, got {len(a)} and {len(b)}")
# Relative to run A's largest magnitude; absolute when A is all zeros.
scale = max(abs(x) for x in a) or 1.0
worst = max(abs(x - y) for x, y in zip(a, b)) / scale
if not worst <= args.tolerance:
    sys.exit(f"max relative difference {worst:.3g} > {args.tolerance:g}")
print(f"{len(a)} values, max relative difference {worst:.3g} <= {args.tolerance:g}")
