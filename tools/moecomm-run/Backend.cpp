//===- Backend.cpp - run an ExecutionPath on every rank -------------------===//

#include "Backend.h"
#include "Dump.h"
#include "moecomm/Workload/Progress.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#ifdef MOECOMM_RUN_HAVE_MPI
#include <mpi.h>
#endif

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

const char *backendName(BackendKind kind) {
  return kind == BackendKind::Threads ? "threads"
         : kind == BackendKind::Mpi   ? "mpi"
                                      : "nccl";
}

namespace {

using Clock = std::chrono::steady_clock;

/// A failure carried between threads / processes: exit-status class and text.
struct Failure {
  bool badInput = true;
  std::string message;
};

Failure toFailure(Error e) {
  Failure f;
  handleAllErrors(std::move(e), [&](const StringError &se) {
    f.badInput = se.convertToErrorCode() ==
                 std::make_error_code(std::errc::invalid_argument);
    f.message = se.getMessage();
  });
  return f;
}

Error fromFailure(const Failure &f) {
  return f.badInput ? inputError(f.message) : systemError(f.message);
}

/// The per-rank loop shared by both backends. `agree` is called after every
/// iteration with this rank's failure flag and returns whether any rank failed
/// (so all ranks stop together). With options.trace, `timeline` gets the
/// rank's runtime spans over all iterations.
std::optional<Failure>
rankLoop(moecommComm_t comm, int rank, const BackendOptions &options,
         ExecutionPath &path, const RoutingProblem &problem,
         const ReferenceResult &reference, Progress *progress,
         const std::function<bool(bool)> &agree,
         std::vector<IterationSummary> &summaries, RankTimeline &timeline) {
  LayerResult result;
  if (options.trace)
    if (Error e = startTimeline(comm))
      return toFailure(std::move(e));
  for (int it = 0; it < options.iterations; ++it) {
    std::optional<Failure> failure;
    if (Error e = path.runIteration(comm, problem, rank, result)) {
      failure = toFailure(std::move(e));
    } else {
      IterationSummary s;
      s.traffic = result.traffic;
      s.seconds = result.seconds;
      s.strategy = result.strategy;
      s.recvRows = result.recvRows;
      s.dropped = result.dropped;
      s.tokensPerExpert = result.tokensPerExpert;
      s.stages = result.stages;
      s.check = verifyRank(problem, reference, result);
      summaries.push_back(std::move(s));
      if (it + 1 == options.iterations && !options.dumpDir.empty())
        if (Error e = dumpRank(options.dumpDir, result))
          failure = toFailure(std::move(e));
    }
    bool anyFailed = agree(failure.has_value());
    if (failure)
      return failure;
    if (anyFailed)
      return std::nullopt; // another rank reports it
    if (progress)
      progress->update(
          llvm::formatv("iteration {0}/{1}", it + 1, options.iterations).str(),
          it + 1 == options.iterations);
  }
  if (options.trace) {
    Expected<RankTimeline> recorded = readTimeline(comm);
    if (!recorded)
      return toFailure(recorded.takeError());
    timeline = std::move(*recorded);
  }
  return std::nullopt;
}

/// A reusable barrier that also ORs a flag over the participants.
class FlagBarrier {
public:
  explicit FlagBarrier(int count) : count(count) {}
  bool arrive(bool flag) {
    std::unique_lock<std::mutex> lock(mutex);
    const uint64_t gen = generation;
    pending = pending || flag;
    if (++arrived == count) {
      result = pending;
      pending = false;
      arrived = 0;
      ++generation;
      cv.notify_all();
      return result;
    }
    cv.wait(lock, [&] { return generation != gen; });
    return result;
  }

private:
  std::mutex mutex;
  std::condition_variable cv;
  int count;
  int arrived = 0;
  bool pending = false;
  bool result = false;
  uint64_t generation = 0;
};

/// Starts the ranks of this process, each `body(comm, rank)` on its own
/// communicator (RankLauncher.h).
using Launcher = function_ref<Error(RankBody body)>;

/// Every rank in this process (threads, or nccl's single device).
Expected<RunSummary> runInProcess(const BackendOptions &options,
                                  Launcher launch, ExecutionPath &path,
                                  const RoutingProblem &p,
                                  const ReferenceResult &reference) {
  RunSummary summary;
  summary.ranks.resize(p.ranks);
  summary.timelines.resize(p.ranks);
  std::vector<std::optional<Failure>> failures(p.ranks);
  FlagBarrier barrier(p.ranks);
  Progress progress("moecomm-run", options.progress);
  const auto start = Clock::now();
  Error launched = launch([&](moecommComm_t comm, int r) {
    failures[r] = rankLoop(
        comm, r, options, path, p, reference, r == 0 ? &progress : nullptr,
        [&](bool failed) { return barrier.arrive(failed); }, summary.ranks[r],
        summary.timelines[r]);
  });
  summary.wallSeconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  progress.finish();
  if (!options.trace)
    summary.timelines.clear();
  if (launched)
    return std::move(launched);
  for (const std::optional<Failure> &f : failures)
    if (f)
      return fromFailure(*f);
  return summary;
}

#ifdef MOECOMM_RUN_HAVE_MPI

json::Value trafficToJson(const moecommTraffic_t &t) {
  json::Array a;
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 3; ++s)
      for (int l = 0; l < 2; ++l) {
        a.push_back(static_cast<int64_t>(t.bytes[d][s][l]));
        a.push_back(static_cast<int64_t>(t.messages[d][s][l]));
      }
  for (int l = 0; l < 2; ++l) {
    a.push_back(static_cast<int64_t>(t.metadataBytes[l]));
    a.push_back(static_cast<int64_t>(t.metadataMessages[l]));
  }
  return a;
}

