#!/usr/bin/env python3
"""Independent check of `moecomm-run --dump DIR` against a moecomm-routing-v1
file, with NumPy only (no moecomm code): recomputes DESIGN.md §8's payload,
the expert-major row order, capacity drops, tokens_per_expert and the weighted
combine of identity experts, and compares every file (name, shape, dtype and
contents).

usage: check_dump.py ROUTING.json DUMP_DIR
Prints "dump ok: ..." and exits 0, or prints what differs and exits 1.
"""
import json
import os
import sys

import numpy as np

# The largest dispatch error of each FP8 wire dtype for |x| <= 1 (see the
# dispatch check below).
FP8_ERROR = {"fp8": 2.0 ** -4, "fp8_e4m3_ue8m0": 2.0 ** -4, "mxfp8": 2.0 ** -3}


def payload(rank, tokens, hidden):
    t = np.arange(tokens, dtype=np.int64)[:, None]
    h = np.arange(hidden, dtype=np.int64)[None, :]
    return (((rank * 977 + t * 131 + h * 7) % 255) - 127).astype(np.float32) / 128


def main():
    routing_path, dump = sys.argv[1], sys.argv[2]
    r = json.load(open(routing_path))
    W, E, K, H = r["ranks"], r["num_experts"], r["topk"], r["hidden"]
    dtype = r.get("dtype") or "bf16"
    cap = r.get("capacity") or 0
    L = E // W
    idx = r["topk_idx"]
    wts = r.get("topk_weights")

    def weight(s, t, k):
        return 1.0 if wts is None else float(np.float32(wts[s][t][k]))

    # Incoming (source rank, token, expert, slot) pairs per destination, in
    # the drop order of DESIGN.md §3: kept first by (source rank, token,
    # expert id); the latest are dropped beyond the capacity.
    incoming = [[] for _ in range(W)]
    for s in range(W):
        for t, row in enumerate(idx[s]):
            for k, e in enumerate(row):
                if e >= 0:
                    incoming[e // L].append((s, t, e, k))
    kept = set()
    for d in range(W):
        pairs = sorted(incoming[d], key=lambda p: (p[0], p[1], p[2]))
        if cap:
            pairs = pairs[:cap]
        kept.update((p[0], p[1], p[3]) for p in pairs)

    errors = []
    files = 0
    for d in range(W):
        def load(name, shape, want_dtype):
            nonlocal files
            path = os.path.join(dump, f"rank{d}.{name}.npy")
            a = np.load(path)
            files += 1
            if a.dtype != want_dtype:
                errors.append(f"{path}: dtype {a.dtype}, expected {want_dtype}")
            if a.shape != shape:
                errors.append(f"{path}: shape {a.shape}, expected {shape}")
            return a

        rows = sorted(
            ((e - d * L, s, t) for (s, t, e, k) in incoming[d] if (s, t, k) in kept))
        R = len(rows)
        disp = load("dispatch", (R, H), np.float32)
        src = load("src", (R, 2), np.int64)
        tpe = load("tokens_per_expert", (L,), np.int64)
        T = len(idx[d])
        comb = load("combine", (T, H), np.float32)
        if errors:
            break

        want_tpe = np.bincount([le for (le, _, _) in rows], minlength=L)
        if not np.array_equal(tpe, want_tpe):
            errors.append(f"rank {d}: tokens_per_expert {tpe.tolist()}, "
                          f"expected {want_tpe.tolist()}")
        want_src = np.array([[s, t] for (_, s, t) in rows],
                            dtype=np.int64).reshape(R, 2)
        if not np.array_equal(src, want_src):
            errors.append(f"rank {d}: src {src.tolist()}, expected {want_src.tolist()}")
        for i, (_, s, t) in enumerate(rows):
            x = payload(s, t + 1, H)[t]
            if dtype in FP8_ERROR:
                # e4m3 with a per-block scale: error <= 2^-4 of the block
                # maximum; mxfp8 saturates elements in [448, 512) x scale,
                # 1/8 of the block maximum at most (|x| <= 1).
                if np.max(np.abs(disp[i] - x)) > FP8_ERROR[dtype]:
                    errors.append(f"rank {d}: dispatch row {i} too far from x")
            elif not np.array_equal(disp[i], x):
                errors.append(f"rank {d}: dispatch row {i} is not x[{s}][{t}]")
        x = payload(d, T, H)
        for t in range(T):
            ws = [weight(d, t, k) for k in range(K) if (d, t, k) in kept]
            want = x[t].astype(np.float64) * sum(ws)
            # |x| <= 1: rounding the output (and per-node partial sums) to
            # bf16 costs at most 2^-8 of sum |w| each.
            tol = (2 * FP8_ERROR.get(dtype, 2.0 ** -8)) * sum(map(abs, ws))
            if np.max(np.abs(comb[t] - want), initial=0.0) > tol:
                errors.append(f"rank {d}: combine token {t} differs from "
                              f"x * {wsum}")
        if len(errors) > 8:
            break

    if errors:
        print("\n".join(errors[:8]))
        sys.exit(1)
    print(f"dump ok: {files} files for {W} ranks")


if __name__ == "__main__":
    main()
