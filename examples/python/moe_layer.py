"""An MoE layer's communication from Python (docs/python.md): 4 ranks as
2 nodes x 2 on threads of this process, each routing its tokens to 2 of 8
experts; dispatch, a stand-in expert, weighted combine, and the backward
pass through moecomm.autograd. Checks the forward against x * sum of the
weights (identity experts) and prints one line per rank.

    PYTHONPATH=runtime/python MOECOMM_RUNTIME_LIBRARY=build/lib/libmoecomm_runtime.so \\
        /usr/bin/python3 examples/python/moe_layer.py
"""

import torch

import moecomm
import moecomm.autograd

RANKS, RANKS_PER_NODE, EXPERTS, TOKENS, TOPK, HIDDEN = 4, 2, 8, 6, 2, 128


def rank_main(comm):
    gen = torch.Generator().manual_seed(comm.rank)
    x = torch.randn(TOKENS, HIDDEN, generator=gen, requires_grad=True)
    topk_idx = torch.stack([torch.randperm(EXPERTS, generator=gen)[:TOPK] for _ in range(TOKENS)])
    topk_weights = torch.rand(TOKENS, TOPK, generator=gen)

    buffer = moecomm.Buffer(comm)
    handle = buffer.layout(topk_idx, topk_weights, EXPERTS, strategy="hierarchical")
    recv = moecomm.autograd.dispatch(x, buffer, handle)   # [R][H], expert-major
    y = recv * 1.0                                        # the experts (identity here)
    out = moecomm.autograd.combine(y, buffer, handle)     # [T][H], weighted sum
    out.sum().backward()                                  # grad_x = sum of the weights

    expected = x.detach() * topk_weights.sum(1, keepdim=True)
    torch.testing.assert_close(out.detach(), expected)
    torch.testing.assert_close(x.grad, topk_weights.sum(1, keepdim=True).expand(-1, HIDDEN))
    return (f"rank {comm.rank}: received {handle.num_recv_rows} rows "
            f"(tokens per expert {handle.tokens_per_expert.tolist()}), "
            f"strategy {handle.strategy}, combine and gradient verified")


for line in moecomm.run_threads(RANKS, RANKS_PER_NODE, rank_main):
    print(line)
