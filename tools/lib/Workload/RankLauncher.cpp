//===- RankLauncher.cpp - run one function on every rank ------------------===//

#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#ifdef MOECOMM_HAVE_MPI
#include "moecomm/moecomm_mpi.h"
#include <mpi.h>
#endif
// After <mpi.h>, which declares moecommCommInitNccl.
#include "moecomm/moecomm_nccl.h"

using namespace llvm;

namespace moecomm::workload {

namespace {

/// Runs `body(comm, rank)` on the communicator `init` creates (`what`: the
/// runtime call, for the error), destroyed when `body` returns; `body` does
/// not run when it cannot be created.
Error runOnNewComm(function_ref<moecommResult_t(moecommComm_t *)> init,
                   StringRef what, int rank, RankBody body) {
  moecommComm_t comm = nullptr;
  if (Error e = runtimeError(init(&comm), nullptr, what))
    return e;
  body(comm, rank);
  moecommCommDestroy(comm);
  return Error::success();
}

} // namespace

Error runOnRankThreads(int ranks, function_ref<void(int)> body) {
  enum class Gate { Closed, Open, Cancelled };
  std::mutex mutex;
  std::condition_variable cv;
  Gate gate = Gate::Closed;
  auto setGate = [&](Gate g) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gate = g;
    }
    cv.notify_all();
  };

  std::vector<std::thread> threads;
  std::string why;
  try {
    threads.reserve(ranks);
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return gate != Gate::Closed; });
          if (gate == Gate::Cancelled)
            return;
        }
        body(r);
      });
    }
  } catch (const std::system_error &e) {
    why = e.what();
  } catch (const std::bad_alloc &) {
    why = "out of memory";
  }
  const size_t started = threads.size();
  setGate(started == static_cast<size_t>(ranks) ? Gate::Open : Gate::Cancelled);
  for (std::thread &t : threads)
    t.join();
  if (started != static_cast<size_t>(ranks))
    return systemError(formatv("cannot start the thread of rank {0} of {1} "
                               "(threads backend): {2}",
                               started, ranks, why));
  return Error::success();
}

Error runOnThreadGroup(int ranks, int ranksPerNode, RankBody body) {
  moecommThreadGroup_t group = nullptr;
  if (Error e =
          runtimeError(moecommThreadGroupCreate(ranks, ranksPerNode, &group),
                       nullptr, "moecommThreadGroupCreate"))
    return e;
  // Each rank's failure to make its communicator; the lowest is returned.
  std::vector<Error> initErrors;
  initErrors.reserve(ranks);
  for (int r = 0; r < ranks; ++r)
    initErrors.push_back(Error::success());
  Error started = runOnRankThreads(ranks, [&](int r) {
    initErrors[r] = runOnNewComm(
        [&](moecommComm_t *comm) {
          return moecommCommInitThreadRank(comm, group, r);
        },
        "moecommCommInitThreadRank", r, body);
  });
  Error destroyed = runtimeError(moecommThreadGroupDestroy(group), nullptr,
                                 "moecommThreadGroupDestroy");
  // The first failure is reported; the later ones are its consequences.
  Error first = std::move(started);
  auto keep = [&](Error next) {
    if (first)
      consumeError(std::move(next));
    else
      first = std::move(next);
  };
  for (Error &e : initErrors)
    keep(std::move(e));
  keep(std::move(destroyed));
  return first;
}

bool haveMpi() {
#ifdef MOECOMM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool isReportingProcess() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *v = std::getenv(var))
      return StringRef(v) == "0";
  return true;
}

bool launchedByMpirun() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var))
      return true;
  return false;
}

Expected<MpiWorld> initMpi(int &argc, char **&argv) {
#ifdef MOECOMM_HAVE_MPI
  MpiWorld world;
  // moecomm's mpi backend needs MPI_THREAD_MULTIPLE (its progress thread
  // calls MPI while this one runs); a lower level provided is reported by
  // moecommCommInitMpi.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
      MPI_SUCCESS)
    return systemError("MPI_Init_thread failed");
  world.initialized = true;
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  return world;
#else
  (void)argc;
  (void)argv;
  return inputError("MPI is not available");
#endif
}

void finalizeMpi(const MpiWorld &world) {
#ifdef MOECOMM_HAVE_MPI
  if (world.initialized)
    MPI_Finalize();
#else
  (void)world;
#endif
}

int mpiMaxInt(const MpiWorld &world, int value) {
#ifdef MOECOMM_HAVE_MPI
  if (world.initialized) {
    int result = value;
    MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return result;
  }
#else
  (void)world;
#endif
  return value;
}

bool mpiSameOnEveryRank(const MpiWorld &world, uint64_t value) {
#ifdef MOECOMM_HAVE_MPI
  if (world.initialized) {
    unsigned long long mine = value, low = 0, high = 0;
    MPI_Allreduce(&mine, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                  MPI_COMM_WORLD);
    return low == high;
  }
#else
  (void)world;
  (void)value;
#endif
  return true;
}

namespace {

/// runOnMpiWorld (backend mpi) and runOnNcclWorld (backend nccl).
Error runOnWorld(const MpiWorld &world, int ranksPerNode, bool nccl,
                 RankBody body) {
#ifdef MOECOMM_HAVE_MPI
  return runOnNewComm(
      [&](moecommComm_t *comm) {
        return nccl ? moecommCommInitNccl(comm, MPI_COMM_WORLD, ranksPerNode,
                                          /*cudaDevice=*/-1)
                    : moecommCommInitMpi(comm, MPI_COMM_WORLD, ranksPerNode);
      },
      nccl ? "moecommCommInitNccl" : "moecommCommInitMpi", world.rank, body);
#else
  (void)world;
  (void)ranksPerNode;
  (void)nccl;
  (void)body;
  return inputError("MPI is not available");
#endif
}

} // namespace

Error runOnMpiWorld(const MpiWorld &world, int ranksPerNode, RankBody body) {
  return runOnWorld(world, ranksPerNode, /*nccl=*/false, body);
}

Error runOnNcclDevice(RankBody body) {
  Error failed = Error::success();
  Error started = runOnRankThreads(1, [&](int rank) {
    failed = runOnNewComm(
        [](moecommComm_t *comm) {
          return moecommCommInitNcclSingle(comm, /*cudaDevice=*/-1);
        },
        "moecommCommInitNcclSingle", rank, body);
  });
  if (started) {
    consumeError(std::move(failed));
    return started;
  }
  return failed;
}

Error runOnNcclWorld(const MpiWorld &world, int ranksPerNode, RankBody body) {
  return runOnWorld(world, ranksPerNode, /*nccl=*/true, body);
}

} // namespace moecomm::workload
