//===- Backend.h - run an ExecutionPath on every rank -----------*- C++ -*-===//
//
// `threads`: W threads in this process, one communicator each (moecomm
// ThreadGroup). `mpi`: this process is one rank of `mpirun -np W`, with a
// communicator over MPI_COMM_WORLD. `nccl`: one GPU per process, a
// single-device communicator without mpirun or one over MPI_COMM_WORLD
// under it (moecomm_nccl.h). Every rank runs the same loop:
//   for each iteration: path.runIteration -> verifyRank -> (last) dump;
// and the small per-rank summaries end up on the reporting process (the only
// process for threads, rank 0 for MPI).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_BACKEND_H
#define MOECOMM_TOOLS_RUN_BACKEND_H

#include "LayerResult.h"
#include "Verify.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/Timeline.h"

#include <functional>
#include <string>
#include <vector>

namespace moecomm::run {

enum class BackendKind { Threads, Mpi, Nccl };

/// The error of `--backend mpi` in a build without the MPI backend.
constexpr const char *kNoMpi = "--backend mpi is not available: moecomm-run "
                               "was built without MPI (MOECOMM_ENABLE_MPI=OFF)";

/// "threads" / "mpi" / "nccl".
const char *backendName(BackendKind kind);

/// What one rank reports about one iteration (no row data).
struct IterationSummary {
  moecommTraffic_t traffic{}; ///< this rank's counters (what it sent)
  double seconds = 0;         ///< layout + dispatch + combine on this rank
  moecommStrategy_t strategy = moecommFlat; ///< in effect
  int64_t recvRows = 0;
  int64_t dropped = 0;
  std::vector<int64_t> tokensPerExpert; ///< [E/W]
  std::vector<StageInfo> stages;
  RankCheck check;
};

/// Everything the report needs: summaries[rank][iteration].
struct RunSummary {
  std::vector<std::vector<IterationSummary>> ranks;
  double wallSeconds = 0; ///< whole run, first iteration start to last end
  /// --trace: every rank's recorded spans, on one clock (reporting process).
  std::vector<workload::RankTimeline> timelines;
};

struct BackendOptions {
  BackendKind kind = BackendKind::Threads;
  int iterations = 1;
  /// Directory for --dump ("" = none); rank files from the last iteration.
  std::string dumpDir;
  /// Show a progress line on stderr for long runs.
  bool progress = true;
  /// --trace: record every rank's runtime spans over all iterations.
  bool trace = false;
};

/// Runs `path` on the ranks this process owns, `options.iterations` times each
/// with a fresh layout per iteration on one communicator per rank, verifying
/// every iteration against `reference`. Returns the summaries of all ranks on
/// the reporting process (empty `ranks` on other MPI ranks). A runtime error
/// (the same on every rank: the runtime agrees on errors collectively) stops
/// the run and is returned, from the lowest failing rank. `nccl` runs over
/// MPI_COMM_WORLD when `world` is initialized, else one rank on this
/// process's GPU; without a usable GPU (or CUDA/NCCL in the build) the
/// communicator's Unsupported error is returned (bad input).
llvm::Expected<RunSummary> runOnBackend(const BackendOptions &options,
                                        const workload::MpiWorld &world,
                                        ExecutionPath &path,
                                        const workload::RoutingProblem &problem,
                                        const ReferenceResult &reference);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_BACKEND_H
