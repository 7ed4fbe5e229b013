//===- GraphPath.h - moecomm-run's compiled-graph execution -----*- C++ -*-===//
//
// Runs an MoE graph compiled by moecomm-pipeline: a .mlir file (JIT through
// MLIR's ExecutionEngine), the same file's ahead-of-time library (--aot), or
// the built-in layer graph generated for the routing problem. Every rank
// binds its communicator (moecommCompiledBind) and calls the graph's C
// interface on its tokens.
//
// Graph contract (docs/moecomm-run.md): the entry function takes
//   x [T,H] (bf16|f32), topk_idx [T,K] (i32|i64), topk_weights [T,K] f32
//   [, grad_out [T,H]]
//   [, w_gate [E/W,I,H] f32, w_up [E/W,I,H] f32, w_down [E/W,H,I] f32]
// and returns
//   out [T,H] (weighted combine of the experts' outputs)
//   [, grad_x [T,H]]                (with grad_out: the training step)
//   [, recv [R,H], recv_weights [R] f32, tokens_per_expert [E/W] i64].
// Without weights the experts are identity; with them, the rank's local
// experts' SwiGLU FFNs (moecomm/Reference/ExpertFfn.h), whose weights
// moecomm-run generates per rank (moecomm/Reference/ExpertWeights.h).
// moecomm-run feeds grad_out = x.
//
// A graph compiled for target=cuda (or an --aot library built so) runs on a
// thread bound with moecommCompiledBindDevice: its arguments are placed in
// device buffers and its results copied back (DeviceCallBuffers.h).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_GRAPHPATH_H
#define MOECOMM_TOOLS_RUN_GRAPHPATH_H

#include "LayerResult.h"
#include "Verify.h"
#include "moecomm/Pipelines/Pipeline.h"
#include "moecomm/Workload/RoutingProblem.h"

#include <atomic>
#include <memory>

namespace moecomm::run {

struct GraphOptions {
  /// The graph (.mlir); empty: the built-in layer graph for the problem.
  std::string file;
  /// A library built from `file` ahead of time (moecomm_add_aot_graph or
  /// moecomm-aot); empty: JIT-compile `file`.
  std::string aotLibrary;
  /// The function to run.
  std::string entry = "moe_layer";
  /// moecomm-pipeline options; ranks and ranks-per-node come from the
  /// routing problem.
  moecommStrategy_t strategy = moecommAuto;
  int64_t chunks = 1;
  std::string preset = "h200-dgx";
  /// Whether a `wire<...>` / `capacity(N)` the graph's dispatches declare
  /// replaces the routing's dtype / capacity (false when the user set them
  /// with --wire-dtype / --capacity).
  bool wireFromGraph = true;
  bool capacityFromGraph = true;
  /// Seed of the expert weights of a graph that takes them.
  uint64_t weightSeed = 1;
  /// Where the graph runs: host memory on a thread bound with
  /// moecommCompiledBind, or device buffers on one bound with
  /// moecommCompiledBindDevice (moecomm-pipeline's target=cuda; an --aot
  /// library must have been built for the same target).
  mlir::moecomm::Target target = mlir::moecomm::Target::host;
  /// The device is a GPU (--backend nccl): a cuda-target graph that runs
  /// host code over device buffers (moecomm-device-buffers' warning) is
  /// refused, since it would fault there; on the host device it runs.
  bool gpu = false;
};

class CompiledGraph;

/// Compiles (or loads) the graph for `problem`, first taking the wire dtype
/// and capacity the graph's dispatches declare into `problem` (as allowed by
/// `options`; all dispatches reached from the entry must agree). Errors:
/// invalid_argument for an unreadable or invalid graph, a pipeline failure,
/// an entry whose signature breaks the contract, collectives over another
/// expert count, dispatches that disagree, or (GraphOptions::gpu) host code
/// over device buffers (one line, naming the problem).
llvm::Expected<std::shared_ptr<CompiledGraph>>
compileGraph(const GraphOptions &options, workload::RoutingProblem &problem);

/// How the graph was obtained, for reports ("examples/x.mlir (JIT)").
const std::string &graphLabel(const CompiledGraph &graph);

/// The pipeline's warnings about the compiled graph, one line each
/// ("<location>: <text>"), in the order given: with target=cuda,
/// moecomm-device-buffers' warning about host code over device buffers
/// (one per function). Empty for an --aot library (moecomm-aot prints
/// them when it builds one).
const std::vector<std::string> &graphWarnings(const CompiledGraph &graph);

/// The experts the graph's entry applies: SwiGLU with I from its w_gate
/// type and GraphOptions::weightSeed when it takes weights, else identity.
ExpertSpec graphExperts(const CompiledGraph &graph);

/// Bytes of one expert's f32 weights (w_gate, w_up, w_down): 3 * H * I * 4;
/// 0 for identity experts.
double expertWeightBytes(const CompiledGraph &graph,
                         const workload::RoutingProblem &problem);

class GraphPath final : public ExecutionPath {
public:
  /// `reference` supplies the sources of the received rows (see
  /// runIteration); it must outlive the path.
  GraphPath(std::shared_ptr<CompiledGraph> graph,
            const ReferenceResult &reference);
  const char *name() const override;
  int passes() const override;
  bool observesDispatch() const override;
  /// Layouts the graph created per call over the dispatches it declares:
  /// each chunk of a dispatch computes its own layout.
  int chunks() const override;
  /// Whether the entry reaches a dispatch or layout (see
  /// ExecutionPath::usesLayouts).
  bool usesLayouts() const override;
  /// See ExecutionPath::runIteration. Sources are not an output of the
  /// graph: they are taken from the dispatch order of the reference (the
  /// rows themselves are checked bit for bit). A graph taking weights gets
  /// the rank's local experts' weights, generated on its first iteration
  /// (on the rank's thread or process) and kept for the next ones.
  llvm::Error runIteration(moecommComm_t comm,
                           const workload::RoutingProblem &problem, int rank,
                           LayerResult &out) override;

private:
  std::shared_ptr<CompiledGraph> graph;
  const ReferenceResult &reference;
  /// [W] (threads; one entry used under MPI): each rank's w_gate, w_up and
  /// w_down, each [E/W][...] f32; written only by the rank's own thread.
  struct RankWeights {
    std::vector<float> gate, up, down;
  };
  std::vector<std::unique_ptr<RankWeights>> expertWeights;
  /// Set by runIteration on every rank (the same value: ranks run the same
  /// graph), read after the run.
  std::atomic<int> observedChunks{1};
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_GRAPHPATH_H
