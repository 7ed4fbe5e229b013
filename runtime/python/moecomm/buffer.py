"""Dispatch and combine on NumPy arrays and PyTorch CPU tensors: `Buffer`
and its layout `Handle`, the shape DeepEP users know (`Buffer.dispatch`
returns the received rows and a handle; `Buffer.combine` takes the handle;
a dispatch with a handle is DeepEP's cached dispatch).

Shapes (terms of docs/runtime.md: W ranks, E experts, T tokens on this rank,
K top-k, H hidden, R rows this rank receives):

* topk_idx [T][K] int32/int64, expert ids in [-1, E) (-1 = masked slot);
  topk_weights [T][K] float32 or None (all 1.0);
* x [T][H], float32 or bf16 (rows.py: torch.bfloat16, or numpy.uint16 bits);
* dispatch's result [R][H] of x's dtype, expert-major (local expert, then
  source rank, then source token);
* combine's y [R][H] in that order, its result [T][H] of y's dtype:
  out[t] = sum over kept slots k of (w[t,k] if weighted else 1) * y[row(t,k)],
  accumulated in f32.

Every call is blocking and collective over the communicator (all ranks, same
order). Results are new arrays of the input's kind (NumPy in, NumPy out;
torch in, torch out), or the `out` array given, written in place. Errors:
TypeError / ValueError for bad arguments (named), moecomm.Error subclasses
for what the runtime rejects (with its message; agreed on every rank).
"""

import operator

import numpy

from . import rows
from .native import ffi, lib

STRATEGIES = {
    "per_expert": lib.moecommPerExpert,
    "flat": lib.moecommFlat,
    "hierarchical": lib.moecommHierarchical,
    "auto": lib.moecommAuto,
}
_STRATEGY_NAMES = {value: name for name, value in STRATEGIES.items()}
# How a layout with an expert placement picks one replica per (token,
# expert) (moecommReplicaChoice_t; moecomm/Model/Placement.h's rule).
REPLICA_CHOICES = {"locality": lib.moecommReplicaLocality,
                   "load_only": lib.moecommReplicaLoadOnly}
# The wire format: None (x's own dtype) or an FP8 format (moecomm.h): e4m3
# with 1x128 f32 scales, with 1x128 power-of-two E8M0 scales, or MXFP8 (1x32
# E8M0 scales), quantized once on the sending rank and dequantized on arrival.
WIRE_DTYPES = {None: None, "fp8_e4m3": lib.moecommFloat8E4M3,
               "fp8_e4m3_ue8m0": lib.moecommFloat8E4M3UE8M0,
               "mxfp8": lib.moecommMxfp8}


def _check_wire(wire_dtype):
    if wire_dtype not in WIRE_DTYPES:
        raise ValueError("wire_dtype must be None, 'fp8_e4m3', 'fp8_e4m3_ue8m0' "
                         f"or 'mxfp8', got {wire_dtype!r}")


def _wire_type(wire_dtype, x):
    _check_wire(wire_dtype)
    return rows.row_type(x) if wire_dtype is None else WIRE_DTYPES[wire_dtype]


class Handle:
    """A layout (moecommLayout_t): the routing of one dispatch, reused by its
    combine and by the backward pass. Attributes (arrays of topk_idx's kind):

    * num_recv_rows (R), num_tokens (T), local_experts (E / W; with a
      placement S / W slots, and the per-expert arrays are per slot), dropped
      (rows dropped by capacity at this rank), strategy (the strategy in
      effect: "per_expert", "flat" or "hierarchical"; auto resolved);
    * tokens_per_expert [E/W] int64, after drops;
    * recv_weights [R] float32: the routing weight of each received row;
    * sources [R][2] int64: (source rank, source token) of each received row.

    close() frees it (also done when it is garbage collected)."""

    def __init__(self, comm, layout, like):
        self.comm = comm
        self._layout = ffi.gc(layout, lib.moecommLayoutDestroy)
        info = ffi.new("moecommLayoutInfo_t *")
        comm.check(lib.moecommLayoutGetInfo(self._layout, info))
        self.num_recv_rows = info.recvRows
        self.num_tokens = info.numTokens
        self.local_experts = info.localExperts
        self.dropped = info.dropped
        self.strategy = _STRATEGY_NAMES[info.strategy]
        self.tokens_per_expert = self._fetch(like, lib.moecommLayoutTokensPerExpert,
                                             (self.local_experts,), numpy.int64)
        self.recv_weights = self._fetch(like, lib.moecommLayoutRecvWeights,
                                        (self.num_recv_rows,), numpy.float32)
        self.sources = self._fetch(like, lib.moecommLayoutRecvSources,
                                   (self.num_recv_rows, 2), numpy.int64)

    def _fetch(self, like, function, shape, dtype):
        array = numpy.empty(shape, dtype=dtype)
        pointer = ffi.cast(f"{'float' if dtype == numpy.float32 else 'int64_t'} *",
                           array.__array_interface__["data"][0])
        self.comm.check(function(self._layout, pointer))
        return rows.torch.from_numpy(array) if rows.is_torch(like) else array

    @property
    def layout(self):
        if self._layout is None:
            raise ValueError("the handle is closed")
        return self._layout

    def close(self):
        if self._layout is not None:
            layout, self._layout = self._layout, None
            ffi.release(layout)


