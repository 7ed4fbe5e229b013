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

#endif // MOECOMM_CONVERSION_PASSES_TD
