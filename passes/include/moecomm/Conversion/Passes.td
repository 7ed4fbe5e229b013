//===- Passes.td - moecomm conversion passes ----------------*- tablegen -*-===//
//
// The lowering out of the moecomm dialect (DESIGN.md §4): runtime level ->
// calls of the runtime's compiled-code C ABI, and the expert GEMMs' call of
// the runtime's BLAS entry point.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_CONVERSION_PASSES_TD
#define MOECOMM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMoECommToRuntime : Pass<"convert-moecomm-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Bufferize moecomm ops into calls of the runtime's C ABI";
  let description = [{
    One-shot bufferization of the whole module, with moecomm's
    BufferizableOpInterface models: every moecomm op becomes `func.call`s of
    the runtime's compiled-code ABI (`moecomm_rt_*`, declared with
    `llvm.emit_c_interface`, memref arguments) on freshly allocated
    identity-layout buffers whose row counts come from the layout
    (`moecomm_rt_rows`). Handles and requests become `!llvm.ptr` (MLIR's
    type-conversion patterns for function signatures, calls and returns; one
    that another op carries, e.g. as an `scf.for` iter_arg, is an error); a
    layout is released after its last use unless it leaves the function.
    Collective-level ops lower to the runtime's one-shot
    dispatch/combine/all_to_all (`auto` then chooses at run time from the
    actual routing). The ABI is documented in
    runtime/include/moecomm/moecomm_compiled.h.

    With `deallocate` (the default), buffers are freed too: the pass runs
    `moecomm-buffer-deallocation` on its result (each buffer freed right
    after its last use in straight-line functions, MLIR's
    buffer-deallocation pipeline in the others). `moecomm-pipeline` runs
    this pass without `deallocate` and that pass after it.

    Attributes that hold moecomm attributes or types elsewhere (a function
    attribute naming a topology, an argument attribute with a handle type)
    are dropped: nothing below the runtime level reads them, and the
    result must translate with `mlir-translate`, which has no moecomm
    dialect. Other attributes stay.

    Errors: moecomm ops whose types the runtime ABI does not cover; a
    handle or request used by an op the lowering does not know (e.g. carried
    by an scf.for); a `moecomm_rt_*` name the module declares with other
    types than the ABI's, or uses for another symbol (the names belong to
    moecomm_compiled.h). IR lowered before is left as it is.
  }];
  let options = [
    Option<"deallocate", "deallocate", "bool", /*default=*/"true",
           "free the buffers with moecomm-buffer-deallocation (default on; "
           "off: leave it to that pass or to buffer-deallocation-pipeline)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def MoECommDeviceBuffers : Pass<"moecomm-device-buffers", "::mlir::ModuleOp"> {
  let summary = "Place a bufferized graph's buffers in device memory (the cuda target)";
  let description = [{
    The buffer half of `moecomm-pipeline target=cuda` (docs/pipeline.md,
    "The cuda target"), run on the runtime level after buffer deallocation:
    every buffer the graph allocates is allocated, copied, cleared and freed
    by the runtime, which places it on the device bound to the thread
    (`moecommCompiledBindDevice`, moecomm_compiled.h: an nccl communicator's
    GPU, or the host device of a CPU communicator) and orders the work on
    that device's stream:

    * `memref.alloc` becomes `moecomm_rt_alloc(bytes, device)`, a
      `memref<?xi8>` of the allocation's bytes (the data layout's element
      size times the element count) viewed as the buffer (`memref.view`);
    * `memref.dealloc` becomes `moecomm_rt_free` of the buffer's aligned
      address (`memref.extract_aligned_pointer_as_index`), so a free placed
      after an exchange's `moecomm_rt_wait` (moecomm-buffer-deallocation)
      is ordered after the exchange on the stream;
    * `memref.copy` and `linalg.copy` between buffers that are not both host
      buffers become `moecomm_rt_copy_<T>` and a `linalg.fill` of zero into
      a device buffer `moecomm_rt_fill_zero_<T>` (operands cast to unranked
      memrefs, any strides), `<T>` one of bf16, f32, i32, i64, i8, f8e4m3fn,
      f8e8m0fnu.

    A constant (`memref.get_global`) used other than by `memref.load` is
    copied into a device buffer after it is read (the global lives in the
    host image), freed after its last use in that block.

    Which buffers stay on the host (`device` 0): the per-expert metadata the
    graph's host code reads (loop bounds): buffers the runtime fills through
    `moecomm_rt_tokens_per_expert` or `moecomm_rt_expert_offsets` and copies
    of them, as DeepEP returns its per-expert counts as a host list; and
    buffers of `index` or `i1` elements (bookkeeping such as MLIR's
    deallocation helper, never rows). Every other buffer is device memory,
    and so are the function's memref arguments (the driver allocates them
    with `moecommCompiledDeviceAlloc`).

    A warning, one per function, names the first op that reads or writes a
    device buffer on the host (`memref.load` / `memref.store` or a linalg
    op other than a zero fill, a copy and an f32 `linalg.matmul`, which
    `moecomm-matmul-to-blas` hands to the device's GEMM) and how many there
    are: such code works on the host device (CI) but not on a GPU, where
    compute must be stream work (moecomm ops, the GEMM entry, or the user's
    kernels). The host half of the graph (its control flow, the host
    metadata) is left alone.

    Errors: an allocation of a type without a layout `memref.view` can
    produce (a non-identity layout or a memory space) or aligned to more
    than the runtime's 256 bytes, a copy or fill of device buffers of
    another element type, device work on a mutable global (it would work on
    a copy) or on a constant yielded or returned out of the block that reads
    it, and a module that declares a `moecomm_rt_` name with other types
    than the ABI's.

    The idea is MLIR's own GPU lowering, where `gpu.alloc` / `gpu.dealloc`
    become calls of a runtime allocator on a stream (`mgpuMemAlloc`,
    `mgpuMemFree` in the GPU runtime wrappers), here the moecomm runtime's,
    so that the runtime also knows every buffer it is handed.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect"];
}

def MoECommMatmulToBlas : Pass<"moecomm-matmul-to-blas", "::mlir::ModuleOp"> {
  let summary = "Call OpenBLAS's sgemm for f32 linalg.matmul on memrefs";
  let description = [{
    Rewrites each f32 `linalg.matmul` on memrefs (bufferized IR, e.g. the
    output of `convert-moecomm-to-runtime`) into a call of the runtime's
    `moecomm_rt_matmul_f32` (moecomm_compiled.h), which runs OpenBLAS's
    `cblas_sgemm` with one BLAS thread on the calling thread: C [M][N] +=
    A [M][K] x B, the accumulation linalg.matmul itself does (C is read,
    not overwritten). MLIR's `convert-linalg-to-loops` runs such a GEMM at
    0.1 to 2 GFLOP/s on this machine's cores, OpenBLAS at 40 to 100
    (bench/gemm_bench, docs/BENCHMARKS.md). Operands are passed as descriptors of the ABI's
    fully dynamic strided layout (`memref.cast`), declared once with
    `llvm.emit_c_interface`.

    Rewritten: A, B and C all f32, each with a static unit inner stride
    (identity layout, or a strided layout such as a subview of rows of a
    larger buffer or of one expert's weights; the row stride may be
    dynamic), with the default indexing maps (B [K][N]) or B transposed,
    `indexing_maps = [(m, n, k) -> (m, k), (m, n, k) -> (n, k),
    (m, n, k) -> (m, n)]` (B [N][K], C += A B^T: the input gradient of a
    projection). Left as they are, for `convert-linalg-to-loops`, with no
    diagnostic: other element types (bf16, mixed), matmuls on tensors,
    other indexing maps (A transposed, broadcasts), and an inner stride that
    is not statically 1. At run time the runtime rechecks the descriptors
    (moecommInvalidArgument, recorded like every ABI error).

    Errors: the module declares or defines `moecomm_rt_matmul_f32` with other
    types than the ABI's (the `moecomm_rt_` names belong to the runtime).
    The idea is XLA's CPU backend, which lowers a dot to a call of a runtime
    GEMM (its Eigen matmul entry points) instead of generating loops.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // MOECOMM_CONVERSION_PASSES_TD
