"""PyTorch autograd for dispatch and combine over a fixed layout.

The two collectives are linear in the rows they move, so their gradients are
collectives on the same layout (docs/runtime.md, "Identity experts";
DESIGN.md §3: unweighted combine is the adjoint of dispatch):

* dispatch: recv = D x, backward grad_x = D^T grad_recv = the **unweighted
  combine** of grad_recv;
* combine: out = C_w y with C_w = D^T diag(recv_weights) (weighted) or D^T,
  backward grad_y = diag(recv_weights) D grad_out = **cached_dispatch** of
  grad_out, scaled row by row by the handle's recv_weights (weighted), as
  the compiler's training step does (moecomm.cached_dispatch).

The routing weights are constants of the layout here: they get no gradient
(training a router through this API is not supported yet: nothing moves the
[T][K] weights to the received rows differentiably). Every rank must run
its backward in the same order as every other rank, as for the forward
(collectives). The scaling of bf16 gradients is computed in f32 and rounded
once to bf16.
"""

import torch


class Dispatch(torch.autograd.Function):
    """recv = buffer.cached_dispatch(x, handle, wire_dtype); x [T][H] float32
    or bfloat16 CPU tensor. The gradient is exact (no FP8 on the way back)."""

    @staticmethod
    def forward(ctx, x, buffer, handle, wire_dtype=None):
        ctx.buffer, ctx.handle = buffer, handle
        return buffer.cached_dispatch(x.detach(), handle, wire_dtype=wire_dtype)

    @staticmethod
    def backward(ctx, grad_recv):
        grad_x = ctx.buffer.combine(grad_recv.contiguous(), ctx.handle, weighted=False)
        return grad_x, None, None, None


class Combine(torch.autograd.Function):
    """out = buffer.combine(y, handle, weighted); y [R][H] float32 or
    bfloat16 CPU tensor in dispatch's row order."""

    @staticmethod
    def forward(ctx, y, buffer, handle, weighted=True):
        ctx.buffer, ctx.handle, ctx.weighted = buffer, handle, weighted
        return buffer.combine(y.detach(), handle, weighted=weighted)

    @staticmethod
    def backward(ctx, grad_out):
        grad_y = ctx.buffer.cached_dispatch(grad_out.contiguous(), ctx.handle)
        if ctx.weighted:
            weights = torch.as_tensor(ctx.handle.recv_weights).unsqueeze(1)
            grad_y = (grad_y.float() * weights).to(grad_y.dtype)
        return grad_y, None, None, None


def dispatch(x, buffer, handle, wire_dtype=None):
    """Differentiable dispatch along `handle` (see Dispatch)."""
    return Dispatch.apply(x, buffer, handle, wire_dtype)


def combine(y, buffer, handle, weighted=True):
    """Differentiable combine along `handle` (see Combine)."""
    return Combine.apply(y, buffer, handle, weighted)
