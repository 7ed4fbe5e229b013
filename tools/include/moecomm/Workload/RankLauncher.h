//===- RankLauncher.h - run one function on every rank ---------*- C++ -*-===//
//
// The one way moecomm's tools, benchmarks and tests run "f on W ranks":
//   threads: W threads of this process over one moecomm thread group, each
//            with its own communicator (runOnThreadGroup);
//   mpi:     this process is one rank of `mpirun -np W`, with a communicator
//            over MPI_COMM_WORLD (runOnMpiWorld);
//   nccl:    one GPU per process: a single-device communicator without
//            mpirun (runOnNcclDevice), or under it one over MPI_COMM_WORLD
//            (runOnNcclWorld).
// Every rank's collectives wait for every other rank, so the threads are
// started all or none (runOnRankThreads): a thread that cannot be created
// (RLIMIT_NPROC, address space, memory) stops the run before any rank
// begins, instead of the started ranks waiting for ever in their first
// collective or std::thread's exception aborting the process.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_RANKLAUNCHER_H
#define MOECOMM_WORKLOAD_RANKLAUNCHER_H

#include "moecomm/moecomm.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace moecomm::workload {

/// The most ranks the threads backend runs in one process, each rank a
/// thread. Its memory grows faster than W^2 (measured for one token per rank:
/// 0.4 GB at 256 ranks, 2.4 GB at 512, 17.6 GB at 1024), so bigger clusters
/// run under mpirun or, for byte counts only, moecomm-bench --backend count.
constexpr int kMaxThreadRanks = 512;

/// What one rank runs: its communicator and its rank in [0, W).
using RankBody = llvm::function_ref<void(moecommComm_t comm, int rank)>;

/// Runs `body(r)` for every rank r in [0, ranks) on a thread of its own and
/// joins them. No body starts before every thread exists. Errors: a system
/// error (tools: exit 3) "cannot start the thread of rank R of W (threads
/// backend): <why>", and then no body has run.
llvm::Error runOnRankThreads(int ranks, llvm::function_ref<void(int)> body);

/// Runs `body(comm, r)` for every rank r of a new thread group of `ranks`
/// ranks, `ranksPerNode` per node, each on its own thread
/// (runOnRankThreads) with its own communicator, destroyed when `body`
/// returns; then destroys the group. Errors (runtimeError's codes): the
/// group, a thread or a communicator could not be created (a rank without a
/// communicator does not run `body`), or the group could not be destroyed;
/// the first of them, from the lowest rank.
llvm::Error runOnThreadGroup(int ranks, int ranksPerNode, RankBody body);

/// This process's place in MPI_COMM_WORLD; size 1 / rank 0 without MPI.
struct MpiWorld {
  int size = 1;
  int rank = 0;
  bool initialized = false;
};

/// Whether this library was built with the MPI backend (MOECOMM_HAVE_MPI).
bool haveMpi();

/// Whether this process prints: not an MPI rank other than 0 (read from the
/// launcher's environment, so it holds before MPI_Init_thread).
bool isReportingProcess();

/// Whether this process was started by mpirun (Open MPI, PMIx or PMI
/// environment variables).
bool launchedByMpirun();

/// Initializes MPI (MPI_Init_thread asking for MPI_THREAD_MULTIPLE, which
/// the mpi backend needs, unless already initialized). Errors: io_error
/// "MPI_Init_thread failed"; invalid_argument "MPI is not available" without MPI
/// (haveMpi() false: tools check it first and say which build lacks it).
llvm::Expected<MpiWorld> initMpi(int &argc, char **&argv);
/// MPI_Finalize when `world` initialized it.
void finalizeMpi(const MpiWorld &world);
/// The maximum of `value` over all MPI ranks (the value itself without
/// MPI): used to agree on failures and exit codes. Collective.
int mpiMaxInt(const MpiWorld &world, int value);
/// Whether `value` (e.g. a hash of a rank's command line) is the same on
/// every MPI rank (true without MPI). Collective.
bool mpiSameOnEveryRank(const MpiWorld &world, uint64_t value);

/// Runs `body(comm, world.rank)` on a communicator over MPI_COMM_WORLD with
/// `ranksPerNode` ranks per node, destroyed when `body` returns. Collective.
/// Errors (runtimeError's codes): the communicator could not be created (the
/// runtime agrees on it, so every rank fails alike and none runs `body`);
/// invalid_argument without MPI.
llvm::Error runOnMpiWorld(const MpiWorld &world, int ranksPerNode,
                          RankBody body);

/// Runs `body(comm, 0)` on a thread of its own (so that what the runtime
/// keeps per thread, e.g. a compiled graph's device, ends with it) with a
/// one-rank communicator of backend nccl on the current CUDA device
/// (moecommCommInitNcclSingle with device -1), destroyed when `body`
/// returns. Errors (runtimeError's codes): the communicator could not be
/// created -- Unsupported (bad input) "no CUDA device: ..." without a usable
/// GPU or "built without CUDA/NCCL"; SystemError for CUDA/NCCL failures --
/// and then `body` does not run; a thread that cannot start
/// (runOnRankThreads).
llvm::Error runOnNcclDevice(RankBody body);

/// Like runOnMpiWorld with a communicator of backend nccl over
/// MPI_COMM_WORLD (moecommCommInitNccl, device -1: the local rank's GPU, one
/// process per GPU). Collective. Errors as runOnMpiWorld's, and those of
/// moecommCommInitNccl (the same on every rank when found before NCCL
/// starts: Unsupported without a usable GPU on some rank).
llvm::Error runOnNcclWorld(const MpiWorld &world, int ranksPerNode,
                           RankBody body);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_RANKLAUNCHER_H
