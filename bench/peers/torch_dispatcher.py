#!/usr/bin/python3
"""A Megatron-style all-to-all token dispatcher on torch.distributed: the
PyTorch peer moecomm-bench is compared with on the emulated cluster
(docs/BENCHMARKS.md, DESIGN.md section 7).

Run one process per rank under mpirun (rank and world size from
OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE; the gloo backend's rendezvous at
--master-addr, or MASTER_ADDR, and --port):

    mpirun -np 4 /usr/bin/python3 bench/peers/torch_dispatcher.py \\
        --routing build/routing.json --master-addr localhost --json peer.json

It reads a moecomm-routing-v1 file (DESIGN.md section 8: the cluster, E, K,
H and every rank's topk_idx / topk_weights; the world size must equal
"ranks") and builds DESIGN.md's fixed payload
x[r][t][h] = ((r*977 + t*131 + h*7) mod 255 - 127) / 128 (exact in fp16).
Each iteration does what Megatron-core's MoEAlltoAllTokenDispatcher does:
  1. permute: one row per kept (token, expert) slot, expert-major (sorted by
     global expert id, so grouped by destination rank);
  2. exchange the split sizes: every rank sends each rank its row count per
     local expert of that rank (all_to_all_single of int64 counts);
  3. all_to_all_single of the rows with those splits;
  4. sort the received chunks from (source rank, local expert) order to
     (local expert, source rank) order, apply the experts (identity), and
     sort them back;
  5. all_to_all_single of the rows back to their source ranks;
  6. unpermute: multiply by the routing weights in f32 and scatter-add into
     the token rows, then cast back to the activation dtype (Megatron's
     unpermute with f32 probs).
The rows are fp16: gloo's all-to-all has no bf16 (the bytes on the wire per
row equal bf16's, 2*H). Every iteration is checked after its timed region:
|out - x * sum(w)| <= tol * max|x_row| * sum|w| with tol = 2^-11 (the final
fp16 rounding) + K * 2^-23 (the f32 sums), else exit 1.

Timing: --warmup untimed iterations, then --iterations timed ones; each
starts after a barrier and its time is the maximum over ranks. Rank 0 prints
one JSON document (format "moecomm-torch-peer-v1"; also written to --json):
median_s, min_s, per-iteration seconds, and the bytes every node's ranks
sent to other nodes per iteration, counted from the splits and
ranks_per_node: rows (dispatch + combine, 2*H bytes each) and the split
sizes (8 bytes per local expert per destination rank).

Exit status: 0 verified, 1 a verification failure, 2 bad input (one line on
stderr, before any rendezvous), 3 a runtime failure.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

FORMAT = "moecomm-torch-peer-v1"


# moecomm-routing-v1's limits: K <= kMaxTopk (runtime/include/moecomm/Model/
# Limits.h), H <= workload::kMaxHidden (tools/.../Workload/ModelConfig.h).
MAX_TOPK = 4096
MAX_HIDDEN = 1 << 24

class InputError(Exception):
    """Bad input: exit status 2 with one line."""


def fail(status, message):
    sys.stderr.write("torch_dispatcher: error: %s\n" % message)
    sys.exit(status)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Megatron-style all-to-all token dispatcher on "
        "torch.distributed (gloo), the PyTorch peer of moecomm-bench")
    p.add_argument("--routing", required=True,
                   help="moecomm-routing-v1 file (DESIGN.md section 8)")
    p.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR"),
                   help="host of rank 0's rendezvous (default $MASTER_ADDR)")
    p.add_argument("--port", type=int, default=29500,
                   help="TCP port of the rendezvous (default 29500)")
    p.add_argument("--iterations", type=int, default=3,
                   help="timed iterations (default 3)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed iterations first (default 1)")
    p.add_argument("--json", help="also write the report to this file")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds gloo waits for a peer (default 300)")

    def error(message):
        raise InputError(message)

    p.error = error
    a = p.parse_args(argv)
    if not a.master_addr:
        raise InputError("no rendezvous address: give --master-addr or set "
                         "MASTER_ADDR")
    if not 1 <= a.port <= 65535:
        raise InputError("--port must be in [1, 65535], got %d" % a.port)
    if not 1 <= a.iterations <= 1000:
        raise InputError("--iterations must be in [1, 1000], got %d" %
                         a.iterations)
    if not 0 <= a.warmup <= 1000:
        raise InputError("--warmup must be in [0, 1000], got %d" % a.warmup)
    # timedelta takes at most ~1e14 seconds; a year is plenty.
    if not 0 < a.timeout <= 365 * 86400:
        raise InputError("--timeout must be in (0, 31536000] seconds, got %s"
                         % a.timeout)
    if a.json is not None:
        if a.json in ("", "-"):
            raise InputError("--json must name a file (stdout gets the "
                             "report anyway)")
        if os.path.isdir(a.json):
            raise InputError("--json %s is a directory" % a.json)
        # The report would replace the routing it was measured on.
        if os.path.exists(a.json) and os.path.exists(a.routing) and \
                os.path.samefile(a.json, a.routing):
            raise InputError("--json %s would overwrite the routing file %s"
                             % (a.json, a.routing))
    return a


def world():
    """(rank, size) from Open MPI's environment."""
    try:
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    except (KeyError, ValueError):
        raise InputError("OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE are "
                         "unset: run it under mpirun, one process per rank")
    return rank, size


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# The largest bf16, moecomm-run's bound on a token's sum of |weight|: no
# combine (here in f32) can overflow.
MAX_WEIGHT_SUM = 3.3895313892515355e38


