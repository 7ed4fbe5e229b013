//===- Passes.td - moecomm passes ---------------------------*- tablegen -*-===//
//
// The compiler half of moecomm (DESIGN.md §4): collective level -> staged
// level -> runtime calls -> LLVM dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_PASSES_TD
#define MOECOMM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MoECommRaiseDispatch : Pass<"moecomm-raise-dispatch", "::mlir::func::FuncOp"> {
  let summary = "Raise a framework's per-expert exchange to moecomm.dispatch / combine";
  let description = [{
    A framework sends one row per (token, selected expert) over a ragged
    all-to-all (Megatron-Core's `MoEAlltoAllTokenDispatcher`, MaxText's
    sparse MoE path, JAX's `ragged_all_to_all` once imported): a token
    routed to several experts of one node crosses the network once per
    expert. This pass recognises that exchange, written with the framework
    level ops (`moecomm.permute_tokens`, `sort_chunks`, `unsort_chunks`,
    `unpermute_tokens`) and `moecomm.all_to_all`, and replaces it with
    `moecomm.dispatch` / `moecomm.combine` on the same ranks, which
    `moecomm-split-hierarchical` then splits so that a token crosses the
    network at most once per node (what DeepEP's dispatch / combine do).

    The recognised form, in one block (W ranks, E = W * L experts):

    ```mlir
    %rows, %gs, %slots = moecomm.permute_tokens %x, %idx experts(E)
    %gs2 = tensor.expand_shape %gs [[0, 1]] output_shape [W, L]
        : tensor<E x i64> into tensor<W x L x i64>
    %sc = linalg.reduce ins(%gs2) outs(%zeros) dimensions = [1]
        (%a, %b) { %s = arith.addi %a, %b; linalg.yield %s }   // per-rank sums
    %recv, %rc = moecomm.all_to_all %rows, %sc topology<ranks = W, ...>
    // grouped experts (Megatron's grouped GEMM): the counts matrix, the regroup
    %cm, %_ = moecomm.all_to_all %gs2, %ones topology<same>   // W ones
    %em, %tpe = moecomm.sort_chunks %recv, %cm                // %cm or a tensor.cast of it
    %y = ... any computation of %em and %tpe ...
    %sm = moecomm.unsort_chunks %y, %cm
    %back, %_ = moecomm.all_to_all %sm, %rc topology<same>
    // or row-wise experts: %back, %_ = moecomm.all_to_all %y2, %rc, with %y2
    // %recv itself or computed from it by elementwise ops of received rows only
    %out = moecomm.unpermute_tokens %back, %slots [weights(%w)]
    ```

    becomes

    ```mlir
    %r, %rw, %tpe2, %h = moecomm.dispatch %x, %idx, %w'
        topology<ranks = W, ranks_per_node = <same>, experts = E>
    %y = ... the same computation of %r and %tpe2 ...   // row-wise: of %r
    %out2 = moecomm.combine %y, %h [weighted]
    ```

    with `%w' = %w` (a weighted combine) or, when unpermute_tokens has no
    weights, all-ones `[T, K]` f32 weights (an unweighted combine). The
    dispatch takes the place of the forward all_to_all, the combine that of
    the all_to_all back, so the collectives keep their program order.
    `sort_chunks` orders the received rows by local expert, then source
    rank, then token: the order of the dispatch's `recv`, so its results are
    the dispatch's `recv` and `tokens_per_expert` and the expert computation
    is not touched. Row-wise experts (identity, or elementwise ops) give
    each row a result that does not depend on the rows' order, so they read
    the dispatch's rows instead. The dispatch sends each token once per
    destination rank (flat) or node (hierarchical) instead of once per
    expert; the results are the same rows, summed per token in f32 as
    unpermute_tokens does (the flat and hierarchical strategies sum partial
    rows first: last-bit differences within docs/runtime.md's bound). The
    per-expert strategy keeps the original's traffic and its bits.

    **Backward.** The backward pass of that exchange sends each (token,
    expert) row of the output gradient scaled by its weight to the experts,
    runs the experts' backward and brings the input gradients home
    unweighted. Written with its own permutation (as when the backward
    recomputes it, e.g. Megatron-Core's MoE recomputation), it is the same
    chain with `weights(%w)` on `permute_tokens` (rows `w[t, k] *
    grad_out[t]`, rounded once) and none on `unpermute_tokens`. It becomes

    ```mlir
    %g = moecomm.cached_dispatch %grad_out, %h    // %h: the forward's handle
    %gw = linalg.generic ... %g[r] * %rw[r] ...   // f32 product, rounded once
    %y = ... the same computation of %gw and %tpe2 ...
    %grad_x = moecomm.combine %y, %h              // unweighted
    ```

    the gradient of a weighted combine and of a dispatch (docs/runtime.md),
    along the layout of a `moecomm.dispatch` of the same `%idx` and `%w`
    values on the same ranks, ranks per node and experts, without
    placement, `capacity` or `align`, whose rows have `%grad_out`'s hidden
    size and no other static token count, computed before the backward's
    forward exchange: the forward's,
    raised first (the pass raises every forward chain before any backward
    one). `%rw` and `%tpe2` are that dispatch's `recv_weights` and
    `tokens_per_expert`: the rows arrive in its order, and each weight is
    the one the original multiplied its row by, so every expert input has
    the original's bits. Without such a dispatch (a backward function of its
    own) the backward gets a `moecomm.dispatch` of `%grad_out` with `%w`
    instead, whose rows are scaled by its own `recv_weights`; when the
    function has a dispatch of the same ids that does not qualify, a remark
    at the permute_tokens says which ("moecomm-raise-dispatch: the backward
    gets a layout of its own: the 'moecomm.dispatch' of its ids at LINE:COL
    takes other weights", "... has a capacity", ...). A chain with
    weights at both ends is not raised.

    Legality, all from the IR; a chain that starts with a
    `moecomm.permute_tokens` and fails one is left as it is, with a remark
    "moecomm-raise-dispatch: not raised: <why>" at the op concerned, naming
    it, followed by "(the exchange from the 'moecomm.permute_tokens' at
    LINE:COL)" when that op is not the chain's permute_tokens (one op may
    stop two chains, e.g. a backward regrouping its rows with the forward's
    counts matrix):
    - the group sizes are reshaped by a `tensor.expand_shape` to a static
      `[W, L]` (E = W * L then holds by its verifier);
    - the rows are sent by a `moecomm.all_to_all` whose topology has W ranks
      and no expert placement, with send counts that are the per-rank sums
      of that `[W, L]` (a `linalg.reduce` over dimension 1 with `arith.addi`
      from zeros, possibly through a `tensor.cast`);
    - grouped form: `sort_chunks` and `unsort_chunks` take the same counts
      matrix (directly or through `tensor.cast`s), which is the
      `all_to_all` of exactly the `[W, L]` group sizes with a constant of W
      ones as send counts, on the forward exchange's topology; the unsorted
      rows are sent back by an `all_to_all`;
    - row-wise form: every op reading the received rows (or rows computed
      from them) is the `all_to_all` back or an op with MLIR's
      `Elementwise` trait on tensors (e.g. `arith.mulf`, `math.exp`; not a
      `linalg.generic`, whose body the raise does not inspect) whose
      operands are all such rows (no constants or weights);
    - the exchange back has the forward exchange's topology and sends with
      its `recv_counts`; its rows go to a `moecomm.unpermute_tokens` that
      takes the same permute_tokens' `slot_rows`; the rows sent back have
      the tokens' hidden size (what `moecomm.combine` returns);
    - no value of the chain (the permuted rows, group sizes, `[W, L]`, send
      counts, received rows and counts, counts matrix, unsorted rows, rows
      back, slot rows) is used outside it: e.g. a backward pass reading the
      forward's slot rows instead of permuting its own keeps the forward
      chain as it is;
    - all these ops are in the permute_tokens' block, and the routing
      weights (of unpermute_tokens, or of permute_tokens in a backward
      chain; not both) are defined before the forward `all_to_all`, where
      the dispatch goes.

    The two exchanges may instead both be JAX's ragged all-to-all
    (`stablehlo.custom_call @ragged_all_to_all`, as
    `moecomm-import-ragged-all-to-all` reads it; MaxText's sparse path); a
    ragged call out and an `all_to_all` back, or the reverse, is not
    raised. XLA places each segment where the offsets say, so the
    raise proves that the offsets are the ones MaxText's
    `get_all_to_all_params` computes, which make every segment contiguous
    in rank order on both sides, as `moecomm.all_to_all` moves them:

    ```mlir
    %cm, %_ = moecomm.all_to_all %gs2, %ones topology<ranks = W, ...>  // W ones
    %rs = linalg.reduce ins(%cm) ... dimensions = [1]   // per-rank sums, as %sc
    %io:2 = scf.for %i = 0 to W step 1 iter_args(%s = 0, %t = %init) {
      %t1 = tensor.insert %s into %t[%i]                 // exclusive scan
      %s1 = arith.addi %s, (tensor.extract %sc[%i])     // of %sc
      scf.yield %s1, %t1 }
    %ro:2 = scf.for ... the same over %rs ...
    %oo = tensor.collapse_shape (moecomm.all_to_all
        (tensor.expand_shape %ro#1 to [W, 1]), %ones topology<same>)
    %buf = tensor.empty(arith.index_cast %ro#0)
    %recv = "stablehlo.custom_call"(%rows, %buf, %io#1, %sc, %oo', %rs)
        {call_target_name = "ragged_all_to_all", ...}  // %oo' = tensor.cast of %oo
    ...
    %back = "stablehlo.custom_call"(%sm, tensor.empty(%io#0), %ro#1, %rs,
        <the same exchange of %io#1>, %sc) {...}
    ```

    The conditions, each with its remark at the call: the call is one the
    import reads (its refusal is quoted) with a group of W ranks; its
    input_offsets are the exclusive scan (an `scf.for` over [0, W) step 1
    of the running sum inserted at the index, then `arith.addi` of the
    size; the order of the ops and other loop-carried values do not matter)
    of its send_sizes; its output_offsets are the exclusive scan of its
    recv_sizes, sent from each receiver to each sender by an `all_to_all` of
    one `[W, 1]` i64 row per rank on the exchanges' topology (through
    `tensor.expand_shape`, `tensor.collapse_shape` and an optional
    `tensor.cast`); its output is a `tensor.empty` of the total of an
    exclusive scan of its recv_sizes (so every output row is written). The
    forward call's recv_sizes are the per-rank sums of the `all_to_all` of
    the `[W, L]` group sizes (what each peer sends here; the grouped form's
    sort_chunks must take that same counts matrix), whose topology is the
    exchanges'; the call back sends with the forward call's recv_sizes and
    receives its send_sizes. What the group sizes compute (the sizes, the
    offsets, their exchanges and totals) must serve the exchanges only, not
    the expert computation, the weights or the results: the raise erases it
    with the permute_tokens, or remarks at the first op using it otherwise.

    A function without a permute_tokens is left exactly as it is (no
    folding, no remark).

    Not part of `moecomm-pipeline`: run it before, as
    `--moecomm-raise-dispatch --moecomm-pipeline=...`. The raise changes what
    the program sends (that is its point) and the last bits of a
    hierarchical sum, so it is the author's choice, like the import of JAX's
    ragged all-to-all; and the per-expert program must stay runnable as
    written, to measure it against the raised one (moecomm-run runs the
    pipeline on both).

    Source of the idea: the per-expert exchange of Megatron-Core's
    `MoEAlltoAllTokenDispatcher` (`permute`, `all_to_all`,
    `sort_chunks_by_idxs`, grouped GEMM, and back) and MaxText's sparse
    path (`permute`, `get_all_to_all_params`, `ragged_all_to_all`,
    `unpermute`); DeepEP's dispatch / combine are what it becomes.
  }];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommImportRaggedAllToAll : Pass<"moecomm-import-ragged-all-to-all", "::mlir::ModuleOp"> {
  let summary = "Convert JAX's stablehlo.custom_call @ragged_all_to_all to moecomm.all_to_all";
  let description = [{
    The way in from JAX (`jax.lax.ragged_all_to_all`, e.g. MaxText's sparse
    MoE path): JAX lowers it to `stablehlo.custom_call @ragged_all_to_all`
    (`jax/_src/lax/parallel.py`), which XLA runs as its RaggedAllToAll HLO.
    moecomm has no StableHLO dialect; `moecomm-opt` parses this one op in
    MLIR's generic form, unregistered (see docs/pipeline.md, "Importing
    JAX's ragged all-to-all"):

    ```mlir
    %r = "stablehlo.custom_call"(%operand, %output, %input_offsets,
        %send_sizes, %output_offsets, %recv_sizes) {
        call_target_name = "ragged_all_to_all", api_version = 4 : i32,
        backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}}
        : (tensor<NxHxbf16>, tensor<MxHxbf16>, tensor<4xi64>, tensor<4xi64>,
           tensor<4xi64>, tensor<4xi64>) -> tensor<MxHxbf16>
    ```

    XLA's semantics, on every rank of the group (W ranks): for each peer j,
    the rows `operand[input_offsets[j] : input_offsets[j] + send_sizes[j]]`
    go to rank j, which writes them into its output at row
    `output_offsets[j]` (the sender's view of the receiver's output);
    `recv_sizes[j]` rows arrive from rank j. The result is `output` with the
    rows received written in place; rows nobody writes keep their values.
    Offsets may leave gaps and be in any order; sizes may be 0.

    Each op becomes: a gather of the W send segments into destination
    order (scf.for + tensor slices), one `moecomm.all_to_all` of the rows
    with `send_sizes` as counts (the gathers are loops, not
    `moecomm.permute_tokens`, so `moecomm-raise-dispatch` keeps this
    exchange per-expert), a second `moecomm.all_to_all` of one row per
    peer carrying the bits of `output_offsets[j]` (an i64 as two f32 bit
    patterns), and a
    scatter of each source's rows into `output` at the offset its sender
    gave. Topology: `ranks` = W, `ranks_per_node` = the option (default: W,
    one node).

    Runtime checks (calls of the runtime's `moecomm_rt_check`,
    moecomm_compiled.h): `input_offsets[j] >= 0`, `send_sizes[j] >= 0` and
    `input_offsets[j] + send_sizes[j] <= N` on the sender; `recv_sizes[j]`
    equal to the rows that arrived from j, and `output_offsets` (as
    received) in `[0, M - rows]`, on the receiver; and that the exchange
    delivered what its counts say. A failed check records
    moecommInvalidArgument on its rank, "ragged_all_to_all at
    FILE:LINE:COL: rank R: <the check> (j = ...: <the values>)", which the
    host reads with moecommCompiledStatus / moecommCompiledLastError; the
    code then reads and writes no row out of bounds (a failed sender check
    gathers nothing, a failed receiver check writes no more rows), and the
    rank's next collective call shares the error, so its peers stop there
    instead of waiting for it. A failed exchange (recorded by the runtime
    on every rank) leaves its results empty: the output is then returned as
    it is. Where ranks write overlapping output rows (XLA leaves it
    undefined) the later source rank wins.

    Errors (a diagnostic naming the attribute or operand; nothing is
    converted): `api_version` other than `4 : i32`; `backend_config` not a
    dictionary, or with an entry other than `replica_groups` and
    `channel_id` (an integer: JAX adds it under SPMD; it names the
    collective and changes nothing here); `replica_groups` other than one
    group `[[0, 1, ..., W-1]]` (dense i64) whose size is the offset and
    size operands' static length; an attribute other than those and
    `call_target_name`, `has_side_effect`, an empty
    `called_computations`/`output_operand_aliases`; operand or output not
    a 2-D tensor of bf16 or f32 (the element type `moecomm.all_to_all`
    moves), of different element types or row widths, or a result type
    other than the output's; offsets and sizes not 1-D i32/i64 tensors of W
    elements; `ranks-per-node` that does not divide W; a call outside a
    region with SSA dominance (a module's top level) or in a nested module,
    ending its block, or with regions or successors; properties that are
    not a dictionary or repeat an attribute; W above the topology
    attribute's limit; zero-width rows; signed/unsigned offsets or sizes;
    a tensor encoding. Other `stablehlo.custom_call` targets are left
    alone.
  }];
  let options = [
    Option<"ranksPerNode", "ranks-per-node", "int64_t", /*default=*/"0",
           "ranks per node of the imported group, dividing its size W "
           "(default 0: W, one node)">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommLowerTokenPermutes : Pass<"moecomm-lower-token-permutes", "::mlir::ModuleOp"> {
  let summary = "Lower the framework-level row moves (permute_tokens, unpermute_tokens, sort_chunks, unsort_chunks) to scf/tensor loops";
  let description = [{
    The framework-level ops (`moecomm.permute_tokens`, `unpermute_tokens`,
    `sort_chunks`, `unsort_chunks`; generated/MoECommDialect.md) are local
    row moves a framework writes around a per-expert exchange (Megatron-Core's
    all-to-all token dispatcher, MaxText's sparse path). Those that
    `moecomm-raise-dispatch` did not turn into dispatch / combine are
    rewritten here, on tensors, into upstream IR (scf.for / scf.if with
    tensor iter_args, tensor.extract / insert / extract_slice /
    insert_slice, arith, linalg.fill), which bufferizes with the rest of the
    graph (moecomm-pipeline runs this pass before bufferization, for both
    targets). Each op's semantics are its ODS description's, exactly:

    * `permute_tokens`: a counting sort (the idea of XLA's and MaxText's
      sort by expert, written as upstream MLIR has no sort): (1) per token t
      and slot k, the id is checked and the rows of each expert counted
      (the histogram, `group_sizes`); (2) an exclusive prefix sum gives each
      expert's first row; (3) token by token, slot by slot, row t of `x` is
      copied to its expert's next row and `slot_rows[t, k]` set to it (-1
      for a masked slot). Rows are thus by expert, then token: the order of
      a stable argsort of the flattened ids. With weights, the copy is a
      linalg.generic: each element extended to f32, times `w[t, k]`, rounded
      once (arith.truncf) to x's dtype.
    * `unpermute_tokens`: per token t and column h, the sum over the slots
      k = 0, 1, ... with `slot_rows[t, k] >= 0` of `w[t, k] * rows[slot_rows[t,
      k], h]` (of the row alone without weights), accumulated in f32 from
      +0.0 and rounded once to the element type; a token without a kept slot
      gets zeros.
    * `sort_chunks` / `unsort_chunks`: the counts are checked and summed per
      local expert (`tokens_per_expert`), each chunk (s, l)'s source-major
      offset recorded; then, local expert by local expert and source by
      source, chunk (s, l) is copied from its source-major offset to the
      next expert-major row (sort) or back (unsort).

    Runtime checks (calls of the runtime's `moecomm_rt_check`,
    moecomm_compiled.h; a failed one records moecommInvalidArgument on its
    rank, "moecomm.<op> at FILE:LINE:COL: rank R: <the check> (<values>)",
    read by the host with moecommCompiledStatus / moecommCompiledLastError,
    and the rank's next collective call stops its peers there):
    permute_tokens: an id outside [-1, E), an id twice in a row, x or the
    weights and topk_idx with different token counts (shapes the verifier
    cannot compare when one is dynamic); unpermute_tokens: a slot row outside
    [-1, R), weights with other token counts than slot_rows; sort_chunks /
    unsort_chunks: a negative count, counts summing to more or less than
    the rows of `in`. After a failed check no row is read or written out of
    bounds: a bad slot is skipped as if masked (no row, `slot_rows` -1; no
    term of the sum), and chunks whose counts fail give rows of zeros and zero
    `tokens_per_expert`.

    On the cuda target the loops run on the host over the graph's buffers
    (`moecomm-device-buffers` warns: host device only), as an expert
    computation written as loops does.

    Errors: none at compile time (the ops' verifiers have checked them).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommConfigureCollectives : Pass<"moecomm-configure-collectives", "::mlir::ModuleOp"> {
  let summary = "Retarget collectives to other ranks and override their wire dtype, capacity and align";
  let description = [{
    The first step of `moecomm-split-hierarchical`, on collective-level IR
    (staged IR follows a retarget where its plan allows, see below).

    `ranks` and `ranks-per-node` retarget every topology and handle type
    (so one graph compiles for any EP size whose ranks divide the experts);
    the results whose types depend on the ranks (`tokens_per_expert`,
    `tensor<E/W x i64>`; `all_to_all`'s `recv_counts`, `tensor<W x i64>`)
    take their new types, which follow them through `func.call` and
    `func.return` into function results and arguments. Already staged IR
    (`layout`, `permute`, `pack`, `exchange`, `unpack`) follows a retarget
    only when its plan, the exchange stages and their scopes, is the same on
    the new topology. `experts` retargets the routed expert count E the same
    way (a model scaled down for a small cluster or a benchmark; what
    depends on E/W follows, and a graph whose expert weights are arguments
    with a dynamic expert dimension, like the examples' FFN layers, stays
    valid). `wire-dtype`, `capacity` and `align` override the dispatches'
    settings: an f32 or bf16 wire applies to the dispatches of that dtype,
    an FP8 wire to every dispatch and cached dispatch; `align` (a power of
    two; 1 removes the padding) to every dispatch.

    A topology with an expert placement (`slots`, `placement`: DeepSeek
    EPLB's phy2log, see the topology attribute) keeps it across a `ranks`
    retarget when the new W divides its S slots: the placement stays valid
    (rank r then hosts slots `[r*S/W, (r+1)*S/W)`) and every result stays
    exact, so a graph written with a placement for a large cluster still
    runs, and is checked, on a small one. What does not carry over is the
    balance EPLB computed for the old W (it packs replicas onto that many
    ranks); compute a placement for the new W when the load matters. A W
    that does not divide S is an error naming the placement (the
    placement's own rule). `experts` cannot retarget a topology with a
    placement: its slots hold logical ids of the old E.

    Errors: `align` neither 0 nor a power of two in [1, 65536]; a retarget
    that a topology or handle type anywhere in the module
    (function signatures included) would not verify with (ranks-per-node
    not dividing the ranks, experts not dividing over the ranks, ranks
    beyond the dialect's limit, ranks not dividing an expert placement's
    slots); `experts` with an expert placement; staged IR whose plan would change with the
    retarget ("cannot retarget staged IR planned for ...": retarget the
    collective IR instead); a result whose type changes with the ranks
    reaching an op that does not accept its new type or that indexes into
    it (`tensor.extract` and the like: positions written for the old
    shape), or an `all_to_all` whose `send_counts` have a static shape (make
    them dynamic, e.g. with `tensor.cast` to `tensor<?xi64>`); such a result
    passed to an external function, whose signature the pass does not
    change, or returned by a function taken by value (`func.constant`); two
    different types flowing into one function argument or result.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks (0: keep the IR's)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks per node (0: keep "
           "the IR's)">,
    Option<"experts", "experts", "int64_t", /*default=*/"0",
           "retarget every topology to this many routed experts, a model "
           "scaled down or up (0: keep the IR's)">,
    Option<"wireDtype", "wire-dtype", "::mlir::moecomm::WireDtypeOption",
           /*default=*/"::mlir::moecomm::WireDtypeOption::keep",
           "set every dispatch's wire dtype: f32, bf16, fp8_e4m3 (or fp8), "
           "fp8_e4m3_ue8m0 or mxfp8 (default empty: keep the IR's)",
           "::mlir::moecomm::wireDtypeOptionValues()">,
    Option<"capacity", "capacity", "int64_t", /*default=*/"0",
           "set every dispatch's capacity in rows (0: keep the IR's)">,
    Option<"align", "align", "int64_t", /*default=*/"0",
           "set every dispatch's expert segment alignment in rows, a power "
           "of two in [1, 65536] (0: keep the IR's)">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect"];
}

def MoECommSelectStrategy : Pass<"moecomm-select-strategy", "::mlir::ModuleOp"> {
  let summary = "Pick each dispatch's strategy and record it in its handle type";
  let description = [{
    The second step of `moecomm-split-hierarchical`, on collective-level
    IR: every `moecomm.dispatch` gets a concrete `strategy<...>`: its own
    when it has one, else the `strategy` option; `auto` is resolved by the
    static cost model of DESIGN.md §7 (alpha-beta per stage, expected
    traffic under uniform routing of `tokens-per-rank` tokens or the static
    T, link model of `preset`), the same analysis `moecomm-cost-report`
    prints. The chosen strategy is recorded in the handle type
    (`!moecomm.handle<..., strategy = S>`), also across function arguments
    and results, so a combine in another function (the backward pass) uses
    the stages its dispatch was planned with.

    Errors: a handle passed to an external function (whose signature the
    pass does not change), through an op other than dispatch, combine,
    `func.call` and `func.return`, or returned by a function taken by value
    (`func.constant`); two different strategies flowing into one function
    argument or result.
  }];
  let options = [
    Option<"strategy", "strategy", "::mlir::moecomm::Strategy",
           /*default=*/"::mlir::moecomm::Strategy::automatic",
           "per_expert, flat, hierarchical or auto (default; dispatches with "
           "their own strategy<...> keep it)",
           "::mlir::moecomm::strategyOptionValues()">,
    Option<"preset", "preset", "std::string", /*default=*/"\"h200-dgx\"",
           "link model for strategy=auto: h100-dgx, h200-dgx (default), "
           "gb200-nvl72 (a row of the model library's preset table, which "
           "the runtime shares: a name, so new rows need no option change)">,
    Option<"tokensPerRank", "tokens-per-rank", "int64_t", /*default=*/"4096",
           "tokens per rank assumed by strategy=auto when T is dynamic (>= 1, "
           "default 4096)">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect"];
}

def MoECommLowerCollectives : Pass<"moecomm-lower-collectives", "::mlir::ModuleOp"> {
  let summary = "Lower dispatch/combine with known strategies to layout, permute, exchange stages";
  let description = [{
    The last step of `moecomm-split-hierarchical`: rewrites every
    collective-level `moecomm.dispatch` (whose strategy
    `moecomm-select-strategy` has chosen) into the staged level:
    `moecomm.layout` (routing metadata, computed once), then for each
    exchange stage a `moecomm.permute` into the stage's send order and a
    `moecomm.exchange` in the stage's scope, then a `moecomm.permute` into
    the expert-major output. Every `moecomm.combine` is mirrored: a permute
    that sums rows per destination in f32 (weighted where the strategy
    applies the weights), the exchanges in reverse scope order, a final
    summing permute into `out[T, H]`; a `moecomm.cached_dispatch` moves its
    rows along the existing layout. Stages and scopes follow the stage rule
    (`moecomm/Model/StageRule.h`; see `moecomm-split-hierarchical`). With
    an FP8 wire each exchange hop is quantize -> exchange -> dequantize, in
    the wire's format (`fp8_e4m3`: f32 scales; `fp8_e4m3_ue8m0`, `mxfp8`:
    f8E8M0FNU scales; see `moecomm.quantize`).

    A combine or cached dispatch follows the strategy of its handle's type;
    `strategy` gives the strategy of handles whose type carries none (a
    function argument no dispatch in this module feeds). The rewrites are
    rewrite patterns (`populateLowerCollectivesPatterns`).

    Errors: a dispatch without a concrete strategy (run
    `moecomm-select-strategy` first); a handle reaching a combine or cached
    dispatch whose strategy cannot be determined while `strategy=auto`.
  }];
  let options = [
    Option<"strategy", "strategy", "::mlir::moecomm::Strategy",
           /*default=*/"::mlir::moecomm::Strategy::automatic",
           "strategy of handles whose type carries none: per_expert, flat or "
           "hierarchical (default auto: none, such a handle is an error)",
           "::mlir::moecomm::strategyOptionValues()">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommSplitHierarchical : Pass<"moecomm-split-hierarchical", "::mlir::ModuleOp"> {
  let summary = "Split dispatch/combine into layout, permute, exchange stages";
  let description = [{
    Collective level -> staged level in one pass: the composition of
    `moecomm-configure-collectives` (`ranks`, `ranks-per-node`,
    `wire-dtype`, `capacity`, `align`), `moecomm-select-strategy` (`strategy`,
    `preset`, `tokens-per-rank`) and `moecomm-lower-collectives` (`strategy`
    for handles whose type carries none), run in that order with this
    pass's options; `moecomm-pipeline` runs it. Each step's description
    says what it does and which errors it reports; the options are checked
    once, before any IR is touched, and reported under this pass's name.

    Every `moecomm.dispatch` becomes `moecomm.layout` (routing metadata,
    computed once), then for each exchange stage a `moecomm.permute` into
    the stage's send order and a `moecomm.exchange` in the stage's scope,
    then a `moecomm.permute` into the expert-major output. Every
    `moecomm.combine` is mirrored: a permute that sums rows per destination
    in f32 (weighted where the strategy applies the weights), the exchanges
    in reverse scope order, a final summing permute into `out[T, H]`.

    Stages by strategy (the stage rule of `moecomm/Model/StageRule.h`, which
    the runtime's plans follow too):
    * `hierarchical`: exchange(`inter_node`), one copy per (token, remote
      node) to the peer rank with the same local rank, then
      exchange(`intra_node`), one copy per (token, destination rank); combine
      reduces inside the node first so one partial row per (token, node)
      crosses the inter-node network. Degenerate topologies: G = W is one
      `intra_node` stage, G = 1 one `inter_node` stage, W = 1 no exchange.
      Works for any number of nodes. Node-level deduplication follows DeepEP
      and NVIDIA's Hybrid-EP; the two-level all-to-all follows Tutel's 2-D
      hierarchical all-to-all; XLA's ragged-all-to-all multi-host decomposer
      does the same for two hosts only.
    * `flat` (one copy per (token, rank)) and `per_expert` (one copy per
      (token, expert): Megatron-LM's all-to-all dispatcher): one `global`
      exchange.
    * `auto`: the static cost model of DESIGN.md §7 (alpha-beta per stage,
      expected traffic under uniform routing of `tokens-per-rank` tokens,
      link model of `preset`) picks per dispatch.

    With an expert placement on the topology, everything works on its S
    slots as on S experts (the handle's `slots`, per-slot results, the cost
    model's S experts); the layout picks each (token, expert)'s replica at
    run time.

    With an FP8 wire (`wire<fp8_e4m3>`, `wire<fp8_e4m3_ue8m0>` or
    `wire<mxfp8>`), each exchange hop is emitted as
    quantize -> exchange -> dequantize; `moecomm-fuse-quant` then quantizes
    once before the first hop and keeps rows in FP8 until the output.

    Errors: those of the three steps.
  }];
  let options = [
    Option<"strategy", "strategy", "::mlir::moecomm::Strategy",
           /*default=*/"::mlir::moecomm::Strategy::automatic",
           "per_expert, flat, hierarchical or auto (default; ops with their "
           "own strategy<...> keep it)",
           "::mlir::moecomm::strategyOptionValues()">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks per node (0: keep "
           "the IR's)">,
    Option<"preset", "preset", "std::string", /*default=*/"\"h200-dgx\"",
           "link model for strategy=auto: h100-dgx, h200-dgx (default), "
           "gb200-nvl72 (a row of the model library's preset table, which "
           "the runtime shares: a name, so new rows need no option change)">,
    Option<"tokensPerRank", "tokens-per-rank", "int64_t", /*default=*/"4096",
           "tokens per rank assumed by strategy=auto when T is dynamic (>= 1, "
           "default 4096)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks (0: keep the IR's)">,
    Option<"experts", "experts", "int64_t", /*default=*/"0",
           "retarget every topology to this many routed experts (0: keep "
           "the IR's)">,
    Option<"wireDtype", "wire-dtype", "::mlir::moecomm::WireDtypeOption",
           /*default=*/"::mlir::moecomm::WireDtypeOption::keep",
           "set every dispatch's wire dtype: f32, bf16, fp8_e4m3 (or fp8), "
           "fp8_e4m3_ue8m0 or mxfp8 (default empty: keep the IR's)",
           "::mlir::moecomm::wireDtypeOptionValues()">,
    Option<"capacity", "capacity", "int64_t", /*default=*/"0",
           "set every dispatch's capacity in rows (0: keep the IR's)">,
    Option<"align", "align", "int64_t", /*default=*/"0",
           "set every dispatch's expert segment alignment in rows, a power "
           "of two in [1, 65536] (0: keep the IR's)">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommFuseQuant : Pass<"moecomm-fuse-quant"> {
  let summary = "Quantize to FP8 once before the first exchange hop";
  let description = [{
    With an FP8 wire, `moecomm-split-hierarchical` quantizes and dequantizes
    around every exchange hop. This pass rewrites
    `dequantize -> permute(stage k) -> quantize` into a permute of the FP8
    rows with their block scales (forwarded rows stay FP8), and
    `dequantize -> permute(output)` into `permute(output) -> dequantize`, so a
    row is quantized once on its source rank, before the inter-node stage,
    and dequantized once on arrival. When the consumer quantizes the received
    rows again in the same format (`quantize(dequantize(q, s))`, e.g. an
    FP8 expert GEMM), the FP8 rows and scales are handed over directly (for
    `fp8_e4m3_ue8m0` and `mxfp8` with their E8M0 scale bytes); a quantize
    to another format stays. Each rewrite needs the dequantize's and the
    quantize's formats (`wire`) to agree. DeepSeek-V3/DeepEP send dispatch
    payloads as FP8 with 1x128 scales the same way.

    Collective-level ops (not split yet) are left as they are, with a
    remark saying so.
  }];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommFusePermute : Pass<"moecomm-fuse-permute"> {
  let summary = "Fold row permutes into the pack/unpack of the adjacent exchange";
  let description = [{
    `permute(stage k)` (and a `quantize` right after it) feeding exchange
    stage k becomes one `moecomm.pack` that reads the source rows through
    the layout's map and writes the send buffer once (quantizing on the
    fly); `permute(output)` (and a `dequantize` right after it) becomes one
    `moecomm.unpack`. So no separately permuted or quantized buffer goes
    through memory (the fused dispatch/combine kernels of DeepEP and
    Hybrid-EP, versus Megatron-LM's separate permute + all-to-all).

    Collective-level ops (not split yet) are left as they are, with a
    remark saying so.
  }];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoECommScheduleOverlap : Pass<"moecomm-schedule-overlap", "::mlir::func::FuncOp"> {
  let summary = "Chunk MoE layers and overlap exchanges with expert compute";
  let description = [{
    For every staged MoE layer (a `moecomm.layout` with its dispatch
    exchanges, the expert computation, and its combine) whose expert
    computation is row-wise (below), splits the token dimension into
    `chunks` chunks (of T tokens, chunk c starts at c q + min(c, m) with
    q = T / chunks, m = T % chunks: the first m chunks get one token more),
    each with its own layout, exchanges and combine; turns
    every exchange into `moecomm.exchange_start`/`moecomm.exchange_wait`; and
    orders the chunks as a software pipeline so chunk i's exchange is in
    flight while chunk i-1's expert computation runs (Comet; Megatron-LM's
    chunked MoE overlap). Independent layers in the same block (e.g. two
    micro-batches) are pipelined against each other the same way. The
    layouts of all chunks come first: a layout is a blocking all-gather,
    which issued behind a started exchange would wait for its bytes on a
    slow link.

    Row-wise means that every output row of the layer depends only on its
    own row, its expert and values that are the same in every chunk, so
    chunking changes no bit of it. Each value of the expert computation is
    one of: rows (a tensor whose leading dimension is the chunk's rows: the
    received rows, `recv_weights`, and what row-wise ops make of them);
    per-chunk (holding no rows but different in every chunk:
    `tokens_per_expert`, `moecomm.expert_offsets`, row counts from
    `tensor.dim`, segment offsets and sizes, and values computed from
    them); fixed (values from outside the
    layer such as weights and constants, a segment loop's expert index, and
    values computed from those). The rules:

    - An op that reads or makes rows is `tensor.empty`, `tensor.dim`,
      `tensor.cast`, an elementwise op whose tensor operands all carry rows,
      or a linalg op on tensors with a parallel loop that is the leading
      dimension of every row-carrying operand and indexes no other operand,
      and whose body does not read that loop's index (`linalg.index`: in a
      chunk it counts from the chunk's first row); a matmul with weights
      from outside the layer is one. Its row results
      keep a dynamic row count. Its regions read rows only through its
      operands.
    - A per-chunk value only sizes tensors (`tensor.empty`) and places
      segments (the segment loop below); as data of an op that makes rows it
      would make a row's result depend on the other rows of its chunk.
    - `tokens_per_expert` may be used inside the layer: each chunk's clone
      reads its own layout's `tokens_per_expert`, so segment sizes come from
      the chunk's layout. Neither it nor a value computed from it may leave
      the layer (a returned `tokens_per_expert`, as `@moe_layer` of the
      examples returns it, keeps the layer whole).
    - A segment loop (the grouped expert loop of Megatron-LM and
      MegaBlocks: per local expert e, its weights applied to rows [off_e,
      off_e + tokens_per_expert[e]) of the expert-major received rows) is an
      `scf.for` from 0 to the size of `tokens_per_expert` (`tensor.dim` of
      it or of a `tensor.cast` of it, or that size as a constant), step 1,
      where: the segment size is `arith.index_cast` of `tensor.extract` of
      `tokens_per_expert` (or its cast) at the induction variable; a
      segment offset is `arith.index_cast` of `tensor.extract` of the
      layout's `moecomm.expert_offsets` (or its cast) at the induction
      variable (a grouped GEMM's group offsets: off_e with or without
      `align(N)` padding); every loop-carried index is a segment offset (0,
      then plus the segment size in every iteration), so it is off_e, which
      holds only without padding (under a layout's `align(N)`, N > 1, a
      loop-carried index keeps the layer whole); every loop-carried tensor is
      assembled rows: initialised to a `tensor.empty` of the received row
      count (`tensor.dim` 0 of received rows), read by nothing in the body
      but the one `tensor.insert_slice` of the iteration's result at
      [off_e, 0, ...] with sizes [size_e, full width] and unit strides,
      which is yielded; rows from outside the loop (received rows, or rows
      computed from them) are read only through a `tensor.extract_slice` of
      that same segment; everything else in the body follows the rules
      above, with the segments as its rows and the expert index as a fixed
      value (it selects the expert's weights). Since the segment of expert e
      in every chunk holds exactly that chunk's rows of expert e (each
      chunk's clone reads its own layout's `expert_offsets`, padded to the
      same `align(N)`), each row goes through the same arithmetic chunked or
      not.

    Legality of the schedule comes from SSA use-def chains and memory
    effects: dependent ops are never reordered, and no collective moves
    across an op with other memory effects. A layer that cannot be chunked
    (an op that is not row-wise, naming the op and why; a dispatch result or
    `tokens_per_expert` used outside the layer; an op with other memory
    effects between its dispatch and its combine; a combine output used
    before another combine's input is computed) gets a remark saying why
    and is only made asynchronous. A layer that is already scheduled (its
    exchanges are asynchronous) gets a remark and is left as it is, so
    running the pass twice changes nothing. Collective-level ops (not split
    yet) are left as they are, with a remark per function saying so.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", /*default=*/"1",
           "token chunks per MoE layer, 1 to 64 (default 1, as "
           "moecomm-pipeline's: no chunking, only async exchanges)">
  ];
  let dependentDialects = ["::mlir::moecomm::MoECommDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def MoECommCostReport : Pass<"moecomm-cost-report", "::mlir::ModuleOp"> {
  let summary = "Print modelled bytes and time per op and stage";
  let description = [{
    For every collective-level `moecomm.dispatch` (with its combine), prints
    the expected bytes per link class and the modelled time (DESIGN.md §7:
    alpha + bytes/beta per stage, labelled as modelled) of every strategy
    and stage under uniform routing of `tokens-per-rank` tokens (or the
    static T), for the link model `preset`, and the strategy `auto` would
    pick. The report goes to stderr (as `--print-op-stats` does), so the IR
    on stdout stays usable; the IR is not changed.

    With an expert placement on the topology (DeepSeek EPLB's replicated
    experts), the model counts the S slots as experts and a line says so:
    replicas are chosen at run time from the routing, which the model does
    not have (the placement's inter-node lower bound is per token;
    moecomm-run and moecomm-bench report it from a routing).
  }];
  let options = [
    Option<"preset", "preset", "std::string", /*default=*/"\"h200-dgx\"",
           "link model: h100-dgx, h200-dgx (default), gb200-nvl72 (a row of "
           "the model library's preset table, which the runtime shares: a "
           "name, so new rows need no option change)">,
    Option<"tokensPerRank", "tokens-per-rank", "int64_t", /*default=*/"4096",
           "tokens per rank when T is dynamic, >= 1 (default 4096)">
  ];
}

def MoECommBufferDeallocation : Pass<"moecomm-buffer-deallocation", "::mlir::ModuleOp"> {
  let summary = "Free the buffers of bufferized moecomm graphs";
  let description = [{
    Frees the buffers that convert-moecomm-to-runtime (with
    `deallocate=false`) allocated, at the runtime level: memrefs, `func.call`s
    of the runtime's `moecomm_rt_*` functions, linalg ops.

    In straight-line functions (one block, no region-holding op but linalg
    ops: what moecomm graphs bufferize to) each buffer that does not escape
    is freed right after its last use, a buffer given to
    `moecomm_rt_exchange_start_*` after the matching `moecomm_rt_wait`. So
    intermediate buffers do not pile up until the end of a many-layer
    training step, and the compile time stays linear. MLIR's ownership-based
    deallocation would free every buffer at the end of its block and
    simplify with pairwise alias queries.

    Other functions get MLIR's `buffer-deallocation-pipeline`, its dealloc
    lowering run on the module so that a dealloc of several buffers can call
    the library function it adds there (`dealloc_helper`). Its
    `private-function-dynamic-ownership` stays off (the upstream default): it
    would add ownership arguments and results to private functions and their
    calls, while the straight-line functions, freed here, keep the function
    boundary ABI (calls borrow their arguments, the caller owns each returned
    buffer) that every function calling them or called by them must share.

    Both sides keep that ABI: a straight-line function that would return an
    argument, a global or the same buffer twice returns a fresh copy.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def MoECommCheckLLVMModuleAttributes : Pass<"moecomm-check-llvm-module-attributes", "::mlir::ModuleOp"> {
  let summary = "Refuse module attributes the translation to LLVM IR would crash on";
  let description = [{
    The first pass of `moecomm-pipeline`: MLIR's translation to LLVM IR
    (`mlir/lib/Target/LLVMIR/ModuleTranslation.cpp`, `prepareLLVMModule`
    and `createDependentLibrariesMetadata`) casts these attributes of the
    module without checking their kind, so a wrong one aborts or crashes
    the process (`moecomm-aot`, `moecomm-run`, `moecomm.compile`, the C
    API) instead of reporting an error:

    - `llvm.target_triple`: must be a string;
    - `llvm.dependent_libraries`: must be an array of strings.

    `llvm.data_layout`, cast the same way, is checked by the LLVM dialect's
    verifier when the module is parsed (a string LLVM parses as a data
    layout). The translation itself reports a wrong `llvm.module_asm`, and
    ignores `llvm.ident` and `llvm.commandline` that are not strings. Each bad
    attribute is one error at the module's location naming the attribute,
    before any lowering; the IR is not changed.
  }];
}

def MoECommRequireImported : Pass<"moecomm-require-imported"> {
  let summary = "Refuse JAX's ragged all-to-all that was not imported";
  let description = [{
    At the start of `moecomm-pipeline`, after
    `moecomm-check-llvm-module-attributes` (and so in `moecomm-aot`,
    `moecomm.compile` and the C API's pipeline): a
    `stablehlo.custom_call @ragged_all_to_all` (see
    `moecomm-import-ragged-all-to-all`) left in the input is one error at
    the call, "stablehlo.custom_call @ragged_all_to_all must be imported
    first: run --moecomm-import-ragged-all-to-all", instead of a later
    pass's message about an unregistered op (bufferization's "op was not
    bufferized"). Changes nothing.
  }];
}

#endif // MOECOMM_TRANSFORMS_PASSES_TD