class Buffer:
    """Dispatch / combine over one communicator (moecomm.Communicator)."""

    def __init__(self, comm):
        self.comm = comm

    def layout(self, topk_idx, topk_weights, num_experts, *, strategy="auto",
               capacity=0, hidden=0, wire_dtype=None, placement=None,
               replica_choice=None):
        """Collective: the layout of a routing (moecommLayoutCreate). E =
        num_experts must be divisible by W (without a placement); capacity >
        0 bounds the rows a rank receives (the latest source rank, then
        token, is dropped first); strategy one of STRATEGIES; hidden and
        wire_dtype are auto's cost-model hints (0 = 7168; None = bf16 rows).
        placement: None, or a sequence of S ints, the logical expert of each
        physical slot (DeepSeek EPLB's phy2log; S % W == 0, rank r holds
        slots [r*S/W, (r+1)*S/W)); topk_idx then holds logical ids and the
        layout picks one replica each by replica_choice, one of
        REPLICA_CHOICES (same on every rank; None = "locality"), which
        needs a placement."""
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        if replica_choice is not None:
            if not isinstance(replica_choice, str) or replica_choice not in REPLICA_CHOICES:
                raise ValueError("replica_choice must be one of "
                                 f"{', '.join(REPLICA_CHOICES)}, got {replica_choice!r}")
            if placement is None:
                raise ValueError("replica_choice needs a placement")
        _check_wire(wire_dtype)
        slots = None
        if placement is not None:
            try:
                slots = ffi.new("int64_t[]", [operator.index(e) for e in placement])
            except TypeError:
                raise TypeError("placement must be a sequence of ints, got "
                                f"{type(placement).__name__}") from None
            if len(slots) == 0:
                raise ValueError("placement must hold at least one slot")
        desc = ffi.new("moecommLayoutDesc_t *")
        desc.idxType, desc.topkIdx = rows.indices("topk_idx", topk_idx)
        desc.numTokens, desc.topk = topk_idx.shape
        if topk_weights is not None:
            weight_types = (numpy.dtype(numpy.float32),) if isinstance(
                topk_weights, numpy.ndarray) else (rows.torch.float32,)
            desc.topkWeights = ffi.cast("float *", rows.checked(
                "topk_weights", topk_weights, weight_types, 2, tuple(topk_idx.shape)))
        desc.numExperts = num_experts
        desc.capacity = capacity
        desc.strategy = STRATEGIES[strategy]
        desc.hidden = hidden
        desc.wireType = lib.moecommBfloat16 if wire_dtype is None else WIRE_DTYPES[wire_dtype]
        if slots is not None:
            desc.numSlots = len(slots)
            desc.slotExperts = slots
            desc.replicaChoice = REPLICA_CHOICES[replica_choice or "locality"]
        layout = ffi.new("moecommLayout_t *")
        self.comm.check(lib.moecommLayoutCreate(self.comm.handle, desc, layout))
        return Handle(self.comm, layout[0], topk_idx)

    def dispatch(self, x, topk_idx, topk_weights, num_experts, *, wire_dtype=None,
                 strategy="auto", capacity=0, out=None, placement=None,
                 replica_choice=None):
        """Collective: a new layout from the routing, then x's rows to their
        experts. Returns (recv [R][H], handle); see layout() for the routing
        arguments and cached_dispatch() for x, wire_dtype and out."""
        hidden = x.shape[-1] if hasattr(x, "shape") and len(x.shape) == 2 else 0
        handle = self.layout(topk_idx, topk_weights, num_experts, strategy=strategy,
                             capacity=capacity, hidden=hidden, wire_dtype=wire_dtype,
                             placement=placement, replica_choice=replica_choice)
        return self.cached_dispatch(x, handle, wire_dtype=wire_dtype, out=out), handle

    def cached_dispatch(self, x, handle, *, wire_dtype=None, out=None):
        """Collective (moecommDispatch): x [T][H] float32/bf16 to the experts
        along `handle`'s layout; returns recv [R][H] of x's dtype,
        expert-major, bit-identical for every strategy and backend.
        wire_dtype "fp8_e4m3" (1x128 f32 block scales), "fp8_e4m3_ue8m0"
        (1x128 E8M0 scales) or "mxfp8" (1x32 E8M0 scales) sends FP8 instead
        of x's dtype. `out`, if given, must be a C-contiguous [R][H] array of x's
        kind and dtype; it is written in place and returned."""
        src = rows.rows("x", x, num_rows=handle.num_tokens)
        wire = _wire_type(wire_dtype, x)
        if out is None:
            out = rows.new_like(x, (handle.num_recv_rows, x.shape[1]))
        recv = rows.rows("out", out, hidden=x.shape[1], num_rows=handle.num_recv_rows)
        if recv.type != src.type:
            raise TypeError(f"out has dtype {out.dtype}, expected x's dtype {x.dtype}")
        self.comm.check(lib.moecommDispatch(self.comm.handle, handle.layout, src, wire,
                                            recv, ffi.NULL))
        return out

    def combine(self, y, handle, *, weighted=True, out=None):
        """Collective (moecommCombine): y [R][H] float32/bf16 in dispatch's
        row order back to the tokens' ranks, summed per token (weighted by the
        routing weights unless weighted=False); returns out [T][H] of y's
        dtype. `out` as for cached_dispatch."""
        src = rows.rows("y", y, num_rows=handle.num_recv_rows)
        if out is None:
            out = rows.new_like(y, (handle.num_tokens, y.shape[1]))
        dst = rows.rows("out", out, hidden=y.shape[1], num_rows=handle.num_tokens)
        if dst.type != src.type:
            raise TypeError(f"out has dtype {out.dtype}, expected y's dtype {y.dtype}")
        self.comm.check(lib.moecommCombine(self.comm.handle, handle.layout, src,
                                           1 if weighted else 0, dst, ffi.NULL))
        return out
