//===- fuzz_opt.cpp - libFuzzer target: IR through moecomm's passes -------===//
//
// What moecomm-opt does with an input, as a libFuzzer target: parse the text
// as a module with every dialect moecomm-opt registers, and when it parses
// and verifies, run one of moecomm's pass pipelines on it (the input's first
// byte picks which). A crash, an assertion, a sanitizer report, or a pass
// that succeeds but leaves IR that fails verification is a finding; errors
// reported as diagnostics are the expected answer to bad input.
//
// Built with the "fuzz" preset and run by scripts/fuzz.sh (never by CI): see
// test/fuzz/CMakeLists.txt.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "moecomm/InitAllDialects.h"
#include "moecomm/InitAllPasses.h"

#include "llvm/ADT/StringRef.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

/// The pipelines on the module, in moecomm-opt's textual form (without the
/// builtin.module anchor), each ending at a level
/// where the IR must verify. Two schedule-overlap runs in a row are on
/// purpose: scheduling scheduled IR must stay valid, and so must converting
/// converted IR. The single-purpose passes run alone too, so that IR at
/// any level reaches each of them.
const char *const kPipelines[] = {
    "moecomm-split-hierarchical",
    "moecomm-configure-collectives{ranks=4 ranks-per-node=2 wire-dtype=fp8},"
    "moecomm-select-strategy,moecomm-lower-collectives",
    "moecomm-select-strategy{strategy=hierarchical}",
    "moecomm-lower-collectives",
    "moecomm-fuse-quant,moecomm-fuse-permute",
    "convert-moecomm-to-runtime,convert-moecomm-to-runtime",
    "convert-moecomm-to-runtime{deallocate=false},moecomm-buffer-deallocation",
    "moecomm-split-hierarchical{strategy=flat},moecomm-fuse-quant,"
    "moecomm-fuse-permute",
    "moecomm-split-hierarchical,func.func(moecomm-schedule-overlap{chunks=2}),"
    "func.func(moecomm-schedule-overlap{chunks=2})",
    "moecomm-split-hierarchical{strategy=per_expert},convert-moecomm-to-runtime",
    "moecomm-pipeline",
    "moecomm-pipeline{chunks=2 wire-dtype=fp8_e4m3}",
};
constexpr size_t kNumPipelines = sizeof(kPipelines) / sizeof(kPipelines[0]);

/// Verifies the IR after every pass that succeeded and aborts, naming the
/// pass, when it does not verify. (The pass manager's own verifier turns
/// that into a pass failure, which a fuzzer cannot tell from a diagnostic
/// about bad input.)
struct AbortOnInvalidIR : mlir::PassInstrumentation {
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (mlir::succeeded(mlir::verify(op)))
      return;
    std::fprintf(stderr, "fuzz_opt: pass '%s' left IR that fails verification\n",
                 pass->getArgument().str().c_str());
    std::abort();
  }
};

/// The registry is built once; every input gets a fresh context, so a
/// finding reproduces from its input alone (a context keeps uniqued types,
/// attributes and loaded dialects from earlier inputs).
struct Registry {
  mlir::DialectRegistry registry;
  Registry() {
    mlir::moecomm::registerAllDialects(registry);
    mlir::moecomm::registerAllPasses();
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Registry registry;
  if (size < 1)
    return 0;
  const char *pipeline = kPipelines[data[0] % kNumPipelines];
  // MLIR's lexer reads up to a NUL after the text (moecomm-opt's input is a
  // NUL-terminated MemoryBuffer), so the bytes are copied into a string;
  // parsing libFuzzer's exact-size buffer reads past it (StringRef::find in
  // parseAsmSourceFile).
  const std::string text(reinterpret_cast<const char *>(data + 1), size - 1);

  mlir::MLIRContext context(registry.registry,
                            mlir::MLIRContext::Threading::DISABLED);
  // Diagnostics are the expected answer to bad input: drop them.
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  // The parser verifies what it parsed (ParserConfig's default).
  mlir::ParserConfig config(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz-input");
  if (!module)
    return 0;

  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<AbortOnInvalidIR>());
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm))) {
    std::fprintf(stderr, "fuzz_opt: bad pipeline in the target: %s\n",
                 pipeline);
    std::abort();
  }
  (void)pm.run(*module);
  return 0;
}
