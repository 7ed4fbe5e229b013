//===- MoECommOps.td - moecomm operations -------------------*- tablegen -*-===//
//
// Collective-level ops (dispatch, combine, all_to_all) and the staged-level ops
// the passes rewrite them into (layout, permute, quantize, dequantize, pack,
// exchange, exchange_start, exchange_wait, unpack).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_DIALECT_MOECOMM_OPS_TD
#define MOECOMM_DIALECT_MOECOMM_OPS_TD

include "moecomm/Dialect/MoEComm/MoECommBase.td"
include "moecomm/Dialect/MoEComm/MoECommTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class MoEComm_Op<string mnemonic, list<Trait> traits = []>
    : Op<MoEComm_Dialect, mnemonic, traits>;

// Ops that talk to other ranks: ordered among themselves, never dropped.
defvar CollectiveEffects = MemoryEffects<[MemRead<MoEComm_CollectiveResource>,
                                          MemWrite<MoEComm_CollectiveResource>]>;

def MoEComm_Rows : RankedTensorOf<[BF16, F32, F8E4M3FN], [HasAnyRankOfPred<[2]>],
                                  "2-D tensor of rows">;
// Rows a framework exchanges: FP8 exists only on the wire, inside the staged
// level (quantized by the passes, with its scales).
def MoEComm_FloatRows : RankedTensorOf<[BF16, F32], [HasAnyRankOfPred<[2]>],
                                       "2-D tensor of rows">;
// Rows moecomm.all_to_all moves: a framework's rows, or i64 metadata (e.g.
// Megatron-Core's per-expert counts, exchanged as one row per peer).
def MoEComm_AllToAllRows : RankedTensorOf<[BF16, F32, I64], [HasAnyRankOfPred<[2]>],
                                          "2-D tensor of rows">;
// f32 scales (fp8_e4m3) or E8M0 bytes (fp8_e4m3_ue8m0, mxfp8): see
// getScalesType in MoEComm.h.
def MoEComm_Scales : RankedTensorOf<[F32, F8E8M0FNU], [HasAnyRankOfPred<[2]>],
                                    "2-D tensor of FP8 block scales">;

//===----------------------------------------------------------------------===//
// Collective level
//===----------------------------------------------------------------------===//

