//===- CheckLLVMModuleAttributes.cpp - module attributes LLVM IR takes ----===//
//
// MLIR's translation to LLVM IR (mlir/lib/Target/LLVMIR/ModuleTranslation.cpp)
// casts llvm.target_triple and llvm.dependent_libraries of the module without
// checking them: a wrong one crashes every entry point that translates
// (moecomm-aot, moecomm-run, moecomm.compile, the C API). moecomm-pipeline
// runs this check first, so they report an error instead. llvm.data_layout,
// cast the same way, is checked by the LLVM dialect's verifier (its kind and
// syntax, LLVMDialect::verifyOperationAttribute) when the module is parsed.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMCHECKLLVMMODULEATTRIBUTES
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The error about the module's attribute `name`: its location is the
/// module's, without the module printed after it (it can be the whole graph).
InFlightDiagnostic attributeError(ModuleOp module, StringRef name) {
  return emitError(module.getLoc()) << "module attribute '" << name << "' ";
}

struct CheckLLVMModuleAttributesPass
    : public mlir::moecomm::impl::MoECommCheckLLVMModuleAttributesBase<
          CheckLLVMModuleAttributesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;

    StringRef triple = LLVM::LLVMDialect::getTargetTripleAttrName();
    if (Attribute attr = module->getDiscardableAttr(triple);
        attr && !isa<StringAttr>(attr)) {
      attributeError(module, triple)
          << "must be a string (the target triple), got " << attr;
      ok = false;
    }

    StringRef libraries = LLVM::LLVMDialect::getDependentLibrariesAttrName();
    if (Attribute attr = module->getDiscardableAttr(libraries)) {
      auto list = dyn_cast<ArrayAttr>(attr);
      if (!list || !llvm::all_of(list, llvm::IsaPred<StringAttr>)) {
        attributeError(module, libraries)
            << "must be an array of strings (library names), got " << attr;
        ok = false;
      }
    }

    if (!ok)
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
