"""moecomm's Python runtime over MPI (one process per rank, mpi4py):
dispatch and combine on NumPy arrays and torch tensors for every strategy,
checked on every rank against the oracle. Run as
`mpirun -np 4 --oversubscribe python3 -m mpi4py mpi_round_trip.py` (-m
mpi4py: a rank's uncaught exception aborts every rank instead of leaving
them waiting). Every rank makes the same routing from the same seed."""

import numpy
from mpi4py import MPI

import moecomm
import moecomm.mpi
import oracle

PER_NODE, EXPERTS_PER_RANK, TOPK, HIDDEN = 2, 2, 3, 256


def main():
    world = MPI.COMM_WORLD.Get_size()
    experts = EXPERTS_PER_RANK * world
    routing = oracle.make_routing(world, experts, TOPK, HIDDEN, seed=4)
    pairs = [(idx, w) for idx, w, _ in routing]
    xs = [x for _, _, x in routing]
    with moecomm.mpi.from_mpi4py(MPI.COMM_WORLD, PER_NODE) as comm:
        assert comm.backend == "mpi" and comm.size == world
        rank = comm.rank
        idx, w, x = routing[rank]
        want = oracle.dispatch(pairs, xs, experts, rank)
        ref, magnitude = oracle.identity_combine(idx, w, x)
        bound = oracle.combine_bound(magnitude, TOPK, 2.0 ** -24, 2.0 ** -149)
        buffer = moecomm.Buffer(comm)
        for strategy in ("per_expert", "flat", "hierarchical"):
            recv, handle = buffer.dispatch(x, idx, w, experts, strategy=strategy)
            assert recv.tobytes() == want[0].tobytes(), strategy
            numpy.testing.assert_array_equal(handle.sources, want[2])
            numpy.testing.assert_array_equal(handle.tokens_per_expert, want[3])
            out = buffer.combine(recv, handle)
            assert (numpy.abs(out - ref) <= bound).all(), strategy
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            recv, handle = buffer.dispatch(torch.from_numpy(x), torch.from_numpy(idx),
                                           torch.from_numpy(w), experts)
            assert recv.numpy().tobytes() == want[0].tobytes()
        bad = idx.copy()
        if rank == 2:
            bad[0, 0] = experts
        try:
            buffer.layout(bad, w, experts)
            raise AssertionError("an out-of-range expert id was accepted")
        except moecomm.InvalidArgumentError as error:
            assert error.message.startswith("rank 2 token 0 slot 0: expert id"), error.message
    print(f"rank {rank}: python mpi round trip verified", flush=True)


main()
