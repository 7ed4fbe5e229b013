//===- moecomm-opt.cpp - moecomm's mlir-opt ---------------------------------===//
//
// Parses, verifies, transforms and prints IR with the moecomm dialect, its
// passes and pipeline, and the upstream dialects and passes they work with.
// Built on MlirOptMain, so every mlir-opt flag works.
//
//===----------------------------------------------------------------------===//

#include "MoECommVersion.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "moecomm/InitAll.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  llvm::cl::AddExtraVersionPrinter(moecomm::printMoECommVersion);
  mlir::DialectRegistry registry;
  mlir::moecomm::registerAllDialects(registry);
  mlir::moecomm::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "moecomm optimizer driver: MoE expert-parallel communication\n",
      registry));
}