def MoEComm_DispatchOp : MoEComm_Op<"dispatch", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "send every token to the ranks of its top-k experts";
  let description = [{
    On every rank of the topology: `x` is `tensor<T x H x bf16|f32>` (the
    tokens of this rank; T may differ per rank and may be 0), `topk_idx` is
    `tensor<T x K x i32|i64>` (expert ids in [-1, E), -1 = masked slot, no id
    twice in a row) and `topk_weights` is `tensor<T x K x f32>`. H and K are
    static, 1 <= K <= min(E, 4096) (compile time grows with K; no model
    routes to more than a few dozen experts), and K is the same in
    `topk_idx` and `topk_weights`; T may be dynamic in any of the three, and
    where it is static it must agree.

    Results:
    * `recv`: `tensor<? x H x elt(x)>`, one row per (token, local expert) pair
      routed to this rank, expert-major: by local expert, then source rank,
      then source token. Identical bits for every strategy and backend.
    * `recv_weights`: `tensor<? x f32>`, the routing weight of each row.
    * `tokens_per_expert`: `tensor<(E/W) x i64>`, rows per local expert.
    * `handle`: the routing layout, consumed by `moecomm.combine`.

    With an expert placement on the topology (replicated experts, see the
    topology attribute) the layout picks one replica slot per (token,
    expert) and "local expert" above reads "local slot": `recv` is
    slot-major and `tokens_per_expert` is `tensor<(S/W) x i64>`.

    `align(N)` (N a power of two in [1, 65536]; 1, the default, is the
    unpadded layout) makes every local expert's segment of `recv` start at a
    multiple of N rows, as grouped GEMMs want (DeepEP / NCCL EP
    `expert_alignment`, Hybrid-EP `pad_multiple`; Megatron-Core pads the
    routing map): the segment holds the expert's real rows (same order as
    without align) then zero rows up to the next multiple of N. The padding
    rows have weight 0 in `recv_weights`, are counted in `recv`'s rows but
    not in `tokens_per_expert`, are made by the receiving rank (no byte more
    crosses any link) and are never read by `moecomm.combine`;
    `moecomm.cached_dispatch` along the handle writes zeros there. The
    segment starts are `moecomm.expert_offsets` of the handle (a separate op
    rather than a fifth result, so that the passes and every existing
    dispatch keep their four results).

    `wire<fp8_e4m3>` sends the rows as FP8 e4m3 with one f32 scale per 128
    contiguous elements (DeepSeek-V3's 1x128 blocks; the last block may be
    partial), quantized once on the sending rank; `recv` is then the
    dequantized rows. `wire<fp8_e4m3_ue8m0>` keeps the 1x128 blocks with each
    scale rounded up to a power of two and sent as one E8M0 byte
    (DeepSeek-V3's UE8M0 scales: H + ceil(H/128) bytes per row);
    `wire<mxfp8>` is OCP MXFP8 (one E8M0 scale per 32 elements, scale
    2^(floor(log2 amax) - 8) as in the OCP MX v1.0 spec: H + ceil(H/32)
    bytes per row). The cost model sizes rows by format; the staged level
    carries every format (f32 scales for `fp8_e4m3`, `f8E8M0FNU` scales for
    the others, see `moecomm.quantize`). Without `wire`, rows
    travel in x's dtype. `capacity(N)`
    bounds the rows received per rank; overflow drops rows deterministically
    (latest source rank, then latest token first). `strategy<...>` overrides
    the pipeline's strategy for this op and, when concrete (not `auto`), is
    part of the `handle` result's type: with `strategy<flat>` the handle is
    `!moecomm.handle<..., strategy = flat>`, and the combine (and any
    function argument or result carrying the handle) must spell that type.

    Verifier errors (besides the shapes above): `capacity` <= 0, `align` not
    a power of two in [1, 65536].

    Runtime errors (reported by the runtime, collectively): ids out of range,
    duplicate ids in a row, ranks disagreeing on K or E.

    ```mlir
    %recv, %w, %tpe, %h = moecomm.dispatch %x, %idx, %wts
        topology<ranks = 16, ranks_per_node = 8, experts = 256> wire<fp8_e4m3>
        align(128)
        : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$x,
                       RankedTensorOf<[I32, I64]>:$topk_idx,
                       RankedTensorOf<[F32]>:$topk_weights,
                       MoEComm_TopologyAttr:$topology,
                       OptionalAttr<MoEComm_WireDtypeAttr>:$wire,
                       OptionalAttr<MoEComm_StrategyAttr>:$strategy,
                       OptionalAttr<I64Attr>:$capacity,
                       OptionalAttr<I64Attr>:$align);
  let results = (outs MoEComm_FloatRows:$recv,
                      RankedTensorOf<[F32]>:$recv_weights,
                      RankedTensorOf<[I64]>:$tokens_per_expert,
                      MoEComm_HandleType:$handle);
  let assemblyFormat = [{
    $x `,` $topk_idx `,` $topk_weights `topology` `` $topology
    (`wire` `` $wire^)? (`strategy` `` $strategy^)?
    (`capacity` `(` $capacity^ `)`)? (`align` `(` $align^ `)`)? attr-dict
    `:` type($x) `,` type($topk_idx) `,` type($topk_weights)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The wire dtype in effect: the `wire` attribute, or x's dtype.
    WireDtype getWireDtype();
  }];
}

def MoEComm_CombineOp : MoEComm_Op<"combine", [CollectiveEffects]> {
  let summary = "send expert outputs home and sum them per token";
  let description = [{
    `y` is `tensor<R x H x bf16|f32>` in the row order of the `recv` result of
    the dispatch that produced `handle` (the expert outputs). The result is
    `tensor<T x H x elt(y)>` on each token's home rank:
    `out[t] = sum over kept slots k of w[t,k] * y[row(t,k)]` with `weighted`,
    the plain sum without. Accumulation is in f32; tokens with no kept slot
    get zeros. The hierarchical strategy reduces inside the destination node
    first (one partial row per node crosses the inter-node network), so its
    result may differ from per_expert in the last bits of the output dtype
    (bound in docs/runtime.md). Unweighted combine is the adjoint of dispatch.
    The padding rows of a dispatch with `align(N)` are never read (whatever
    an expert wrote there).

    Verifier errors: `y`'s hidden size differs from the dispatch's `x` (its
    dtype may differ: an expert may return f32 rows for bf16 tokens); the
    result's dtype/hidden differ from `y`; a static result row count differs
    from the dispatch's static T.

    ```mlir
    %out = moecomm.combine %y, %h weighted
        : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>
        -> tensor<?x7168xbf16>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$y, MoEComm_HandleType:$handle,
                       UnitAttr:$weighted);
  let results = (outs MoEComm_FloatRows:$out);
  let assemblyFormat = [{
    $y `,` $handle (`weighted` $weighted^)? attr-dict
    `:` type($y) `,` qualified(type($handle)) `->` type($out)
  }];
  let hasVerifier = 1;
}

