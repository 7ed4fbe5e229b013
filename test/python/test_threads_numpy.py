"""moecomm's Python runtime on the threads backend with NumPy arrays:
dispatch, combine and the layout's handle against the oracle (oracle.py),
for every strategy, f32 and bf16 (uint16 bits), the FP8 wire, and errors."""

import os
import subprocess
import sys

import numpy
import pytest

import moecomm
import oracle

WORLD, PER_NODE, EXPERTS, TOPK, HIDDEN = 4, 2, 8, 3, 256


def run(fn, seed=1):
    routing = oracle.make_routing(WORLD, EXPERTS, TOPK, HIDDEN, seed)
    return routing, moecomm.run_threads(
        WORLD, PER_NODE, lambda comm: fn(comm, *routing[comm.rank]))


@pytest.mark.parametrize("strategy", ["per_expert", "flat", "hierarchical", "auto"])
def test_round_trip_f32(strategy):
    def rank(comm, idx, weights, x):
        buffer = moecomm.Buffer(comm)
        recv, handle = buffer.dispatch(x, idx, weights, EXPERTS, strategy=strategy)
        return (recv, handle.recv_weights, handle.sources, handle.tokens_per_expert,
                handle.strategy, buffer.combine(recv, handle),
                buffer.combine(recv, handle, weighted=False))

    routing, results = run(rank)
    pairs = [(idx, w) for idx, w, _ in routing]
    xs = [x for _, _, x in routing]
    for r, (recv, weights, sources, per_expert, used, out, plain) in enumerate(results):
        want = oracle.dispatch(pairs, xs, EXPERTS, r)
        assert recv.tobytes() == want[0].tobytes()  # bitwise, expert-major
        numpy.testing.assert_array_equal(weights, want[1])
        numpy.testing.assert_array_equal(sources, want[2])
        numpy.testing.assert_array_equal(per_expert, want[3])
        assert used == strategy or strategy == "auto"
        idx, w, x = routing[r]
        for got, weighted in ((out, True), (plain, False)):
            ref, magnitude = oracle.identity_combine(idx, w, x, weighted)
            if used == "per_expert":
                assert got.tobytes() == ref.tobytes()  # per_expert is bit-exact
            else:
                bound = oracle.combine_bound(magnitude, TOPK, 2.0 ** -24, 2.0 ** -149)
                assert (numpy.abs(got - ref) <= bound).all()


def test_bf16_as_uint16_bits():
    def rank(comm, idx, weights, x):
        buffer = moecomm.Buffer(comm)
        bits = oracle.bf16_bits(x)
        recv, handle = buffer.dispatch(bits, idx, weights, EXPERTS, strategy="hierarchical")
        return bits, recv, buffer.combine(recv, handle)

    routing, results = run(rank)
    pairs = [(idx, w) for idx, w, _ in routing]
    bits = [b for b, _, _ in results]
    for r, (_, recv, out) in enumerate(results):
        assert recv.dtype == numpy.uint16 and out.dtype == numpy.uint16
        assert recv.tobytes() == oracle.dispatch(pairs, bits, EXPERTS, r)[0].tobytes()
        idx, w, _ = routing[r]
        ref, magnitude = oracle.identity_combine(idx, w, oracle.bf16_to_f32(bits[r]))
        bound = oracle.combine_bound(magnitude, TOPK, 2.0 ** -8, 2.0 ** -133)
        assert (numpy.abs(oracle.bf16_to_f32(out) - ref) <= bound).all()


# Per FP8 wire: its block, the relative error bound of its normal range, and
# its scale's bound in units of amax / 448. fp8_e4m3: scale amax / 448, e4m3
# keeps 3 mantissa bits (half an ulp, 2^-4 relative). The E8M0 wires' power-
# of-two scales are below 2 amax / 448; mxfp8's floor rule saturates
# elements in [448, 512) x scale to 448 x scale (1/8 off).
@pytest.mark.parametrize("wire, block, relative, scale_bound", [
    ("fp8_e4m3", "MOECOMM_FP8_BLOCK", 2.0 ** -4, 1),
    ("fp8_e4m3_ue8m0", "MOECOMM_FP8_BLOCK", 2.0 ** -4, 2),
    ("mxfp8", "MOECOMM_MXFP8_BLOCK", 2.0 ** -3, 2)])
