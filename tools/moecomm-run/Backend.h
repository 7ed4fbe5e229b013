//===- Backend.h - run an ExecutionPath on every rank -----------*- C++ -*-===//
//
// `threads`: W threads in this process, one communicator each (moecomm
// ThreadGroup). `mpi`: this process is one rank of `mpirun -np W`, with a
// communicator over MPI_COMM_WORLD. Either way every rank runs the same loop:
//   for each iteration: path.runIteration -> verifyRank -> (last) dump;
// and the small per-rank summaries end up on the reporting process (the only
// process for threads, rank 0 for MPI).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_BACKEND_H
#define MOECOMM_TOOLS_RUN_BACKEND_H

#include "LayerResult.h"
#include "Verify.h"

#include <functional>
#include <string>
#include <vector>

namespace moecomm::run {

enum class BackendKind { Threads, Mpi };

/// "threads" / "mpi".
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
};

struct BackendOptions {
  BackendKind kind = BackendKind::Threads;
  int iterations = 1;
  /// Directory for --dump ("" = none); rank files from the last iteration.
  std::string dumpDir;
  /// Show a progress line on stderr for long runs.
  bool progress = true;
};

/// MPI process state (world size and rank); size 1 / rank 0 without MPI.
struct MpiWorld {
  int size = 1;
  int rank = 0;
  bool initialized = false;
};

/// Initializes MPI (MPI_Init). Errors: io_error when MPI_Init fails;
/// invalid_argument ("--backend mpi is not available ...") when moecomm-run is
/// built without MPI (MOECOMM_RUN_HAVE_MPI unset).
llvm::Expected<MpiWorld> initMpi(int &argc, char **&argv);
/// MPI_Finalize when initialized.
void finalizeMpi(const MpiWorld &world);
/// Returns the maximum of `value` over all MPI ranks (the value itself
/// without MPI): used to agree on exit codes.
int mpiMaxInt(const MpiWorld &world, int value);
/// Whether `value` (e.g. a hash of a rank's inputs) is the same on every MPI
/// rank (true without MPI). Collective.
bool mpiSameOnEveryRank(const MpiWorld &world, uint64_t value);

/// Runs `path` on the ranks this process owns, `options.iterations` times each
/// with a fresh layout per iteration on one communicator per rank, verifying
/// every iteration against `reference`. Returns the summaries of all ranks on
/// the reporting process (empty `ranks` on other MPI ranks). A runtime error
/// (the same on every rank: the runtime agrees on errors collectively) stops
/// the run and is returned, from the lowest failing rank.
llvm::Expected<RunSummary> runOnBackend(const BackendOptions &options,
                                        const MpiWorld &world,
                                        ExecutionPath &path,
                                        const RoutingProblem &problem,
                                        const ReferenceResult &reference);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_BACKEND_H