def MoEComm_CachedDispatchOp : MoEComm_Op<"cached_dispatch", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "dispatch rows along an existing layout (backward of combine)";
  let description = [{
    Moves `x` (`tensor<T x H x bf16|f32>`, one row per token of this rank)
    along the layout `handle` computed by an earlier `moecomm.dispatch`,
    without computing a new one: the result is `tensor<? x H x elt(x)>` in
    that dispatch's expert-major row order. This is the gradient of combine:
    the backward pass sends `grad_out` to the experts with the forward's
    layout and multiplies by `recv_weights` locally (DeepEP's cached-handle
    dispatch). `wire<...>` as for `moecomm.dispatch`. With the dispatch's
    `align(N)`, the padding rows of the result are zeros.

    Verifier errors: x's hidden size differs from the dispatch's, a static
    token count differs from the dispatch's, wire dtype mismatches x.

    ```mlir
    %grad_recv = moecomm.cached_dispatch %grad_out, %h
        : tensor<?x7168xbf16>, !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$x, MoEComm_HandleType:$handle,
                       OptionalAttr<MoEComm_WireDtypeAttr>:$wire);
  let results = (outs MoEComm_FloatRows:$recv);
  let assemblyFormat = [{
    $x `,` $handle (`wire` `` $wire^)? attr-dict
    `:` type($x) `,` qualified(type($handle))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The wire dtype in effect: the `wire` attribute, or x's dtype.
    WireDtype getWireDtype();
  }];
}

def MoEComm_AllToAllOp : MoEComm_Op<"all_to_all", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "ragged all-to-all of rows";
  let description = [{
    `send` is `tensor<N x H x bf16|f32|i64>` sorted by destination rank and
    `send_counts` is `tensor<W x i32|i64>` (rows for each destination;
    `tensor<? x i32|i64>` keeps the graph independent of W, e.g. for
    `moecomm-split-hierarchical`'s `ranks=`, and is checked at run time). The
    results are `recv`, `tensor<? x H x elt(send)>`, the rows received,
    concatenated by source rank, and `recv_counts`, `tensor<W x i64>`. The
    runtime checks collectively, before any payload moves, that every rank's
    counts agree (error, not a hang). i64 rows carry metadata, e.g.
    Megatron-Core's `num_local_tokens_per_expert` (`tensor<W x L x i64>`, one
    row per destination rank, counts 1 each): every rank learns what each
    source sends to each of its local experts. Traffic is counted as for
    any rows: H elements of 8 bytes per i64 row.

    ```mlir
    %recv, %counts = moecomm.all_to_all %send, %send_counts
        topology<ranks = 4, ranks_per_node = 2> : tensor<?x64xbf16>, tensor<4xi64>
    ```
  }];
  let arguments = (ins MoEComm_AllToAllRows:$send,
                       RankedTensorOf<[I32, I64]>:$send_counts,
                       MoEComm_TopologyAttr:$topology);
  let results = (outs MoEComm_AllToAllRows:$recv,
                      RankedTensorOf<[I64]>:$recv_counts);
  let assemblyFormat = [{
    $send `,` $send_counts `topology` `` $topology attr-dict
    `:` type($send) `,` type($send_counts)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Framework level: the local row moves a framework writes around a
// per-expert exchange (Megatron-Core's all-to-all token dispatcher, MaxText's
// sparse MoE path). Local, no communication; `moecomm-raise-dispatch` turns
// a per-expert exchange written with them into dispatch / combine.
//===----------------------------------------------------------------------===//

def MoEComm_PermuteTokensOp : MoEComm_Op<"permute_tokens", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "sort token rows by expert, one row per (token, expert)";
  let description = [{
    `x` is `tensor<T x H x bf16|f32>` (this rank's tokens) and `topk_idx`
    `tensor<T x K x i32|i64>` (expert ids in [-1, E), -1 = masked slot, no
    id twice in a row, as for `moecomm.dispatch`). Results:
    * `rows`: `tensor<? x H x elt(x)>`, one copy of x's row t for every kept
      slot (t, k), ordered by expert id, then by token: the order of a
      stable argsort of the flattened ids (Megatron-Core's `permute` with a
      routing map, MaxText's `permute`: `take(x, argsort(ids) // K)`).
      Masked slots have no row. With `weights(w)` (`tensor<T x K x f32>`)
      the copy for slot (t, k) is `w[t, k] * x[t]`, multiplied in f32 and
      rounded once to x's dtype: the adjoint of `moecomm.unpermute_tokens`
      with weights, i.e. what the backward pass of a per-expert exchange
      sends to the experts (the gradient of Megatron-Core's `unpermute` with
      probs, scattered to the permuted rows).
    * `group_sizes`: `tensor<E x i64>`, the rows of each expert (the
      histogram of the ids; Megatron's `tokens_per_expert`, MaxText's
      `group_sizes`).
    * `slot_rows`: `tensor<T x K x i64>`, the row of `rows` that slot (t, k)
      became, -1 for a masked slot: what `moecomm.unpermute_tokens` needs to
      bring rows home (Megatron's `sorted_indices`).

    Verifier errors: weights not [T, K] like topk_idx.
    Runtime errors (the compiled graph's check, `moecomm_rt_check`): an id
    outside [-1, E), an id twice in a row (the slot is then skipped as
    masked), x or the weights and topk_idx with different token counts
    (when one is dynamic; then no slot is kept).

    ```mlir
    %rows, %sizes, %slots = moecomm.permute_tokens %x, %idx experts(8)
        : tensor<?x16xbf16>, tensor<?x4xi32>
    %grad_rows, %gsizes, %gslots = moecomm.permute_tokens %grad_out, %idx
        weights(%w : tensor<?x4xf32>) experts(8)
        : tensor<?x16xbf16>, tensor<?x4xi32>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$x, RankedTensorOf<[I32, I64]>:$topk_idx,
                       Optional<RankedTensorOf<[F32]>>:$topk_weights,
                       I64Attr:$experts);
  let results = (outs MoEComm_FloatRows:$rows,
                      RankedTensorOf<[I64]>:$group_sizes,
                      RankedTensorOf<[I64]>:$slot_rows);
  let assemblyFormat = [{
    $x `,` $topk_idx (`weights` `(` $topk_weights^ `:` type($topk_weights) `)`)?
    `experts` `(` $experts `)` attr-dict `:` type($x) `,` type($topk_idx)
  }];
  let hasVerifier = 1;
}

def MoEComm_UnpermuteTokensOp : MoEComm_Op<"unpermute_tokens", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "bring (token, expert) rows home and sum them per token";
  let description = [{
    The inverse of `moecomm.permute_tokens` followed by the sum over top-k:
    `rows` is `tensor<R x H x bf16|f32>`, `slot_rows` the `tensor<T x K x
    i64>` that permute_tokens made, and the result `tensor<T x H x
    elt(rows)>` is `out[t] = sum over k with slot_rows[t, k] >= 0 of
    w[t, k] * rows[slot_rows[t, k]]` with `weights(w)` (`tensor<T x K x
    f32>`, the routing weights), the plain sum without; accumulated in f32
    in slot order k = 0, 1, ... and rounded once. A token with no kept slot
    gets zeros. Megatron-Core's `unpermute` with probs, MaxText's
    `unpermute` (unsort, reshape to [T, K, H], weighted sum).

    Verifier errors: slot_rows or weights not [T, K] with one T and K.
    Runtime errors: a slot row outside [-1, R) (its term is skipped), weights
    with another token count than slot_rows (when one is dynamic; then no
    term is added).

    ```mlir
    %out = moecomm.unpermute_tokens %back, %slots weights(%w : tensor<?x4xf32>)
        : tensor<?x16xbf16>, tensor<?x4xi64>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$rows, RankedTensorOf<[I64]>:$slot_rows,
                       Optional<RankedTensorOf<[F32]>>:$topk_weights);
  let results = (outs MoEComm_FloatRows:$out);
  let assemblyFormat = [{
    $rows `,` $slot_rows (`weights` `(` $topk_weights^ `:` type($topk_weights) `)`)?
    attr-dict `:` type($rows) `,` type($slot_rows)
  }];
  let hasVerifier = 1;
}

def MoEComm_SortChunksOp : MoEComm_Op<"sort_chunks", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "regroup received rows from source-major to expert-major";
  let description = [{
    `in` is `tensor<N x H x bf16|f32>`, the rows a per-expert exchange
    delivered: by source rank s, then by local expert l, `counts[s, l]` rows
    each (`counts` is `tensor<W x L x i64>`, what each source sent to each
    local expert). The results are `out`, the same rows by local expert,
    then source rank (each chunk in its order), which is `moecomm.dispatch`'s
    expert-major `recv` order, and `tokens_per_expert` (`tensor<L x i64>`,
    the column sums of counts). Megatron-Core's `sort_chunks_by_idxs` with
    the local-expert order, before its grouped GEMM.

    Verifier errors: counts not 2-D with a static L >= 1.
    Runtime error: a negative count, or counts not summing to N (the
    result is then N rows of zeros, and zero tokens_per_expert).

    ```mlir
    %em, %tpe = moecomm.sort_chunks %recv, %counts
        : tensor<?x16xbf16>, tensor<4x2xi64>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$in, RankedTensorOf<[I64]>:$counts);
  let results = (outs MoEComm_FloatRows:$out,
                      RankedTensorOf<[I64]>:$tokens_per_expert);
  let assemblyFormat = "$in `,` $counts attr-dict `:` type($in) `,` type($counts)";
  let hasVerifier = 1;
}

def MoEComm_UnsortChunksOp : MoEComm_Op<"unsort_chunks", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "regroup expert outputs from expert-major to source-major";
  let description = [{
    The inverse of `moecomm.sort_chunks` with the same `counts` (`tensor<W x
    L x i64>`): `in` (`tensor<N x H x bf16|f32>`) holds the rows by local
    expert, then source rank; the result holds them by source rank, then
    local expert, ready to be sent back (Megatron-Core's
    `sort_chunks_by_idxs` with the restoring order, after the grouped GEMM).

    Verifier errors: counts not 2-D with a static L >= 1.
    Runtime error: a negative count, or counts not summing to N (the
    result is then N rows of zeros).

    ```mlir
    %sm = moecomm.unsort_chunks %y, %counts : tensor<?x16xbf16>, tensor<4x2xi64>
    ```
  }];
  let arguments = (ins MoEComm_FloatRows:$in, RankedTensorOf<[I64]>:$counts);
  let results = (outs MoEComm_FloatRows:$out);
  let assemblyFormat = "$in `,` $counts attr-dict `:` type($in) `,` type($counts)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Staged level
//===----------------------------------------------------------------------===//

def MoEComm_LayoutOp : MoEComm_Op<"layout", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "compute a dispatch's routing layout once";
  let description = [{
    The first step of a staged dispatch: validates `topk_idx`
    (`tensor<T x K x i32|i64>`) and `topk_weights` (`tensor<T x K x f32>`;
    K static as for `moecomm.dispatch`, 1 <= K <= min(E, 4096)),
    computes the rows every rank receives, capacity drops and the plan of
    every exchange stage of `strategy` (per_expert, flat or hierarchical;
    `auto` is resolved before this level), exchanging only routing metadata.
    Results: the `handle` used by every later staged op of this dispatch and
    its combine, `recv_weights` (`tensor<? x f32>`, expert-major) and
    `tokens_per_expert` (`tensor<(E/W) x i64>`, or per local slot,
    `tensor<(S/W) x i64>`, with an expert placement). `capacity` and `align` are
    the dispatch's (`align`: padded expert segments, see `moecomm.dispatch`;
    the dispatch unpack writes the padding rows).

    Number of exchange stages (the same rule as the runtime): 0 when W = 1;
    1 (`global`) for per_expert and flat; for hierarchical 1 (`intra_node`)
    when G = W, 1 (`inter_node`) when G = 1, else 2 (`inter_node` then
    `intra_node` for dispatch, the reverse for combine).
  }];
  let arguments = (ins RankedTensorOf<[I32, I64]>:$topk_idx,
                       RankedTensorOf<[F32]>:$topk_weights,
                       MoEComm_TopologyAttr:$topology,
                       MoEComm_StrategyAttr:$strategy,
                       OptionalAttr<I64Attr>:$capacity,
                       OptionalAttr<I64Attr>:$align);
  let results = (outs MoEComm_HandleType:$handle,
                      RankedTensorOf<[F32]>:$recv_weights,
                      RankedTensorOf<[I64]>:$tokens_per_expert);
  let assemblyFormat = [{
    $topk_idx `,` $topk_weights `topology` `` $topology `strategy` `` $strategy
    (`capacity` `(` $capacity^ `)`)? (`align` `(` $align^ `)`)? attr-dict
    `:` type($topk_idx) `,` type($topk_weights)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of exchange stages of this layout's strategy and topology.
    int64_t getNumStages();
    /// Scope of exchange stage `stage` of `direction`.
    Scope getStageScope(Direction direction, int64_t stage);
  }];
}

def MoEComm_ExpertOffsetsOp : MoEComm_Op<"expert_offsets", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "where each local expert's rows start in a dispatch's recv";
  let description = [{
    The result is `tensor<(E/W + 1) x i64>`: local expert e's segment of the
    `recv` of the dispatch (or layout) that made `handle` is rows
    `[offsets[e], offsets[e+1])`, its `tokens_per_expert[e]` real rows first,
    then the padding of `align(N)`; `offsets[0] = 0`, `offsets[E/W]` is the
    number of rows of `recv`, and every entry is a multiple of N. This is
    the group-offset array of a grouped GEMM (e.g. the `m_indices` /
    `offs` argument of DeepGEMM's and PyTorch's grouped matmuls). Without
    `align` the offsets are the prefix sums of `tokens_per_expert`. Lowered
    to `moecommLayoutExpertOffsets` (local, no communication). With an
    expert placement the segments are the local slots': `tensor<(S/W + 1) x
    i64>`.

    ```mlir
    %offs = moecomm.expert_offsets %h
        : !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>
    ```
  }];
  let arguments = (ins MoEComm_HandleType:$handle);
  let results = (outs RankedTensorOf<[I64]>:$offsets);
  let assemblyFormat = "$handle attr-dict `:` qualified(type($handle))";
}

def MoEComm_PermuteOp : MoEComm_Op<"permute", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "materialize the row order of an exchange stage or the output";
  let description = [{
    Applies the layout's row map for one step of `direction`, as a separate
    buffer: `stage N` is the send order of exchange stage N (rows grouped by
    destination); `output` is the final order (dispatch: expert-major `recv`;
    combine: `out[T, H]` by token). Dispatch maps gather rows (a row may be
    repeated for several destinations or experts); combine maps sum rows per
    destination row in f32 (`weighted` applies the routing weights at the
    step where the strategy applies them). `in` is `tensor<N x H x elt>`; the
    result is `tensor<? x H x elt>`. FP8 rows (f8E4M3FN) carry their
    `scales` (`tensor<N x B x f32|f8E8M0FNU>`, one per block as
    `moecomm.quantize` makes them), which are gathered with them; combine
    never sees FP8.

    `moecomm-fuse-permute` folds permutes into the adjacent pack/unpack so no
    separately permuted buffer goes through memory.
  }];
  let arguments = (ins MoEComm_Rows:$in, Optional<MoEComm_Scales>:$scales,
                       MoEComm_HandleType:$handle,
                       MoEComm_DirectionAttr:$direction,
                       OptionalAttr<I64Attr>:$stage, UnitAttr:$weighted);
  let results = (outs MoEComm_Rows:$out, Optional<MoEComm_Scales>:$out_scales);
  let assemblyFormat = [{
    $in (`scales` `(` $scales^ `:` type($scales) `)`)? `,` $handle custom<Direction>($direction)
    custom<Step>($stage) (`weighted` $weighted^)? attr-dict
    `:` type($in) `,` qualified(type($handle))
  }];
  let hasVerifier = 1;
}

def MoEComm_QuantizeOp : MoEComm_Op<"quantize", [
    Pure, InferTypeOpAdaptor]> {
  let summary = "FP8 e4m3 quantization with block scales";
  let description = [{
    `in` is `tensor<N x H x bf16|f32>`; `wire<...>` is the FP8 format
    (default `fp8_e4m3`, see `moecomm.dispatch`). Results: `q`,
    `tensor<N x H x f8E4M3FN>`, and `scales`, one per row and block of
    contiguous elements (the last block may be partial), with
    `q = round_to_nearest_even(x / scale)`, saturating:
    * `fp8_e4m3`: `tensor<N x ceil(H/128) x f32>`, `scale = amax / 448`
      (1 for an all-zero block); DeepSeek-V3's 1x128 activation tiles.
    * `fp8_e4m3_ue8m0`: `tensor<N x ceil(H/128) x f8E8M0FNU>`, amax / 448
      rounded up to a power of two (DeepSeek-V3's UE8M0 scales).
    * `mxfp8`: `tensor<N x ceil(H/32) x f8E8M0FNU>`,
      `scale = 2^(floor(log2 amax) - 8)` (OCP Microscaling v1.0 MXFP8).
    An all-zero block has scale 1 in every format; the rules are the
    runtime's (moecommQuantizeFp8).

    Verifier errors: `wire` not an FP8 format.
  }];
  let arguments = (ins RankedTensorOf<[BF16, F32]>:$in,
                       OptionalAttr<MoEComm_WireDtypeAttr>:$wire);
  let results = (outs MoEComm_Rows:$q, MoEComm_Scales:$scales);
  let assemblyFormat = "$in (`wire` `` $wire^)? attr-dict `:` type($in)";
  let hasVerifier = 1;
  let builders = [
    // FP8 format `wire`, spelled only when not the default fp8_e4m3.
    OpBuilder<(ins "Value":$in, "WireDtype":$wire)>
  ];
  let extraClassDeclaration = [{
    /// The FP8 format: the `wire` attribute, or fp8_e4m3.
    WireDtype getFp8Wire();
  }];
}

def MoEComm_DequantizeOp : MoEComm_Op<"dequantize", [Pure]> {
  let summary = "FP8 e4m3 with block scales back to bf16/f32";
  let description = [{
    `q` is `tensor<N x H x f8E4M3FN>` and `scales` its block scales in the
    FP8 format `wire<...>` (default `fp8_e4m3`; shapes and types as
    `moecomm.quantize` makes them); the result is
    `tensor<N x H x bf16|f32>` with `x = q * scale` of the element's block.
    The format is spelled (not only implied by the scales) so that
    `moecomm-fuse-quant` can tell whether a consumer's `moecomm.quantize`
    asks for the same format: with one block per row (H <= 32) both E8M0
    formats have the same scale shape.

    Verifier errors: `wire` not an FP8 format, scales not of that format.
  }];
  let arguments = (ins MoEComm_Rows:$q, MoEComm_Scales:$scales,
                       OptionalAttr<MoEComm_WireDtypeAttr>:$wire);
  let results = (outs RankedTensorOf<[BF16, F32]>:$out);
  let assemblyFormat = [{
    $q `,` $scales (`wire` `` $wire^)? attr-dict `:` type($q) `,` type($scales)
    `->` type($out)
  }];
  let hasVerifier = 1;
  let builders = [
    // FP8 format `wire`, spelled only when not the default fp8_e4m3.
    OpBuilder<(ins "Type":$out, "Value":$q, "Value":$scales,
                   "WireDtype":$wire)>
  ];
  let extraClassDeclaration = [{
    /// The FP8 format: the `wire` attribute, or fp8_e4m3.
    WireDtype getFp8Wire();
  }];
}

def MoEComm_PackOp : MoEComm_Op<"pack", [Pure]> {
  let summary = "gather (or reduce) rows straight into an exchange's send buffer";
  let description = [{
    The fused form of `moecomm.permute` to `stage N` (and, when the result
    is FP8 while `in` is bf16/f32, of the `moecomm.quantize` after it): rows
    are read from `in` through the layout's map and written once into the
    send buffer of exchange stage `stage`. Dispatch: gathers (optionally
    quantizing, in the FP8 format `wire<...>`, default `fp8_e4m3`, as
    `moecomm.quantize` does, or forwarding FP8 rows with their scales);
    combine: sums in f32 (`weighted` as for permute). Result:
    `tensor<? x H x elt>` plus scales for FP8.

    Verifier errors (besides the row rules of permute): `wire` on a pack
    that does not quantize, or not an FP8 format; result scales not of the
    format.
  }];
  let arguments = (ins MoEComm_Rows:$in, Optional<MoEComm_Scales>:$scales,
                       MoEComm_HandleType:$handle,
                       MoEComm_DirectionAttr:$direction, I64Attr:$stage,
                       UnitAttr:$weighted,
                       OptionalAttr<MoEComm_WireDtypeAttr>:$wire);
  let results = (outs MoEComm_Rows:$out, Optional<MoEComm_Scales>:$out_scales);
  let assemblyFormat = [{
    $in (`scales` `(` $scales^ `:` type($scales) `)`)? `,` $handle custom<Direction>($direction) `stage` $stage
    (`weighted` $weighted^)? (`wire` `` $wire^)? attr-dict
    `:` type($in) `,` qualified(type($handle)) `->` type(results)
  }];
  let hasVerifier = 1;
}

def MoEComm_UnpackOp : MoEComm_Op<"unpack", [Pure]> {
  let summary = "gather (or reduce) the last exchange's rows into the output";
  let description = [{
    The fused form of `moecomm.permute ... output` (and of a
    `moecomm.dequantize` before it when `in` is FP8 and the result is
    bf16/f32). Dispatch: `tensor<R x H x elt>` expert-major, dequantizing on
    the fly; combine: `out[T x H]`, summing partial rows in f32.
  }];
  let arguments = (ins MoEComm_Rows:$in, Optional<MoEComm_Scales>:$scales,
                       MoEComm_HandleType:$handle,
                       MoEComm_DirectionAttr:$direction, UnitAttr:$weighted);
  let results = (outs MoEComm_FloatRows:$out);
  let assemblyFormat = [{
    $in (`scales` `(` $scales^ `:` type($scales) `)`)? `,` $handle custom<Direction>($direction)
    (`weighted` $weighted^)? attr-dict
    `:` type($in) `,` qualified(type($handle)) `->` type($out)
  }];
  let hasVerifier = 1;
}

def MoEComm_ExchangeOp : MoEComm_Op<"exchange", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "move the send rows of one stage to their destinations";
  let description = [{
    Exchange stage `stage` of `direction` within `scope`: every rank sends
    the rows of its send buffer (`tensor<N x H x elt>`, grouped by
    destination as the layout's plan says) and receives
    `tensor<? x H x elt>`, concatenated by source. FP8 rows travel with their
    `scales`. Counts come from the layout; no metadata moves here.
  }];
  let arguments = (ins MoEComm_Rows:$send, Optional<MoEComm_Scales>:$scales,
                       MoEComm_HandleType:$handle,
                       MoEComm_DirectionAttr:$direction, I64Attr:$stage,
                       MoEComm_ScopeAttr:$scope);
  let results = (outs MoEComm_Rows:$recv, Optional<MoEComm_Scales>:$recv_scales);
  let assemblyFormat = [{
    $send (`scales` `(` $scales^ `:` type($scales) `)`)? `,` $handle custom<Direction>($direction) `stage` $stage
    `scope` `` $scope attr-dict
    `:` type($send) `,` qualified(type($handle))
  }];
  let hasVerifier = 1;
}

def MoEComm_ExchangeStartOp : MoEComm_Op<"exchange_start", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "start an exchange; its rows arrive at exchange_wait";
  let description = [{
    The asynchronous form of `moecomm.exchange` produced by
    `moecomm-schedule-overlap`. Returns a `!moecomm.request` and the receive
    buffers, which are not readable yet: their only use is the matching
    `moecomm.exchange_wait`, which returns them filled. Independent work
    placed between the two overlaps with the transfer (chunked overlap as in
    Comet and Megatron-LM's MoE overlap).
  }];
  let arguments = (ins MoEComm_Rows:$send, Optional<MoEComm_Scales>:$scales,
                       MoEComm_HandleType:$handle,
                       MoEComm_DirectionAttr:$direction, I64Attr:$stage,
                       MoEComm_ScopeAttr:$scope);
  let results = (outs MoEComm_RequestType:$request, MoEComm_Rows:$recv,
                      Optional<MoEComm_Scales>:$recv_scales);
  let assemblyFormat = [{
    $send (`scales` `(` $scales^ `:` type($scales) `)`)? `,` $handle custom<Direction>($direction) `stage` $stage
    `scope` `` $scope attr-dict
    `:` type($send) `,` qualified(type($handle))
  }];
  let hasVerifier = 1;
}

def MoEComm_ExchangeWaitOp : MoEComm_Op<"exchange_wait", [
    CollectiveEffects, InferTypeOpAdaptor]> {
  let summary = "wait for an exchange started by exchange_start";
  let description = [{
    Completes `request` and returns the receive rows (and scales) that the
    matching `moecomm.exchange_start` produced, now filled.
  }];
  let arguments = (ins MoEComm_RequestType:$request, MoEComm_Rows:$recv,
                       Optional<MoEComm_Scales>:$recv_scales);
  let results = (outs MoEComm_Rows:$out, Optional<MoEComm_Scales>:$out_scales);
  let assemblyFormat = [{
    $request `,` $recv (`scales` `(` $recv_scales^ `:` type($recv_scales) `)`)? attr-dict
    `:` type($recv)
  }];
  let hasVerifier = 1;
}

#endif // MOECOMM_DIALECT_MOECOMM_OPS_TD
