#!/usr/bin/env python3
"""Compares the combine outputs of a per-expert graph and of its raised form
(moecomm-raise-dispatch), both run by `moecomm-run --dump` on one
moecomm-routing-v1 file with identity experts, with NumPy only: per element,
|raised - original| must be within docs/runtime.md's combine bound for the
two-stage hierarchical strategy (L = 3, the loosest),

    ((L + 1) u + 3 K 2^-24) A + (L + 1 + 3 K) eta,  A = sum over kept k of |w_k x|

(u and eta of the dtype), the original being the reference (its unpermute
sums in f32 in slot order and rounds once, as the oracle does).

With OUTPUT grad_x (a training step's dump, grad_out = x), the rows summed
are w_k x rounded once to the dtype before the exchange, in both programs
alike: the same bound over those rows, A taken as (1 + u) A.

usage: raised_within_bound.py ROUTING.json ORIGINAL_DIR RAISED_DIR [OUTPUT]
(OUTPUT: combine, the default, or grad_x). Prints "within bound: ..." and
exits 0, or says where it is not and exits 1.
"""
import json
import os
import sys

import numpy as np

from check_dump import payload

# Unit roundoff and smallest subnormal per dtype (docs/runtime.md).
ROUNDING = {"bf16": (2.0 ** -8, 2.0 ** -133), "f32": (2.0 ** -24, 2.0 ** -149)}
ROUNDINGS = 3


def main():
    routing_path, original, raised = sys.argv[1:4]
    output = sys.argv[4] if len(sys.argv) > 4 else "combine"
    if output not in ("combine", "grad_x"):
        sys.exit(f"OUTPUT must be combine or grad_x, got {output}")
    r = json.load(open(routing_path))
    W, K, H = r["ranks"], r["topk"], r["hidden"]
    u, eta = ROUNDING[r.get("dtype") or "bf16"]
    worst = 0.0
    for rank in range(W):
        name = f"rank{rank}.{output}.npy"
        a = np.load(os.path.join(original, name))
        b = np.load(os.path.join(raised, name))
        idx = np.array(r["topk_idx"][rank], dtype=np.int64).reshape(-1, K)
        w = np.array(r["topk_weights"][rank], dtype=np.float32).reshape(-1, K)
        if a.shape != (len(idx), H) or b.shape != a.shape:
            sys.exit(f"{name}: shapes {a.shape} and {b.shape}, want {(len(idx), H)}")
        x = np.abs(payload(rank, len(idx), H))
        A = (np.abs(w) * (idx >= 0)).sum(axis=1)[:, None] * x
        if output == "grad_x":
            A = (1 + u) * A
        bound = ((ROUNDINGS + 1) * u + 3 * K * 2.0 ** -24) * A + \
            (ROUNDINGS + 1 + 3 * K) * eta
        err = np.abs(b.astype(np.float64) - a.astype(np.float64))
        if np.any(err > bound):
            t, h = np.unravel_index(np.argmax(err - bound), err.shape)
            sys.exit(f"{name}: token {t} column {h}: {b[t, h]} vs {a[t, h]}, "
                     f"bound {bound[t, h]}")
        worst = max(worst, float(np.max(err / bound)) if err.size else 0.0)
    print(f"{output} within bound: {W} ranks, worst error {worst:.3f} of the bound")


main()
