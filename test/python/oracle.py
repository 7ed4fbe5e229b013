"""The single-process oracle of dispatch and combine (DESIGN.md §3) for the
Python tests, written from the definitions, sharing no code with the
runtime: dispatch = all-gather the tokens, keep those routed to this rank's
experts, expert-major (local expert, source rank, source token); combine of
identity experts = x * sum of the kept weights, summed in f32 in slot order;
and the runtime's combine error bound (docs/runtime.md, "Combine numerics")
for the strategies that pre-reduce."""

import numpy


def make_routing(world, num_experts, topk, hidden, seed, tokens=None):
    """Per-rank (topk_idx int32 [T][K], topk_weights f32 [T][K], x f32
    [T][H]) with distinct ids per row and some masked (-1) slots. `tokens`
    gives T per rank (default 5, 0 and 7, ...: one rank has no tokens)."""
    rng = numpy.random.default_rng(seed)
    tokens = tokens or [(5, 0, 7, 3)[r % 4] for r in range(world)]
    routing = []
    for count in tokens:
        idx = numpy.array([rng.choice(num_experts, topk, replace=False)
                           for _ in range(count)], dtype=numpy.int32).reshape(count, topk)
        idx[rng.random((count, topk)) < 0.15] = -1
        weights = rng.random((count, topk), dtype=numpy.float32)
        x = rng.standard_normal((count, hidden), dtype=numpy.float32)
        routing.append((idx, weights, x))
    return routing


def dispatch(routing_idx, rows, num_experts, rank):
    """(rows [R][H], weights [R], sources [R][2], tokens_per_expert [E/W])
    that `rank` receives; routing_idx and rows are per-rank lists, weights
    taken from routing_idx's companion list when given as (idx, w) pairs."""
    world = len(routing_idx)
    local = num_experts // world
    out, weights, sources, per_expert = [], [], [], []
    for expert in range(rank * local, (rank + 1) * local):
        count = 0
        for source, (idx, w) in enumerate(routing_idx):
            for token in range(idx.shape[0]):
                slots = numpy.nonzero(idx[token] == expert)[0]
                if slots.size:
                    out.append(rows[source][token])
                    weights.append(w[token, slots[0]])
                    sources.append((source, token))
                    count += 1
        per_expert.append(count)
    hidden = rows[rank].shape[1]
    return (numpy.array(out, dtype=rows[rank].dtype).reshape(len(out), hidden),
            numpy.array(weights, dtype=numpy.float32),
            numpy.array(sources, dtype=numpy.int64).reshape(len(sources), 2),
            numpy.array(per_expert, dtype=numpy.int64))


def identity_combine(idx, weights, x, weighted=True):
    """out[t] = sum over kept slots k, in slot order, of w[t,k] * x[t] (or
    x[t]), in f32 from +0: the reference's exact arithmetic; and A[t] =
    sum |w x| for the bound."""
    out = numpy.zeros(x.shape, dtype=numpy.float32)
    magnitude = numpy.zeros(x.shape, dtype=numpy.float32)
    for token in range(x.shape[0]):
        for slot in range(idx.shape[1]):
            if idx[token, slot] >= 0:
                w = weights[token, slot] if weighted else numpy.float32(1)
                out[token] = out[token] + w * x[token]
                magnitude[token] += numpy.abs(w * x[token])
    return out, magnitude


def combine_bound(magnitude, topk, unit_roundoff, subnormal):
    """docs/runtime.md's bound with L = 3 (two-stage hierarchical, the most
    roundings): ((L+1)u + 3K 2^-24) A + (L+1+3K) eta."""
    rounds = 3
    return (((rounds + 1) * unit_roundoff + 3 * topk * 2.0 ** -24) * magnitude
            + (rounds + 1 + 3 * topk) * subnormal)


def bf16_bits(x):
    """f32 -> bf16 bits (uint16), round to nearest even (finite inputs)."""
    bits = x.astype(numpy.float32).view(numpy.uint32).astype(numpy.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(numpy.uint16)


def bf16_to_f32(bits):
    return (bits.astype(numpy.uint32) << 16).view(numpy.float32)
