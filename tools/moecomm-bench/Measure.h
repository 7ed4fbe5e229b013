//===- Measure.h - measured dispatch + combine on the backends --*- C++ -*-===//
//
// The measuring path of moecomm-bench: moves the payload with the runtime on
// the threads backend (W threads of this process), the mpi backend (this
// process is one rank of `mpirun -np W`) or the nccl backend (the GPU: one
// process and GPU, W = 1, or one process per GPU under `mpirun -np W`; rows
// in device memory, RowMemory.h), and measures, in the same run, the
// baseline: a plain all-to-all of the per-expert rows (dispatch) and back
// (combine), which is what Megatron's all-to-all token dispatcher sends.
//   mpi:     MPI_Alltoallv on MPI_COMM_WORLD, called directly;
//   threads: moecommAllToAll (the runtime's ragged all-to-all) on the same
//            thread communicators - no MPI is involved, so this is the
//            threads backend's analogue of MPI_Alltoallv, labelled as such;
//   nccl:    moecommAllToAll on the same nccl communicator with device rows
//            (ncclSend/ncclRecv in one group, docs/gpu.md).
// Timed regions: moecomm = layout creation + dispatch + weighted combine
// (identity experts: y = the dispatched rows); baseline = the two
// all-to-alls on buffers packed beforehand (no permute, no reduce), so the
// ratio is conservative for moecomm. Every iteration starts after a barrier;
// an iteration's time is the maximum over ranks; reports take the median
// (and the minimum) over the timed iterations. Wall time here is CPU time on
// this machine and is only meaningful as the ratio (DESIGN.md §7), or, on
// the emulated cluster, against the link-limited time (LinkLimit.h). On the
// nccl backend every timed region ends with a stream synchronize, so it is
// GPU time (plus the host's enqueueing and agreements).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_MEASURE_H
#define MOECOMM_TOOLS_BENCH_MEASURE_H

#include "Count.h"
#include "moecomm/Workload/RoutingProblem.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace moecomm::bench {

/// One (wire dtype, strategy) measured on one group.
struct OpMeasurement {
  workload::PayloadType dtype = workload::PayloadType::BF16;
  moecommStrategy_t strategy = moecommPerExpert;
  /// Per timed iteration, maximum over ranks, seconds.
  std::vector<double> layoutSec, dispatchSec, combineSec, totalSec;
  /// Per rank, the median over the timed iterations of that rank's own
  /// dispatch / combine time, seconds (the time of DeepEP's per-rank
  /// bandwidth, Cells.h's AlgorithmBandwidth).
  std::vector<double> rankDispatchSec, rankCombineSec;
  /// Each rank's traffic counters after the first timed iteration (reset
  /// before it): what that rank sent.
  std::vector<moecommTraffic_t> rankTraffic;
  /// The strategy in effect on each rank (auto resolved by the runtime).
  std::vector<moecommStrategy_t> rankStrategy;
  /// Max over ranks and sampled tokens of |out - x * sum(w)| /
  /// (max|x_row| * sum|w|): the identity-expert sanity check of the payload.
  double payloadErr = 0;
};

/// Everything measured for one group.
struct GroupMeasurement {
  std::string backend;      ///< "threads", "mpi" or "nccl"
  std::string baselineKind; ///< "MPI_Alltoallv" or "moecommAllToAll"
  /// Baseline seconds per timed iteration (max over ranks).
  std::vector<double> baselineSec;
  /// The runtime's counters of the moecommAllToAll baseline per rank (what
  /// each rank sent in the all_to_all direction); empty for MPI_Alltoallv.
  std::vector<moecommTraffic_t> baselineTraffic;
  std::vector<OpMeasurement> ops; ///< in request order
};

struct MeasureOptions {
  int warmup = 1;     ///< untimed iterations per op
  int iterations = 3; ///< timed iterations per op
  /// Expert segment alignment of every layout (a power of two; 1 =
  /// unpadded): the receivers' padding costs unpack time, no traffic.
  int64_t align = 1;
  /// The link model set on every communicator (moecommCommSetLinkModel), so
  /// the runtime's `auto` chooses with it.
  moecommLinkModel_t autoLink{};
};

/// A backend that can run one group's ops.
class Executor {
public:
  virtual ~Executor();
  /// Whether this process reports (prints and writes files): MPI rank 0.
  virtual bool isRoot() const = 0;
  /// Whether a cluster of `cluster.ranks()` ranks can be run: any W for
  /// threads, W == the world size for mpi and nccl (1 without mpirun).
  virtual bool canRun(const Cluster &cluster) const = 0;
  /// Whether every process holds the same `value` (e.g. a hash of its
  /// command line); true for threads. Collective for mpi.
  virtual bool sameOnEveryProcess(uint64_t /*value*/) const { return true; }
  /// Runs every (dtype, strategy) of `ops` plus the baseline on `group`.
  /// Collective for mpi and nccl (every process calls it for the same
  /// group); the result is complete on the root only. Runtime failures are
  /// io_error (exit status 3) naming the call and the runtime's message.
  virtual llvm::Expected<GroupMeasurement>
  run(const RoutingGroup &group,
      const std::vector<std::pair<workload::PayloadType, moecommStrategy_t>>
          &ops,
      const MeasureOptions &options) = 0;
};

/// The threads backend.
std::unique_ptr<Executor> makeThreadsExecutor();

/// Initializes MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE) and returns the
/// mpi backend; the executor finalizes MPI when destroyed. invalid_argument
/// when moecomm-bench was built without MPI; io_error when MPI_Init_thread
/// fails. Collective.
llvm::Expected<std::unique_ptr<Executor>> makeMpiExecutor(int &argc,
                                                          char **&argv);

/// The nccl backend (the GPU). Without mpirun: one rank on one GPU
/// (moecommCommInitNcclSingle on the current device), which measures
/// clusters of one rank (--topologies 1x1). Under mpirun: initializes MPI
/// like makeMpiExecutor and makes one nccl communicator per ranks-per-node
/// value measured (moecommCommInitNccl(MPI_COMM_WORLD, G, -1): one process
/// per GPU, placed node by node), the first (G = the world size) now, so
/// that a missing GPU is found before the sweep. Errors: invalid_argument
/// (exit status 2) with the runtime's message when moecomm was built without
/// CUDA/NCCL or no usable GPU is found ("--backend nccl: ...: rank 0: no
/// CUDA device: ..."), or under mpirun without MPI; io_error for CUDA, NCCL
/// or MPI failures. Collective under mpirun (the runtime agrees on its
/// errors, so every process fails alike).
llvm::Expected<std::unique_ptr<Executor>> makeNcclExecutor(int &argc,
                                                           char **&argv);

/// Median of `values` (0 for none).
double median(std::vector<double> values);
/// Minimum of `values` (0 for none).
double minimum(const std::vector<double> &values);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_MEASURE_H