void trafficFromJson(const json::Array &a, moecommTraffic_t &t) {
  size_t i = 0;
  auto next = [&]() -> uint64_t {
    return i < a.size()
               ? static_cast<uint64_t>(a[i++].getAsInteger().value_or(0))
               : 0;
  };
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 3; ++s)
      for (int l = 0; l < 2; ++l) {
        t.bytes[d][s][l] = next();
        t.messages[d][s][l] = next();
      }
  for (int l = 0; l < 2; ++l) {
    t.metadataBytes[l] = next();
    t.metadataMessages[l] = next();
  }
}

/// One rank's outcome as JSON text, for MPI_Gatherv to rank 0.
std::string serializeRank(const std::vector<IterationSummary> &its,
                          const std::optional<Failure> &failure) {
  json::Array iterations;
  for (const IterationSummary &s : its) {
    json::Array stages, failures;
    for (const StageInfo &st : s.stages)
      stages.push_back(json::Array{static_cast<int64_t>(st.direction), st.stage,
                                   static_cast<int64_t>(st.scope), st.sendRows,
                                   st.recvRows});
    for (const std::string &f : s.check.failures)
      failures.push_back(f);
    iterations.push_back(json::Object{
        {"traffic", trafficToJson(s.traffic)},
        {"seconds", s.seconds},
        {"strategy", static_cast<int64_t>(s.strategy)},
        {"recv_rows", s.recvRows},
        {"dropped", s.dropped},
        {"tpe", json::Array(s.tokensPerExpert)},
        {"stages", std::move(stages)},
        {"ok", s.check.ok},
        {"failures", std::move(failures)},
        {"max_abs_err", errorToJson(s.check.maxAbsErr)},
        {"max_abs_err_ref", errorToJson(s.check.maxAbsErrVsReference)},
        {"bound_ratio", errorToJson(s.check.worstBoundRatio)},
        {"row_mismatches", s.check.dispatchRowMismatches}});
  }
  json::Object o{{"iterations", std::move(iterations)}};
  if (failure)
    o["error"] = json::Object{{"bad_input", failure->badInput},
                              {"message", failure->message}};
  std::string text;
  raw_string_ostream os(text);
  os << json::Value(std::move(o));
  return text;
}

/// Parses serializeRank()'s text back; sets `failure` when the rank failed.
void deserializeRank(StringRef text, std::vector<IterationSummary> &its,
                     std::optional<Failure> &failure) {
  Expected<json::Value> v = json::parse(text);
  if (!v) {
    consumeError(v.takeError());
    failure = Failure{false, "internal error: unreadable rank summary"};
    return;
  }
  const json::Object *o = v->getAsObject();
  if (const json::Object *err = o->getObject("error"))
    failure = Failure{err->getBoolean("bad_input").value_or(false),
                      err->getString("message").value_or("").str()};
  for (const json::Value &iv : *o->getArray("iterations")) {
    const json::Object &io = *iv.getAsObject();
    IterationSummary s;
    trafficFromJson(*io.getArray("traffic"), s.traffic);
    s.seconds = io.getNumber("seconds").value_or(0);
    s.strategy =
        static_cast<moecommStrategy_t>(io.getInteger("strategy").value_or(0));
    s.recvRows = io.getInteger("recv_rows").value_or(0);
    s.dropped = io.getInteger("dropped").value_or(0);
    for (const json::Value &x : *io.getArray("tpe"))
      s.tokensPerExpert.push_back(x.getAsInteger().value_or(0));
    for (const json::Value &x : *io.getArray("stages")) {
      const json::Array &a = *x.getAsArray();
      StageInfo st;
      st.direction = static_cast<moecommDirection_t>(*a[0].getAsInteger());
      st.stage = static_cast<int>(*a[1].getAsInteger());
      st.scope = static_cast<moecommScope_t>(*a[2].getAsInteger());
      st.sendRows = *a[3].getAsInteger();
      st.recvRows = *a[4].getAsInteger();
      s.stages.push_back(st);
    }
    s.check.ok = io.getBoolean("ok").value_or(false);
    for (const json::Value &x : *io.getArray("failures"))
      s.check.failures.push_back(x.getAsString().value_or("").str());
    s.check.maxAbsErr = errorFromJson(io.getNumber("max_abs_err"));
    s.check.maxAbsErrVsReference =
        errorFromJson(io.getNumber("max_abs_err_ref"));
    s.check.worstBoundRatio = errorFromJson(io.getNumber("bound_ratio"));
    s.check.dispatchRowMismatches = io.getInteger("row_mismatches").value_or(0);
    its.push_back(std::move(s));
  }
}

