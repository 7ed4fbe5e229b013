#!/usr/bin/env python3
"""usage: same_dumps.py [--exact] DIR_A DIR_B
Checks that two --dump directories hold the same files with identical
dispatch/src/tokens_per_expert bits and combine within 2^-7 of each other
(strategies may round per-node partial sums differently, DESIGN.md §3);
with --exact every file, combine included, must be bit-identical."""
import os
import sys

import numpy as np

args = sys.argv[1:]
exact = args[:1] == ["--exact"]
a, b = args[-2], args[-1]
names = sorted(os.listdir(a))
if names != sorted(os.listdir(b)) or not names:
    sys.exit(f"different file lists: {names} vs {sorted(os.listdir(b))}")
for name in names:
    x, y = np.load(os.path.join(a, name)), np.load(os.path.join(b, name))
    if x.dtype != y.dtype or x.shape != y.shape:
        sys.exit(f"{name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
    if name.endswith(".combine.npy") and not exact:
        if x.size and np.max(np.abs(x - y)) > 2.0 ** -7:
            sys.exit(f"{name}: combine differs by {np.max(np.abs(x - y))}")
    elif x.tobytes() != y.tobytes():
        sys.exit(f"{name}: contents differ")
print(f"same: {len(names)} files")
