//===- gemm_bench.cpp - the pipeline's expert GEMMs vs cblas_sgemm --------===//
//
// Measures, in one run and on one thread each, the f32 GEMMs of the routed
// experts' SwiGLU FFN as moecomm-pipeline compiles them (a small graph,
// JIT-compiled with MLIR's ExecutionEngine: expert-gemm=blas, i.e.
// moecomm_rt_matmul_f32 -> OpenBLAS) against OpenBLAS's cblas_sgemm called
// directly on the same operands, and prints GFLOP/s and their ratio (issue
// 14's goal: >= 0.5). The loops that expert-gemm=loops makes are measured
// too, for reference, at --loops-rows rows only (they run at 0.1 to
// 2 GFLOP/s: one call takes up to a minute).
//
// Shapes (the models' configs, hidden H and expert intermediate size I):
// DeepSeek-V3 7168 x 2048, Qwen3-30B-A3B 2048 x 768, Mixtral-8x7B
// 4096 x 14336; per model three GEMMs of an expert's M received rows, with
// the weights in nn.Linear's layout as the example graphs take them
// (docs/moecomm-run.md, "Expert FFNs"):
//   gate/up   [M][H] x [I][H]^T   (x W_gate: B^T, w_gate holds W_gate^T)
//   down      [M][I] x [H][I]^T   (h W_down: B^T)
//   grad_h    [M][H] x [H][I]     (grad_y W_down^T, the backward's B [K][N])
// GFLOP/s = 2 M N K / seconds / 1e9, seconds = the fastest of the timed
// calls (after one untimed warm-up each, the pipeline's and the direct call
// alternate until both have run --min-time seconds on average, so both see
// the same load on a shared machine). The graph's call includes what a layer's
// GEMM costs in a compiled graph: allocating and zero-filling C, the call. The
// result of the pipeline is checked against the direct call (max |difference|
// over max |value|); a failure of either is exit status 1, bad flags 2.
//
// Usage: gemm_bench [--rows 64,256,1024] [--loops-rows 64 (0: none)]
//                   [--min-time 0.5] [--models deepseek-v3,qwen3-30b-a3b,
//                   mixtral-8x7b]
//
//===----------------------------------------------------------------------===//
#include "moecomm/InitAllDialects.h"
#include "moecomm/Workload/ToolIO.h"
#include "moecomm/Pipelines/Pipeline.h"
#include "moecomm/moecomm_compiled.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

