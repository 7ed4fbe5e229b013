//===- InitAll.cpp - register everything moecomm tools need ----------------===//

#include "moecomm/InitAllDialects.h"
#include "moecomm/InitAllPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Conversion/Passes.h"
#include "moecomm/Pipelines/Pipeline.h"
#include "moecomm/Conversion/MoECommToRuntime.h"
#include "moecomm/Transforms/Passes.h"

void mlir::moecomm::registerAllDialects(DialectRegistry &registry) {
  registry.insert<MoECommDialect, func::FuncDialect, arith::ArithDialect,
                  math::MathDialect, tensor::TensorDialect,
                  memref::MemRefDialect, bufferization::BufferizationDialect,
                  scf::SCFDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  shard::ShardDialect>();
  registerConvertMoECommToRuntimeInterfaces(registry);
  func::registerAllExtensions(registry);
}

void mlir::moecomm::registerAllPasses() {
  mlir::registerAllPasses();
  registerMoECommPasses();
  registerMoECommConversionPasses();
  registerMoECommPipeline();
}
