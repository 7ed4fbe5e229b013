"""moecomm's Python runtime on PyTorch CPU tensors (threads backend): the
oracle round trip in bf16 and f32, zero copies (results are written into the
given tensors' memory), and the autograd Functions against a single-process
PyTorch reference."""

import numpy
import pytest

import moecomm
import oracle

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
autograd = pytest.importorskip("moecomm.autograd")

WORLD, PER_NODE, EXPERTS, TOPK, HIDDEN = 4, 2, 8, 3, 64


def routing(seed=2):
    return [(torch.from_numpy(idx).long(), torch.from_numpy(w), torch.from_numpy(x))
            for idx, w, x in oracle.make_routing(WORLD, EXPERTS, TOPK, HIDDEN, seed)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_round_trip(dtype):
    data = routing()
    xs = [x.to(dtype) for _, _, x in data]

    def rank(comm):
        idx, w, _ = data[comm.rank]
        buffer = moecomm.Buffer(comm)
        recv, handle = buffer.dispatch(xs[comm.rank], idx, w, EXPERTS, strategy="hierarchical")
        assert isinstance(handle.tokens_per_expert, torch.Tensor)
        return recv, handle.recv_weights, buffer.combine(recv, handle)

    results = moecomm.run_threads(WORLD, PER_NODE, rank)
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    pairs = [(idx.numpy(), w.numpy()) for idx, w, _ in data]
    rows = [x.view(bits).numpy() for x in xs]
    for r, (recv, weights, out) in enumerate(results):
        want = oracle.dispatch(pairs, rows, EXPERTS, r)
        assert recv.dtype == dtype and out.dtype == dtype
        assert recv.view(bits).numpy().tobytes() == want[0].tobytes()
        numpy.testing.assert_array_equal(weights.numpy(), want[1])
        ref, magnitude = oracle.identity_combine(pairs[r][0], pairs[r][1],
                                                 xs[r].float().numpy())
        u, eta = (2.0 ** -8, 2.0 ** -133) if dtype == torch.bfloat16 else (2.0 ** -24, 2.0 ** -149)
        assert (numpy.abs(out.float().numpy() - ref)
                <= oracle.combine_bound(magnitude, TOPK, u, eta)).all()


def test_results_are_written_in_place_without_copies():
    data = routing()

    def rank(comm):
        idx, w, x = data[comm.rank]
        buffer = moecomm.Buffer(comm)
        handle = buffer.layout(idx, w, EXPERTS)
        recv = torch.full((handle.num_recv_rows, HIDDEN), float("nan"))
        address = recv.data_ptr()
        got = buffer.cached_dispatch(x, handle, out=recv)
        out = numpy.full((handle.num_tokens, HIDDEN), numpy.nan, dtype=numpy.float32)
        combined = buffer.combine(recv.numpy(), handle, out=out)
        return got is recv and recv.data_ptr() == address, recv, combined is out, out

    results = moecomm.run_threads(WORLD, PER_NODE, rank)
    pairs = [(idx.numpy(), w.numpy()) for idx, w, _ in data]
    xs = [x.numpy() for _, _, x in data]
    for r, (same_recv, recv, same_out, out) in enumerate(results):
        assert same_recv and same_out
        assert recv.numpy().tobytes() == oracle.dispatch(pairs, xs, EXPERTS, r)[0].tobytes()
        ref, magnitude = oracle.identity_combine(*pairs[r], xs[r])
        assert (numpy.abs(out - ref) <= oracle.combine_bound(magnitude, TOPK, 2.0 ** -24,
                                                             2.0 ** -149)).all()


def test_tensor_arguments_are_checked():
    idx = torch.tensor([[0, 1]] * 4)

    def rank(comm):
        buffer = moecomm.Buffer(comm)
        handle = buffer.layout(idx, None, 2)
        with pytest.raises(TypeError, match="x has dtype torch.float16"):
            buffer.cached_dispatch(torch.zeros(4, 8, dtype=torch.float16), handle)
        with pytest.raises(ValueError, match="x must be C-contiguous"):
            buffer.cached_dispatch(torch.zeros(8, 4).t(), handle)
        with pytest.raises(ValueError, match="y must have 2 dimensions"):
            buffer.combine(torch.zeros(8), handle)

    moecomm.run_threads(1, 1, rank)


def expert(recv, tokens_per_expert, first_expert):
    """A differentiable stand-in for the experts: tanh(row) * (1 + e / 8)
    for a row of expert e."""
    experts = torch.repeat_interleave(
        torch.arange(first_expert, first_expert + tokens_per_expert.numel()), tokens_per_expert)
    return torch.tanh(recv) * (1 + experts.float() / 8).unsqueeze(1)


@pytest.mark.parametrize("strategy", ["per_expert", "hierarchical"])
def test_autograd_matches_a_single_process_reference(strategy):
    data = routing(seed=3)
    grads_out = [torch.randn(x.shape, generator=torch.Generator().manual_seed(r))
                 for r, (_, _, x) in enumerate(data)]

    def rank(comm):
        idx, w, x = data[comm.rank]
        x = x.clone().requires_grad_()
        buffer = moecomm.Buffer(comm)
        handle = buffer.layout(idx, w, EXPERTS, strategy=strategy)
        recv = autograd.dispatch(x, buffer, handle)
        y = expert(recv, handle.tokens_per_expert, comm.rank * handle.local_experts)
        out = autograd.combine(y, buffer, handle)
        (out * grads_out[comm.rank]).sum().backward()
        return out.detach(), x.grad

    results = moecomm.run_threads(WORLD, PER_NODE, rank)
    for r, (idx, w, x) in enumerate(data):
        # The reference: the same layer on one process, no communication.
        x = x.clone().requires_grad_()
        out = torch.zeros_like(x)
        for slot in range(TOPK):
            e = idx[:, slot]
            kept = (e >= 0).float().unsqueeze(1)
            out = out + kept * w[:, slot:slot + 1] * torch.tanh(x) * (1 + e.clamp(min=0).float() / 8).unsqueeze(1)
        (out * grads_out[r]).sum().backward()
        torch.testing.assert_close(results[r][0], out.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(results[r][1], x.grad, rtol=1e-5, atol=1e-6)
