//===- Passes.td - moecomm conversion passes ----------------*- tablegen -*-===//
//
// The lowering out of the moecomm dialect (DESIGN.md §4): runtime level ->
// calls of the runtime's compiled-code C ABI.
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
    (`moecomm_rt_rows`). Handles and requests become `!llvm.ptr`; a layout is
    released after its last use unless it leaves the function. Collective-
    level ops lower to the runtime's one-shot dispatch/combine/all_to_all
    (`auto` then chooses at run time from the actual routing). The ABI is
    documented in runtime/include/moecomm/moecomm_compiled.h.

    With `deallocate` (the default), buffers are freed too: in straight-line
    functions (what moecomm graphs bufferize to) each buffer that is not
    returned is freed right after its last use (a buffer of an asynchronous
    exchange after its wait), so intermediate buffers do not pile up until
    the end of a many-layer training step; other functions get MLIR's
    buffer-deallocation pipeline, its dealloc lowering run on the module so
    that a dealloc of several buffers can call the library function it adds
    there (`dealloc_helper`).

    Attributes that hold moecomm attributes or types elsewhere (a function
    attribute naming a topology, an argument attribute with a handle type)
    are dropped: nothing below the runtime level reads them, and the
    result must translate with `mlir-translate`, which has no moecomm
    dialect. Other attributes stay.

    Errors: moecomm ops whose types the runtime ABI does not cover.
  }];
  let options = [
    Option<"deallocate", "deallocate", "bool", /*default=*/"true",
           "free the buffers (default on; off: leave it to "
           "buffer-deallocation-pipeline)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

#endif // MOECOMM_CONVERSION_PASSES_TD