namespace {

llvm::cl::OptionCategory benchCat("gemm_bench options");
llvm::cl::list<int64_t> rowsOption("rows", llvm::cl::CommaSeparated,
                                   llvm::cl::cat(benchCat),
                                   llvm::cl::desc("expert rows M (default "
                                                  "64,256,1024)"));
llvm::cl::opt<int64_t> loopsRows("loops-rows", llvm::cl::init(64),
                                 llvm::cl::cat(benchCat),
                                 llvm::cl::desc("M at which the loops are "
                                                "measured too (0: never)"));
llvm::cl::opt<double> minTime("min-time", llvm::cl::init(0.5),
                              llvm::cl::cat(benchCat),
                              llvm::cl::desc("seconds of timed calls per "
                                             "measurement (at least one "
                                             "call; default 0.5)"));
llvm::cl::list<std::string>
    modelsOption("models", llvm::cl::CommaSeparated, llvm::cl::cat(benchCat),
                 llvm::cl::desc("deepseek-v3, qwen3-30b-a3b, mixtral-8x7b "
                                "(default: all)"));

struct Model {
  const char *name;
  int64_t hidden, intermediate;
};
// Hidden size and the routed experts' intermediate size, from the models'
// published configs (config.json: hidden_size, moe_intermediate_size;
// Mixtral's experts use intermediate_size).
constexpr Model kModels[] = {{"deepseek-v3", 7168, 2048},
                             {"qwen3-30b-a3b", 2048, 768},
                             {"mixtral-8x7b", 4096, 14336}};

/// One GEMM: C [M][N] = A [M][K] x B, B [K][N] or (transposed) [N][K].
struct Gemm {
  const char *name;
  int64_t k, n;
  bool transposeB;
};

/// MLIR's C-interface descriptor of a rank-2 f32 memref.
using MemRef = moecommMemRef2D;

MemRef wrap(std::vector<float> &v, int64_t rows, int64_t cols) {
  return MemRef{v.data(), v.data(), 0, {rows, cols}, {cols, 1}};
}

/// The expert GEMM as a layer's graph writes it (docs: the shared FFN
/// form): C = linalg.matmul(A, B) into a zero-filled new tensor.
std::string graphText(const Gemm &g) {
  std::string b = g.transposeB ? llvm::formatv("{0}x{1}", g.n, g.k).str()
                               : llvm::formatv("{0}x{1}", g.k, g.n).str();
  std::string maps = g.transposeB
                         ? "indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
                           "affine_map<(m, n, k) -> (n, k)>, "
                           "affine_map<(m, n, k) -> (m, n)>] "
                         : "";
  return llvm::formatv(
             R"(func.func @gemm(%a: tensor<?x{0}xf32>, %b: tensor<{2}xf32>)
    -> tensor<?x{1}xf32> attributes {{llvm.emit_c_interface} {{
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x{0}xf32>
  %e = tensor.empty(%m) : tensor<?x{1}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x{1}xf32>) -> tensor<?x{1}xf32>
  %r = linalg.matmul {3}ins(%a, %b : tensor<?x{0}xf32>, tensor<{2}xf32>)
      outs(%z : tensor<?x{1}xf32>) -> tensor<?x{1}xf32>
  return %r : tensor<?x{1}xf32>
}
)",
             g.k, g.n, b, maps)
      .str();
}

/// A graph compiled by moecomm-pipeline and JIT-compiled: call(A, B) returns
/// C in a buffer the graph allocated (freed here).
class CompiledGemm {
public:
  static std::unique_ptr<CompiledGemm> compile(mlir::MLIRContext &context,
                                               const Gemm &g,
                                               mlir::moecomm::ExpertGemm how) {
    auto self = std::unique_ptr<CompiledGemm>(new CompiledGemm);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(graphText(g), &context);
    mlir::moecomm::PipelineOptions options;
    options.expertGemm = how;
    mlir::PassManager pm(&context);
    mlir::moecomm::buildMoECommPipeline(pm, options);
    if (!module || mlir::failed(pm.run(*module))) {
      std::fprintf(stderr, "gemm_bench: cannot compile the %s graph\n", g.name);
      return nullptr;
    }
    mlir::ExecutionEngineOptions engineOptions;
    std::function<llvm::Error(llvm::Module *)> optimize =
        mlir::makeOptimizingTransformer(2, 0, nullptr);
    engineOptions.transformer = optimize;
    auto engine = mlir::ExecutionEngine::create(*module, engineOptions);
    if (!engine) {
      std::fprintf(stderr, "gemm_bench: cannot JIT the %s graph: %s\n", g.name,
                   llvm::toString(engine.takeError()).c_str());
      return nullptr;
    }
    self->engine = std::move(*engine);
    auto entry = self->engine->lookup("_mlir_ciface_gemm");
    if (!entry) {
      std::fprintf(stderr, "gemm_bench: %s\n",
                   llvm::toString(entry.takeError()).c_str());
      return nullptr;
    }
    self->entry = reinterpret_cast<Entry>(*entry);
    return self;
  }

  /// C = A B (or A B^T), copied into `c` unless it is null.
  bool call(MemRef &a, MemRef &b, std::vector<float> *c) {
    MemRef result{};
    entry(&result, &a, &b);
    if (moecommCompiledStatus() != moecommSuccess) {
      std::fprintf(stderr, "gemm_bench: compiled GEMM failed: %s\n",
                   moecommCompiledLastError());
      std::free(result.allocated);
      return false;
    }
    if (c)
      c->assign(static_cast<float *>(result.aligned) + result.offset,
                static_cast<float *>(result.aligned) + result.offset +
                    result.sizes[0] * result.sizes[1]);
    std::free(result.allocated);
    return true;
  }

private:
  using Entry = void (*)(MemRef *, MemRef *, MemRef *);
  std::unique_ptr<mlir::ExecutionEngine> engine;
  Entry entry = nullptr;
};

/// Seconds of the fastest call of `a` and of `b`, called in turn (after a
/// warm-up of each) so that both see the same load on a shared machine;
/// nullopt if a call failed.
std::optional<std::pair<double, double>>
fastestOfEach(const std::function<bool()> &a, const std::function<bool()> &b) {
  if (!a() || !b())
    return std::nullopt;
  double bestA = INFINITY, bestB = INFINITY, spent = 0;
  auto timed = [&](const std::function<bool()> &run, double &best) {
    Clock::time_point start = Clock::now();
    if (!run())
      return false;
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, s);
    spent += s;
    return true;
  };
  do {
    if (!timed(a, bestA) || !timed(b, bestB))
      return std::nullopt;
  } while (spent < 2 * minTime);
  return std::make_pair(bestA, bestB);
}

std::vector<float> values(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i % 65521) + phase);
  return v;
}

} // namespace