def weight_row_ok(row, K):
    """Whether `row` is K numbers whose sum of magnitudes is at most
    MAX_WEIGHT_SUM (so each is finite: 1e400 reads as infinity)."""
    if not isinstance(row, list) or len(row) != K:
        return False
    total = 0.0
    for w in row:
        if not isinstance(w, (int, float)) or isinstance(w, bool):
            return False
        try:
            total += abs(float(w))
        except OverflowError:  # an int beyond any float
            return False
    return total <= MAX_WEIGHT_SUM


def reject_constant(name):
    """Python's json reads NaN and Infinity, which JSON (and the routing
    format) does not have."""
    raise ValueError("%s is not a JSON number" % name)


def load_routing(path, size):
    """The routing file's fields, checked (InputError names the problem)."""
    try:
        with open(path) as f:
            doc = json.load(f, parse_constant=reject_constant)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    except ValueError as e:
        raise InputError("%s: malformed JSON: %s" % (path, e))
    if not isinstance(doc, dict) or doc.get("format") != "moecomm-routing-v1":
        raise InputError('%s: "format" must be "moecomm-routing-v1"' % path)
    for key in ("ranks", "ranks_per_node", "num_experts", "topk", "hidden"):
        if not is_int(doc.get(key)) or doc[key] < 1:
            raise InputError('%s: "%s" must be an integer >= 1' % (path, key))
    W, G, E, K = (doc["ranks"], doc["ranks_per_node"], doc["num_experts"],
                  doc["topk"])
    # The format's limits (moecomm's Limits.h / ModelConfig.h), checked here
    # so that a huge file fails with one line, not inside torch.
    for key, limit in (("topk", MAX_TOPK), ("hidden", MAX_HIDDEN)):
        if doc[key] > limit:
            raise InputError('%s: "%s" must be in [1, %d], got %d' %
                             (path, key, limit, doc[key]))
    if W != size:
        raise InputError("%s: the routing is for %d ranks, mpirun started %d"
                         % (path, W, size))
    if W % G:
        raise InputError("%s: ranks_per_node %d does not divide ranks %d" %
                         (path, G, W))
    if E % W:
        raise InputError("%s: num_experts %d is not a multiple of ranks %d" %
                         (path, E, W))
    if doc.get("capacity") not in (None, 0):
        raise InputError("%s: capacity is not supported (Megatron's "
                         "dispatcher here drops nothing)" % path)
    idx = doc.get("topk_idx")
    if not isinstance(idx, list) or len(idx) != W:
        raise InputError('%s: "topk_idx" must be a list of %d ranks' %
                         (path, W))
    wts = doc.get("topk_weights")
    if wts is not None and (not isinstance(wts, list) or len(wts) != W):
        raise InputError('%s: "topk_weights" must be a list of %d ranks' %
                         (path, W))
    for r in range(W):
        if not isinstance(idx[r], list):
            raise InputError("%s: topk_idx[%d] must be a list" % (path, r))
        # Checked here too, not only per token: a rank without tokens.
        if wts is not None and (not isinstance(wts[r], list)
                                or len(wts[r]) != len(idx[r])):
            raise InputError("%s: rank %d: topk_weights must have as many "
                             "tokens as topk_idx (%d)" %
                             (path, r, len(idx[r])))
        for t, row in enumerate(idx[r]):
            if not isinstance(row, list) or len(row) != K:
                raise InputError("%s: rank %d token %d: topk_idx row must "
                                 "have %d entries" % (path, r, t, K))
            seen = set()
            for k, e in enumerate(row):
                if not is_int(e) or not -1 <= e < E:
                    raise InputError("%s: rank %d token %d slot %d: expert "
                                     "id must be in [-1, %d)" %
                                     (path, r, t, k, E))
                if e >= 0 and e in seen:
                    raise InputError("%s: rank %d token %d slot %d: expert "
                                     "%d repeats" % (path, r, t, k, e))
                seen.add(e)
            if wts is not None:
                if not weight_row_ok(wts[r][t], K):
                    raise InputError("%s: rank %d token %d: topk_weights must "
                                     "match topk_idx with numbers whose sum of "
                                     "magnitudes is at most %.4g" %
                                     (path, r, t, MAX_WEIGHT_SUM))
    return doc