def test_fp8_wire_same_bits_for_every_strategy(wire, block, relative, scale_bound):
    def rank(comm, idx, weights, x):
        buffer = moecomm.Buffer(comm)
        return [buffer.dispatch(x, idx, weights, EXPERTS, strategy=s, wire_dtype=wire)[0]
                for s in ("per_expert", "flat", "hierarchical")]

    routing, results = run(rank)
    pairs = [(idx, w) for idx, w, _ in routing]
    xs = [x for _, _, x in routing]
    for r, per_strategy in enumerate(results):
        exact = oracle.dispatch(pairs, xs, EXPERTS, r)[0]
        assert all(got.tobytes() == per_strategy[0].tobytes() for got in per_strategy)
        # Within `relative` of each value, or 2^-10 of the block's scale
        # (2^-9 of amax / 448 for fp8_e4m3) in its subnormal range.
        blocks = exact.reshape(exact.shape[0], -1, getattr(moecomm.native.lib, block))
        scale = numpy.abs(blocks).max(axis=2, keepdims=True) / 448 * scale_bound
        error = numpy.abs(per_strategy[0] - exact).reshape(blocks.shape)
        assert (error <= relative * numpy.abs(blocks) + scale * 2.0 ** -9).all()
        assert (error > 0).any()  # FP8 did travel


@pytest.mark.parametrize("choice", ["locality", "load_only"])
def test_replicated_experts(choice):
    # 8 logical experts over 12 slots (3 per rank): experts 0..3 twice.
    placement = list(range(EXPERTS)) + [0, 1, 2, 3]
    local = len(placement) // WORLD

    def rank(comm, idx, weights, x):
        buffer = moecomm.Buffer(comm)
        recv, handle = buffer.dispatch(x, idx, weights, EXPERTS, strategy="hierarchical",
                                       placement=placement, replica_choice=choice)
        unplaced, _ = buffer.dispatch(x, idx, weights, EXPERTS, strategy="hierarchical",
                                      placement=range(EXPERTS))
        return (recv, handle.sources, handle.tokens_per_expert, handle.local_experts,
                buffer.combine(recv, handle), buffer.combine(recv, handle, weighted=False),
                unplaced)

    routing, results = run(rank)
    pairs = [(idx, w) for idx, w, _ in routing]
    xs = [x for _, _, x in routing]
    kept = sum(int((idx >= 0).sum()) for idx, _, _ in routing)
    assert sum(int(result[2].sum()) for result in results) == kept
    for r, (recv, sources, per_slot, experts, out, plain, identity) in enumerate(results):
        assert experts == local
        # The identity placement is no placement, bit for bit.
        assert identity.tobytes() == oracle.dispatch(pairs, xs, EXPERTS, r)[0].tobytes()
        # Each row is its source token's x, at a replica of one of its experts.
        row = 0
        for slot, count in enumerate(per_slot):
            for _ in range(count):
                source, token = sources[row]
                assert placement[r * local + slot] in routing[source][0][token]
                assert recv[row].tobytes() == xs[source][token].tobytes()
                row += 1
        assert row == recv.shape[0]
        # Identity experts: x * the kept weights, whichever replicas served.
        idx, w, x = routing[r]
        for got, weighted in ((out, True), (plain, False)):
            ref, magnitude = oracle.identity_combine(idx, w, x, weighted)
            bound = oracle.combine_bound(magnitude, TOPK, 2.0 ** -24, 2.0 ** -149)
            assert (numpy.abs(got - ref) <= bound).all()


def test_placement_errors():
    def rank(comm, idx, weights, x):
        buffer = moecomm.Buffer(comm)
        with pytest.raises(ValueError, match="replica_choice must be one of locality, load_only"):
            buffer.layout(idx, weights, EXPERTS, placement=range(EXPERTS), replica_choice="x")
        with pytest.raises(ValueError, match="replica_choice must be one of"):
            buffer.layout(idx, weights, EXPERTS, placement=range(EXPERTS),
                          replica_choice=["locality"])
        with pytest.raises(ValueError, match="replica_choice needs a placement"):
            buffer.layout(idx, weights, EXPERTS, replica_choice="load_only")
        with pytest.raises(TypeError, match="placement must be a sequence of ints, got float"):
            buffer.layout(idx, weights, EXPERTS, placement=1.5)
        with pytest.raises(ValueError, match="placement must hold at least one slot"):
            buffer.layout(idx, weights, EXPERTS, placement=[])
        with pytest.raises(moecomm.InvalidArgumentError) as error:
            buffer.layout(idx, weights, EXPERTS, placement=[0] * EXPERTS)
        return error.value.message

    assert run(rank)[1] == ["rank 0: placement: logical expert 1 has no slot"] * WORLD


