//===- Passes.td - moecomm passes ---------------------------*- tablegen -*-===//
//
// The compiler half of moecomm (DESIGN.md §4): collective level -> staged
// level -> runtime calls -> LLVM dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_PASSES_TD
#define MOECOMM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MoECommSplitHierarchical : Pass<"moecomm-split-hierarchical", "::mlir::ModuleOp"> {
  let summary = "Split dispatch/combine into layout, permute, exchange stages";
  let description = [{
    Rewrites every collective-level `moecomm.dispatch` into the staged level:
    `moecomm.layout` (routing metadata, computed once), then for each exchange
    stage a `moecomm.permute` into the stage's send order and a
    `moecomm.exchange` in the stage's scope, then a `moecomm.permute` into the
    expert-major output. Every `moecomm.combine` is mirrored: a permute that
    sums rows per destination in f32 (weighted where the strategy applies the
    weights), the exchanges in reverse scope order, a final summing permute
    into `out[T, H]`.

    Stages by strategy (the runtime plans the same):
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

    With an FP8 wire (`wire<fp8_e4m3>`), each exchange hop is emitted as
    quantize -> exchange -> dequantize; `moecomm-fuse-quant` then quantizes
    once before the first hop and keeps rows in FP8 until the output.

    The chosen strategy is recorded in the handle type
    (`!moecomm.handle<..., strategy = S>`), also across function arguments
    and results, so a combine in another function (the backward pass) uses
    the stages its dispatch was planned with.

    `ranks` and `ranks-per-node` first retarget every topology and handle
    type (so one graph compiles for any EP size whose ranks divide the
    experts); the results whose types depend on the ranks
    (`tokens_per_expert`, `tensor<E/W x i64>`; `all_to_all`'s
    `recv_counts`, `tensor<W x i64>`) take their new types, which follow
    them into function results and arguments as the strategy does.
    Already staged IR (`layout`, `permute`, `pack`, `exchange`, `unpack`)
    follows a retarget only when its plan, the exchange stages and their
    scopes, is the same on the new topology; `strategy` does not replan it
    (its layouts keep their strategy, like a dispatch with its own).
    `wire-dtype` and `capacity` override the dispatches' settings (the
    pipeline passes its options here).

    Errors: a retarget that a topology or handle type anywhere in the module
    (function signatures included) would not verify with (ranks-per-node
    not dividing the ranks, experts not dividing over the ranks, ranks
    beyond the dialect's limit); staged IR whose plan would change with
    the retarget ("cannot retarget staged IR planned for ...": retarget
    the collective IR instead); a result whose type changes with the ranks
    reaching an op that does not accept its new type or that indexes into
    it (`tensor.extract` and the like: positions written for the old
    shape), or an `all_to_all`
    whose `send_counts` have a static shape (make them dynamic, e.g. with
    `tensor.cast` to `tensor<?xi64>`); a handle or such a result passed to
    an external function, whose signature the pass does not change, or
    returned by a function taken by value (`func.constant`); a
    handle reaching a combine whose strategy cannot be determined (e.g. a
    function argument never fed by a dispatch in this module) while
    `strategy=auto`; two different strategies or types flowing into one
    function argument or result.
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"\"auto\"",
           "per_expert, flat, hierarchical or auto (default; ops with their "
           "own strategy<...> keep it)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks per node (0: keep "
           "the IR's)">,
    Option<"preset", "preset", "std::string", /*default=*/"\"h200-dgx\"",
           "link model for strategy=auto: h100-dgx, h200-dgx (default), "
           "gb200-nvl72">,
    Option<"tokensPerRank", "tokens-per-rank", "int64_t", /*default=*/"4096",
           "tokens per rank assumed by strategy=auto when T is dynamic (>= 1, "
           "default 4096)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "retarget every topology to this many ranks (0: keep the IR's)">,
    Option<"wireDtype", "wire-dtype", "std::string", /*default=*/"\"\"",
           "set every dispatch's wire dtype: f32, bf16, fp8_e4m3 or fp8 "
           "(default empty: keep the IR's)">,
    Option<"capacity", "capacity", "int64_t", /*default=*/"0",
           "set every dispatch's capacity in rows (0: keep the IR's)">
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
    rows again (`quantize(dequantize(q, s))`, e.g. an FP8 expert GEMM), the
    FP8 rows and scales are handed over directly. DeepSeek-V3/DeepEP send
    dispatch payloads as FP8 with 1x128 scales the same way.

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
    computation is row-wise (every op between the dispatch output and the
    combine input maps each row independently: elementwise ops, linalg ops
    with a parallel row loop that is the leading dimension of every
    row-carrying operand), splits the token dimension into `chunks` chunks,
    each with its own layout, exchanges and combine; turns every exchange
    into `moecomm.exchange_start`/`moecomm.exchange_wait`; and orders the
    chunks as a software pipeline so chunk i's exchange is in flight while
    chunk i-1's expert computation runs (Comet; Megatron-LM's chunked MoE
    overlap). Independent layers in the same block (e.g. two micro-batches)
    are pipelined against each other the same way.

    Legality comes from SSA use-def chains and memory effects: dependent ops
    are never reordered, and no collective moves across an op with other
    memory effects. A layer that cannot be chunked (non-row-wise
    computation, a dispatch result used outside the layer, an op with other
    memory effects between its dispatch and its combine, a combine output
    used before another combine's input is computed) gets a remark saying
    why and is only made asynchronous. A layer that is already scheduled
    (its exchanges are asynchronous) gets a remark and is left as it is, so
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
  }];
  let options = [
    Option<"preset", "preset", "std::string", /*default=*/"\"h200-dgx\"",
           "link model: h100-dgx, h200-dgx (default), gb200-nvl72">,
    Option<"tokensPerRank", "tokens-per-rank", "int64_t", /*default=*/"4096",
           "tokens per rank when T is dynamic (default 4096)">
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

#endif // MOECOMM_TRANSFORMS_PASSES_TD