def payload(torch, rank, tokens, hidden):
    """DESIGN.md section 8's x of `rank`, [tokens][hidden], fp16 (exact)."""
    t = torch.arange(tokens, dtype=torch.int64).unsqueeze(1)
    h = torch.arange(hidden, dtype=torch.int64).unsqueeze(0)
    return (((rank * 977 + t * 131 + h * 7) % 255 - 127).to(torch.float32) /
            128).to(torch.float16)


def main(argv):
    try:
        args = parse_args(argv)
        rank, size = world()
        doc = load_routing(args.routing, size)
    except InputError as e:
        fail(2, str(e))
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:  # not 1 (a verification failure)
        fail(3, "cannot import PyTorch (Debian: python3-torch): %s" % e)

    torch.set_num_threads(1)  # the ranks share the machine's cores
    W, G, E, K, H = (doc["ranks"], doc["ranks_per_node"], doc["num_experts"],
                     doc["topk"], doc["hidden"])
    L = E // W  # local experts per rank
    T = len(doc["topk_idx"][rank])
    idx = torch.tensor(doc["topk_idx"][rank], dtype=torch.int64).reshape(T, K)
    if doc.get("topk_weights") is not None:
        w = torch.tensor(doc["topk_weights"][rank],
                         dtype=torch.float32).reshape(T, K)
    else:
        w = torch.ones(T, K, dtype=torch.float32)
    w = torch.where(idx >= 0, w, torch.zeros_like(w))
    x = payload(torch, rank, T, H)

    try:
        dist.init_process_group(
            "gloo", init_method="tcp://%s:%d" % (args.master_addr, args.port),
            rank=rank, world_size=size,
            timeout=datetime.timedelta(seconds=args.timeout))
    except Exception as e:  # gloo reports every rendezvous failure this way
        fail(3, "rendezvous at %s:%d failed: %s" %
             (args.master_addr, args.port, str(e).splitlines()[0]))

    # The routing's permutation (it does not change between iterations, but
    # Megatron recomputes it every step; so does the timed region).
    def step():
        flat = idx.reshape(-1)
        kept = (flat >= 0).nonzero().squeeze(1)
        experts = flat[kept]
        order = torch.argsort(experts, stable=True)
        slots = kept[order]                 # expert-major kept slots
        token_of_slot = slots // K
        permuted = x.index_select(0, token_of_slot)
        # 2. split sizes: rows per (destination rank, local expert).
        per_expert = torch.bincount(experts, minlength=E)
        recv_counts = torch.empty(E, dtype=torch.int64)  # [W src][L]
        dist.all_to_all_single(recv_counts, per_expert)
        input_splits = per_expert.reshape(W, L).sum(1).tolist()
        recv_by_src = recv_counts.reshape(W, L)
        output_splits = recv_by_src.sum(1).tolist()
        # 3. the rows.
        received = torch.empty(sum(output_splits), H, dtype=torch.float16)
        dist.all_to_all_single(received, permuted, output_splits,
                               input_splits)
        # 4. (source, local expert) chunks -> (local expert, source), the
        # experts (identity), and back.
        chunks = list(received.split(recv_by_src.reshape(-1).tolist()))
        by_expert = [chunks[s * L + e] for e in range(L) for s in range(W)]
        expert_out = torch.cat(by_expert) if by_expert else received
        sizes = [c.shape[0] for c in by_expert]
        back_chunks = list(expert_out.split(sizes))
        unsorted = [back_chunks[e * W + s] for s in range(W) for e in range(L)]
        y = torch.cat(unsorted) if unsorted else expert_out
        # 5. back to the source ranks.
        returned = torch.empty(permuted.shape[0], H, dtype=torch.float16)
        dist.all_to_all_single(returned, y, input_splits, output_splits)
        # 6. unpermute with the weights in f32.
        weighted = returned.to(torch.float32) * w.reshape(-1)[slots].unsqueeze(1)
        out = torch.zeros(T, H, dtype=torch.float32)
        out.index_add_(0, token_of_slot, weighted)
        return out.to(torch.float16), input_splits, output_splits

    want = x.to(torch.float32) * w.sum(1, keepdim=True)
    scale = (x.to(torch.float32).abs().amax(1, keepdim=True) if H else
             torch.zeros(T, 1)) * w.abs().sum(1, keepdim=True)
    tol = 2.0 ** -11 + K * 2.0 ** -23
    times = []
    worst = 0.0
    splits = None
    for it in range(args.warmup + args.iterations):
        dist.barrier()
        t0 = time.perf_counter()
        out, sent, got = step()
        elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        err = (out.to(torch.float32) - want).abs()
        rel = float((err / scale.clamp_min(1e-30)).max()) if T and H else 0.0
        bad = torch.tensor([1 if (err > tol * scale + 2.0 ** -24).any() else 0],
                           dtype=torch.int64)
        dist.all_reduce(bad, op=dist.ReduceOp.MAX)
        worst_t = torch.tensor([rel], dtype=torch.float64)
        dist.all_reduce(worst_t, op=dist.ReduceOp.MAX)
        worst = max(worst, float(worst_t))
        if int(bad):
            if rank == 0:
                sys.stderr.write("torch_dispatcher: verification failed in "
                                 "iteration %d: relative error %.3g > %.3g\n"
                                 % (it, float(worst_t), tol))
            dist.destroy_process_group()
            return 1
        if it >= args.warmup:
            times.append(float(elapsed))
        splits = sent

    # Inter-node bytes of one iteration, per source rank, from the splits:
    # rows to other nodes (dispatch), the same rows' results sent back by
    # the ranks that got them (combine, counted at those ranks from
    # output_splits), and the split sizes.
    node = rank // G
    rows_out = sum(n for d, n in enumerate(splits) if d // G != node)
    rows_back = sum(n for s, n in enumerate(got) if s // G != node)
    mine = torch.tensor([rows_out * 2 * H, rows_back * 2 * H,
                         (W - G) * L * 8], dtype=torch.int64)
    every = [torch.zeros(3, dtype=torch.int64) for _ in range(W)]
    dist.all_gather(every, mine)
    dist.destroy_process_group()
    if rank != 0:
        return 0
    per_node = [0] * (W // G)
    totals = [0, 0, 0]
    for r, v in enumerate(every):
        per_node[r // G] += int(v.sum())
        for i in range(3):
            totals[i] += int(v[i])
    report = {
        "format": FORMAT,
        "peer": "megatron-alltoall-torch",
        "what": "Megatron-core MoEAlltoAllTokenDispatcher steps on "
                "torch.distributed all_to_all_single (gloo, fp16 rows: gloo "
                "has no bf16 all-to-all; 2*H bytes per row like bf16)",
        "torch": torch.__version__,
        "routing": args.routing,
        "ranks": W, "ranks_per_node": G, "num_experts": E, "topk": K,
        "hidden": H, "dtype": "fp16",
        "warmup": args.warmup, "iterations": args.iterations,
        "seconds": times,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "verified": True,
        "max_rel_err": worst,
        "tolerance": tol,
        "inter_node_bytes": {"dispatch": totals[0], "combine": totals[1],
                             "split_sizes": totals[2]},
        "node_inter_node_bytes": per_node,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        try:
            with open(args.json, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            fail(3, "cannot write --json %s: %s" % (args.json, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