def test_runtime_error_is_raised_on_every_rank_with_its_message():
    def rank(comm, idx, weights, x):
        if comm.rank == 2:
            idx = idx.copy()
            idx[0, 1] = 300
        with pytest.raises(moecomm.InvalidArgumentError) as error:
            moecomm.Buffer(comm).layout(idx, weights, EXPERTS)
        return error.value

    for error in run(rank)[1]:
        assert error.code == moecomm.native.lib.moecommInvalidArgument
        assert error.message == "rank 2 token 0 slot 1: expert id 300 out of range [-1, 8)"
        assert str(error) == "invalid argument: " + error.message


def test_ranks_that_disagree_raise_mismatch():
    def rank(comm, idx, weights, x):
        with pytest.raises(moecomm.MismatchError, match="ranks disagree on num_experts"):
            moecomm.Buffer(comm).layout(idx, weights, 16 if comm.rank == 3 else EXPERTS)
        # The communicator stays usable after an input error.
        return moecomm.Buffer(comm).layout(idx, weights, EXPERTS).num_recv_rows

    routing, results = run(rank)
    pairs = [(idx, w) for idx, w, _ in routing]
    xs = [x for _, _, x in routing]
    assert results == [oracle.dispatch(pairs, xs, EXPERTS, r)[0].shape[0] for r in range(WORLD)]


def test_bad_arguments_are_named_before_the_runtime_is_called():
    idx = numpy.zeros((4, 2), dtype=numpy.int32)
    idx[:, 1] = 1
    x = numpy.zeros((4, 8), dtype=numpy.float32)

    def rank(comm):
        buffer = moecomm.Buffer(comm)
        handle = buffer.layout(idx, None, 2)
        cases = [
            (TypeError, "x has dtype float64", lambda: buffer.cached_dispatch(x.astype(float), handle)),
            (ValueError, "x must be C-contiguous", lambda: buffer.cached_dispatch(
                numpy.zeros((4, 16), numpy.float32)[:, ::2], handle)),
            (ValueError, r"x has shape \(3, 8\), expected \(4, \*\)",
             lambda: buffer.cached_dispatch(x[:3], handle)),
            (TypeError, "x must be a numpy.ndarray or torch.Tensor, got list",
             lambda: buffer.cached_dispatch([[0.0]], handle)),
            (TypeError, "topk_idx has dtype float32", lambda: buffer.layout(x, None, 2)),
            (ValueError, r"topk_weights has shape \(4, 1\)",
             lambda: buffer.layout(idx, numpy.ones((4, 1), numpy.float32), 2)),
            (ValueError, "strategy must be one of", lambda: buffer.layout(idx, None, 2, strategy="x")),
            (ValueError, "wire_dtype must be None, 'fp8_e4m3', 'fp8_e4m3_ue8m0' or 'mxfp8'",
             lambda: buffer.cached_dispatch(x, handle, wire_dtype="fp16")),
            (TypeError, "out has dtype uint16, expected x's dtype float32",
             lambda: buffer.cached_dispatch(x, handle, out=numpy.empty((8, 8), numpy.uint16))),
        ]
        for kind, message, call in cases:
            with pytest.raises(kind, match=message):
                call()

    moecomm.run_threads(1, 1, rank)


def test_thread_group_arguments_are_checked_by_the_runtime():
    with pytest.raises(moecomm.InvalidArgumentError, match="ranksPerNode|ranks_per_node|divis"):
        moecomm.ThreadGroup(4, 3)


def test_a_missing_library_is_a_clear_import_error():
    env = dict(os.environ, MOECOMM_RUNTIME_LIBRARY="/nonexistent/libmoecomm_runtime.so")
    result = subprocess.run([sys.executable, "-c", "import moecomm"], env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert ("ImportError: moecomm: MOECOMM_RUNTIME_LIBRARY=/nonexistent/libmoecomm_runtime.so: "
            "/nonexistent/libmoecomm_runtime.so does not exist") in result.stderr