int main(int argc, char **argv) {
  // The linked LLVM registers hundreds of its own options; --help shows ours.
  llvm::cl::HideUnrelatedOptions(benchCat);
  std::string flagError;
  if (!moecomm::workload::parseCommandLine(
          argc, argv,
          "gemm_bench: the expert GEMMs compiled by moecomm-pipeline vs "
          "cblas_sgemm, one thread each\n",
          flagError)) {
    std::fprintf(stderr, "gemm_bench: error: %s\n", flagError.c_str());
    return 2;
  }
  std::vector<int64_t> rows(rowsOption.begin(), rowsOption.end());
  if (rows.empty())
    rows = {64, 256, 1024};
  for (int64_t m : rows)
    if (m < 1) {
      std::fprintf(stderr, "gemm_bench: error: --rows must be >= 1\n");
      return 2;
    }
  std::vector<Model> models;
  for (const Model &model : kModels)
    if (modelsOption.empty() ||
        llvm::is_contained(modelsOption, std::string(model.name)))
      models.push_back(model);
  if (models.size() !=
      (modelsOption.empty() ? std::size(kModels) : modelsOption.size())) {
    std::fprintf(stderr, "gemm_bench: error: --models takes deepseek-v3, "
                         "qwen3-30b-a3b, mixtral-8x7b\n");
    return 2;
  }
  // One BLAS thread for the direct calls too (the runtime sets the same for
  // the graph's: ranks are the parallelism).
  openblas_set_num_threads(1);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // One context for every graph (each is translated to LLVM IR when it is
  // JIT-compiled and not needed afterwards).
  mlir::DialectRegistry registry;
  mlir::moecomm::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  // No communicator: the GEMM needs none; this clears the thread's status.
  moecommCompiledBind(nullptr);

  std::printf("gemm_bench: f32 expert GEMMs, 1 thread each; GFLOP/s = 2 M N "
              "K / fastest call; ratio = pipeline / cblas (goal >= 0.5)\n");
  std::printf("%-14s %-7s %5s %6s %6s %9s %9s %6s %9s %9s\n", "model", "gemm",
              "M", "K", "N", "pipeline", "cblas", "ratio", "loops", "rel.diff");
  double worst = INFINITY;
  for (const Model &model : models) {
    const Gemm gemms[] = {{"gate/up", model.hidden, model.intermediate, true},
                          {"down", model.intermediate, model.hidden, true},
                          {"grad_h", model.hidden, model.intermediate, false}};
    for (const Gemm &g : gemms) {
      auto blas =
          CompiledGemm::compile(context, g, mlir::moecomm::ExpertGemm::blas);
      if (!blas)
        return 1;
      std::unique_ptr<CompiledGemm> loops;
      auto bBuf = values(g.k * g.n, 1);
      MemRef b = g.transposeB ? wrap(bBuf, g.n, g.k) : wrap(bBuf, g.k, g.n);
      for (int64_t m : rows) {
        auto aBuf = values(m * g.k, 0);
        MemRef a = wrap(aBuf, m, g.k);
        std::vector<float> direct(m * g.n), compiled;
        auto seconds = fastestOfEach(
            [&] { return blas->call(a, b, nullptr); },
            [&] {
              cblas_sgemm(CblasRowMajor, CblasNoTrans,
                          g.transposeB ? CblasTrans : CblasNoTrans, m, g.n, g.k,
                          1.0f, aBuf.data(), g.k, bBuf.data(),
                          g.transposeB ? g.k : g.n, 0.0f, direct.data(), g.n);
              return true;
            });
        if (!seconds || !blas->call(a, b, &compiled))
          return 1;
        auto [viaPipeline, viaCblas] = *seconds;
        double flop = 2.0 * m * g.n * g.k;
        double scale = 0, diff = 0;
        for (size_t i = 0; i < direct.size(); ++i) {
          scale = std::max<double>(scale, std::fabs(direct[i]));
          diff = std::max<double>(diff, std::fabs(direct[i] - compiled[i]));
        }
        std::string loopsText = "-";
        if (m == loopsRows) {
          if (!loops)
            loops = CompiledGemm::compile(context, g,
                                          mlir::moecomm::ExpertGemm::loops);
          if (!loops)
            return 1;
          // One call: the loops take seconds.
          Clock::time_point start = Clock::now();
          if (!loops->call(a, b, nullptr))
            return 1;
          double s =
              std::chrono::duration<double>(Clock::now() - start).count();
          loopsText = llvm::formatv("{0:F2}", flop / s / 1e9).str();
        }
        double ratio = viaCblas / viaPipeline;
        worst = std::min(worst, ratio);
        std::printf(
            "%-14s %-7s %5lld %6lld %6lld %9.2f %9.2f %6.2f %9s %9.1e\n",
            model.name, g.name, static_cast<long long>(m),
            static_cast<long long>(g.k), static_cast<long long>(g.n),
            flop / viaPipeline / 1e9, flop / viaCblas / 1e9, ratio,
            loopsText.c_str(), scale > 0 ? diff / scale : diff);
        std::fflush(stdout);
      }
    }
  }
  std::printf("lowest ratio %.2f (goal >= 0.5)\n", worst);
  return 0;
}
