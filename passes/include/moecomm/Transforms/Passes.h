//===- Passes.h - moecomm passes and pipeline -------------------*- C++ -*-===//
//
// The passes of DESIGN.md §4 (declared from Passes.td) and the named
// pipeline `moecomm-pipeline` (collective level -> LLVM dialect).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_PASSES_H
#define MOECOMM_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir {
class DialectRegistry;
namespace moecomm {

#define GEN_PASS_DECL
#include "moecomm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moecomm/Transforms/Passes.h.inc"

/// Options of `moecomm-pipeline` (torch-mlir style options struct).
/// The most token chunks per MoE layer moecomm-schedule-overlap accepts:
/// every chunk's exchanges start before the first wait, so all chunks' values
/// are live across the runtime calls, and LLVM's register allocation of the
/// lowered function grows faster than linearly with them (moecomm-run's JIT:
/// 2 s at 64 chunks, 22 s at 256). Overlap needs 2 to 8 chunks in practice.
constexpr int64_t kMaxOverlapChunks = 64;

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("retarget every topology to this many "
                                       "ranks (0: keep the IR's)"),
                        llvm::cl::init(0)};
  Option<int64_t> ranksPerNode{*this, "ranks-per-node",
                               llvm::cl::desc("retarget topologies to this "
                                              "many ranks per node (0: keep)"),
                               llvm::cl::init(0)};
  Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("per_expert, flat, hierarchical or auto (default: the "
                     "static cost model picks per dispatch)"),
      llvm::cl::init("auto")};
  Option<std::string> wireDtype{
      *this, "wire-dtype",
      llvm::cl::desc("override every dispatch's wire dtype: f32, bf16, "
                     "fp8_e4m3 or fp8 (default empty: keep the IR's)"),
      llvm::cl::init("")};
  Option<int64_t> chunks{*this, "chunks",
                         llvm::cl::desc("token chunks per MoE layer for the "
                                        "overlap schedule, 1 to 64 "
                                        "(default 1: none)"),
                         llvm::cl::init(1)};
  Option<int64_t> capacity{*this, "capacity",
                           llvm::cl::desc("set every dispatch's capacity in "
                                          "rows (0: keep the IR's)"),
                           llvm::cl::init(0)};
  Option<std::string> preset{*this, "preset",
                             llvm::cl::desc("link model for strategy=auto: "
                                            "h100-dgx, h200-dgx (default), "
                                            "gb200-nvl72"),
                             llvm::cl::init("h200-dgx")};
  Option<int64_t> tokensPerRank{*this, "tokens-per-rank",
                                llvm::cl::desc("tokens per rank assumed by "
                                               "strategy=auto when T is "
                                               "dynamic (default 4096)"),
                                llvm::cl::init(4096)};
};

/// Builds `moecomm-pipeline`: configure collectives (ranks, wire dtype,
/// capacity), split, fuse-quant, fuse-permute, schedule-overlap (`chunks`),
/// convert-moecomm-to-runtime, buffer deallocation, and the upstream
/// conversions to the LLVM dialect. The result translates with
/// `mlir-translate --mlir-to-llvmir`.
void buildMoECommPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `moecomm-pipeline` with the global pass registry.
void registerMoECommPipeline();

/// Attaches moecomm's BufferizableOpInterface models to its ops.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace moecomm
} // namespace mlir

#endif // MOECOMM_TRANSFORMS_PASSES_H
