// Parses and verifies a dispatch/combine pair with the installed dialect.
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstdio>

int main() {
  mlir::MLIRContext context;
  context.loadDialect<mlir::moecomm::MoECommDialect>();
  mlir::Builder builder(&context);
  auto topology = mlir::moecomm::TopologyAttr::get(&context, 16, 8, 256);
  auto handle = mlir::moecomm::HandleType::get(topology);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << topology << " " << handle;
  std::printf("%s local_experts=%lld nodes=%lld\n", text.c_str(),
              (long long)topology.getLocalExperts(),
              (long long)topology.getNumNodes());
  return topology.getLocalExperts() == 16 ? 0 : 1;
}