/// This process's rank of an MPI world (mpi, or nccl under mpirun).
Expected<RunSummary> runMpi(const BackendOptions &options,
                            const MpiWorld &world, Launcher launch,
                            ExecutionPath &path, const RoutingProblem &p,
                            const ReferenceResult &reference) {
  std::vector<IterationSummary> mine;
  RankTimeline timeline;
  std::optional<Failure> failure;
  Progress progress("moecomm-run", options.progress && world.rank == 0);
  const auto start = Clock::now();
  if (Error e = launch([&](moecommComm_t comm, int rank) {
        failure = rankLoop(
            comm, rank, options, path, p, reference,
            rank == 0 ? &progress : nullptr,
            [&](bool failed) { return mpiMaxInt(world, failed ? 1 : 0) != 0; },
            mine, timeline);
      }))
    failure = toFailure(std::move(e));
  const double wall =
      std::chrono::duration<double>(Clock::now() - start).count();
  progress.finish();

  // Gather every rank's summary on rank 0.
  std::string text = serializeRank(mine, failure);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(world.rank == 0 ? world.size : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0,
             MPI_COMM_WORLD);
  std::vector<int> offsets;
  std::string all;
  if (world.rank == 0) {
    offsets.resize(world.size);
    int total = 0;
    for (int r = 0; r < world.size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
              offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  RunSummary summary;
  summary.wallSeconds = wall;
  // Every rank takes part (a failed rank sends what it recorded): the
  // gather is collective.
  if (options.trace) {
    Expected<std::vector<RankTimeline>> all = gatherTimelines(world, timeline);
    if (!all && !failure)
      failure = toFailure(all.takeError());
    else if (all)
      summary.timelines = std::move(*all);
    else
      consumeError(all.takeError());
  }
  if (world.rank != 0)
    return failure ? Expected<RunSummary>(fromFailure(*failure))
                   : Expected<RunSummary>(std::move(summary));
  summary.ranks.resize(world.size);
  std::optional<Failure> first;
  for (int r = 0; r < world.size; ++r) {
    std::optional<Failure> f;
    deserializeRank(StringRef(all.data() + offsets[r], lengths[r]),
                    summary.ranks[r], f);
    if (f && !first)
      first = f;
  }
  if (first)
    return fromFailure(*first);
  return summary;
}

#endif // MOECOMM_RUN_HAVE_MPI

} // namespace

Expected<RunSummary> runOnBackend(const BackendOptions &options,
                                  const MpiWorld &world, ExecutionPath &path,
                                  const RoutingProblem &problem,
                                  const ReferenceResult &reference) {
  if (options.kind == BackendKind::Threads)
    return runInProcess(
        options,
        [&](RankBody body) {
          return runOnThreadGroup(problem.ranks, problem.ranksPerNode, body);
        },
        path, problem, reference);
  if (options.kind == BackendKind::Nccl && !world.initialized)
    return runInProcess(
        options, [](RankBody body) { return runOnNcclDevice(body); }, path,
        problem, reference);
#ifdef MOECOMM_RUN_HAVE_MPI
  return runMpi(
      options, world,
      [&](RankBody body) {
        return options.kind == BackendKind::Nccl
                   ? runOnNcclWorld(world, problem.ranksPerNode, body)
                   : runOnMpiWorld(world, problem.ranksPerNode, body);
      },
      path, problem, reference);
#else
  return inputError(kNoMpi);
#endif
}

} // namespace moecomm::run
