//===- Pipeline.h - moecomm-pipeline ----------------------------*- C++ -*-===//
//
// The named pipeline `moecomm-pipeline` (collective level -> LLVM dialect),
// with a torch-mlir style options struct.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_PIPELINES_PIPELINE_H
#define MOECOMM_PIPELINES_PIPELINE_H

#include "mlir/Pass/PassOptions.h"
#include "moecomm/Transforms/Passes.h"

#include <cstdint>
#include <string>

namespace mlir {
class OpPassManager;
namespace moecomm {

/// How `moecomm-pipeline` lowers f32 `linalg.matmul` (the expert GEMMs).
enum class ExpertGemm {
  /// moecomm-matmul-to-blas: calls of OpenBLAS's sgemm through the runtime.
  blas,
  /// convert-linalg-to-loops, like every other linalg op.
  loops,
};

/// Where `moecomm-pipeline`'s graphs run.
enum class Target {
  /// Host memory, run on a thread bound with moecommCompiledBind.
  host,
  /// Device buffers (moecomm-device-buffers), run on a thread bound with
  /// moecommCompiledBindDevice: an nccl communicator's GPU, or the host
  /// device of a CPU communicator.
  cuda,
};

/// Options of `moecomm-pipeline`.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("retarget every topology to this many "
                                       "ranks (0: keep the IR's)"),
                        llvm::cl::init(0)};
  Option<int64_t> ranksPerNode{*this, "ranks-per-node",
                               llvm::cl::desc("retarget topologies to this "
                                              "many ranks per node (0: keep)"),
                               llvm::cl::init(0)};
  Option<int64_t> experts{*this, "experts",
                          llvm::cl::desc("retarget topologies to this many "
                                         "routed experts (0: keep)"),
                          llvm::cl::init(0)};
  Option<Strategy> strategy{
      *this, "strategy",
      llvm::cl::desc("per_expert, flat, hierarchical or auto (default: the "
                     "static cost model picks per dispatch)"),
      llvm::cl::init(Strategy::automatic), strategyOptionValues()};
  Option<WireDtypeOption> wireDtype{
      *this, "wire-dtype",
      llvm::cl::desc("override every dispatch's wire dtype: f32, bf16, "
                     "fp8_e4m3 (or fp8), fp8_e4m3_ue8m0 or mxfp8 (default "
                     "empty: keep the IR's)"),
      llvm::cl::init(WireDtypeOption::keep), wireDtypeOptionValues()};
  Option<int64_t> chunks{*this, "chunks",
                         llvm::cl::desc("token chunks per MoE layer for the "
                                        "overlap schedule, 1 to 64 "
                                        "(default 1: none)"),
                         llvm::cl::init(1)};
  Option<int64_t> capacity{*this, "capacity",
                           llvm::cl::desc("set every dispatch's capacity in "
                                          "rows (0: keep the IR's)"),
                           llvm::cl::init(0)};
  Option<int64_t> align{*this, "align",
                        llvm::cl::desc("set every dispatch's expert segment "
                                       "alignment in rows, a power of two "
                                       "in [1, 65536] (0: keep the IR's)"),
                        llvm::cl::init(0)};
  Option<std::string> preset{*this, "preset",
                             llvm::cl::desc("link model for strategy=auto: "
                                            "h100-dgx, h200-dgx (default), "
                                            "gb200-nvl72 (a row of the model "
                                            "library's preset table, which "
                                            "the runtime shares: a name, so "
                                            "new rows need no option "
                                            "change)"),
                             llvm::cl::init("h200-dgx")};
  Option<ExpertGemm> expertGemm{
      *this, "expert-gemm",
      llvm::cl::desc("f32 linalg.matmul on memrefs: blas (default: "
                     "OpenBLAS sgemm through the runtime, "
                     "moecomm-matmul-to-blas) or loops "
                     "(convert-linalg-to-loops)"),
      llvm::cl::init(ExpertGemm::blas),
      llvm::cl::values(clEnumValN(ExpertGemm::blas, "blas", "OpenBLAS sgemm"),
                       clEnumValN(ExpertGemm::loops, "loops", "scalar loops"))};
  Option<Target> target{
      *this, "target",
      llvm::cl::desc("host (default: host buffers, the CPU runtime) or cuda "
                     "(device buffers and stream-ordered runtime calls: "
                     "moecomm-device-buffers; docs/pipeline.md)"),
      llvm::cl::init(Target::host),
      llvm::cl::values(clEnumValN(Target::host, "host", "host buffers"),
                       clEnumValN(Target::cuda, "cuda", "device buffers"))};
  Option<int64_t> tokensPerRank{*this, "tokens-per-rank",
                                llvm::cl::desc("tokens per rank assumed by "
                                               "strategy=auto when T is "
                                               "dynamic (default 4096)"),
                                llvm::cl::init(4096)};
};

/// Builds `moecomm-pipeline`: check the module attributes the translation to
/// LLVM IR reads (moecomm-check-llvm-module-attributes), configure collectives (ranks, wire dtype,
/// capacity, align), split, fuse-quant, fuse-permute, schedule-overlap
/// (`chunks`), convert-moecomm-to-runtime, buffer deallocation, with
/// `target=cuda` moecomm-device-buffers, the expert GEMMs' lowering
/// (`expert-gemm`), and the upstream conversions to the LLVM dialect. The result translates with
/// `mlir-translate --mlir-to-llvmir`.
void buildMoECommPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `moecomm-pipeline` with the global pass registry.
void registerMoECommPipeline();

} // namespace moecomm
} // namespace mlir

#endif // MOECOMM_PIPELINES_PIPELINE_H
