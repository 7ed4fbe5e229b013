//===- moecomm-run.cpp - run and verify an MoE layer's communication -----===//
//
// moecomm-run executes an MoE layer's dispatch -> identity experts -> combine
// (or a graph's SwiGLU experts, with weights it generates) on every rank of
// a backend (threads, MPI, or NCCL on GPUs), verifies every result against the
// single-process reference and reports traffic per link class against the
// inter-node lower bound. Interface: DESIGN.md §8 and docs/moecomm-run.md.
//
// Exit status: 0 verified, 1 a check failed, 2 invalid input or flags (one
// line on stderr), 3 a failure that is not the input's fault (I/O, transport,
// internal error; one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "DirectPath.h"
#ifdef MOECOMM_RUN_HAVE_COMPILER
#include "GraphPath.h"
#include "moecomm/Transforms/Passes.h"
#endif
#include "Dump.h"
#include "MoECommVersion.h"
#include "Report.h"
#include "Verify.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Workload/DataDir.h"
#include "moecomm/Workload/Gnuplot.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/MemoryEstimate.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/PlacementFile.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingFile.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/Timeline.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <unistd.h>

using namespace llvm;
using namespace moecomm::run;
using namespace moecomm::workload;
namespace ref = moecomm::ref;

namespace {

cl::OptionCategory runCat("moecomm-run options");
cl::OptionCategory genCat("generated routing (instead of --routing)");

// Input.
cl::opt<std::string> routingFile("routing",
                                 cl::desc("Routing file (moecomm-routing-v1 "
                                          "JSON, DESIGN.md §8); '-' = stdin"),
                                 cl::value_desc("file"), cl::cat(runCat));
cl::opt<std::string> routingDist(
    "routing-dist",
    cl::desc("Generate the routing: uniform | zipf:S | node-limited:M | "
             "trace:MODEL:DOMAIN:LAYER (default uniform)"),
    cl::value_desc("dist"), cl::cat(genCat));
cl::opt<std::string> configName(
    "config",
    cl::desc("Model config from examples/configs (sets experts, topk, hidden, "
             "groups), e.g. deepseek-v3, or a path to a .json"),
    cl::value_desc("name"), cl::cat(genCat));
cl::opt<std::string> configDir("config-dir",
                               cl::desc("Directory of model configs"),
                               cl::value_desc("dir"), cl::cat(genCat));
cl::opt<std::string> traceFile(
    "trace-file",
    cl::desc("Per-expert load trace (an input) for trace:... (default: the "
             "shipped examples/data/expert_load_olmoe_mixtral.json); not "
             "--trace, the timeline this run writes"),
    cl::value_desc("file"), cl::cat(genCat));
cl::opt<long long> ranksOpt("ranks",
                            cl::desc("W, ranks (default 4, or the "
                                     "MPI world size)"),
                            cl::cat(genCat));
cl::opt<long long> ranksPerNodeOpt(
    "ranks-per-node",
    cl::desc("G, ranks per node (default W/2 for even W: two nodes; else W)"),
    cl::cat(genCat));
cl::opt<long long> expertsOpt("experts",
                              cl::desc("E, routed experts (default 4*W)"),
                              cl::cat(genCat));
cl::opt<long long> topkOpt("topk", cl::desc("K, experts per token (default 2)"),
                           cl::cat(genCat));
cl::opt<long long> hiddenOpt("hidden", cl::desc("H, hidden size (default 128)"),
                             cl::cat(genCat));
cl::opt<std::string> tokensOpt(
    "tokens",
    cl::desc("Tokens per rank: N, or N0,N1,... one per rank (default 64)"),
    cl::value_desc("n[,n...]"), cl::cat(genCat));
cl::opt<long long> groupsOpt(
    "groups",
    cl::desc("Expert groups for node-limited:M (default: the config's "
             "n_group, else one per node)"),
    cl::cat(genCat));
cl::opt<unsigned long long> seedOpt("seed",
                                    cl::desc("Generator seed (default 1)"),
                                    cl::init(1), cl::cat(genCat));

// Execution.
cl::opt<std::string>
    strategyOpt("strategy",
                cl::desc("per_expert | flat | hierarchical | auto (default)"),
                cl::init("auto"), cl::cat(runCat));
cl::opt<std::string> backendOpt(
    "backend",
    cl::desc("threads (default: W threads here) | mpi (under mpirun -np W) | "
             "nccl (one GPU per process: --ranks 1 alone, or under mpirun "
             "-np W; compiled graphs with --target cuda)"),
    cl::init("threads"), cl::cat(runCat));
cl::opt<std::string> wireDtypeOpt(
    "wire-dtype",
    cl::desc("Override the routing's and the graph's wire dtype: bf16 | f32 "
             "| fp8 (= fp8_e4m3: bf16 in/out, FP8 with f32 1x128 scales on "
             "the wire) | fp8_e4m3_ue8m0 (1x128 E8M0 scales) | mxfp8 (1x32 "
             "E8M0 scales)"),
    cl::cat(runCat));
cl::opt<long long>
    capacityOpt("capacity",
                cl::desc("Max received rows per rank, 0 = none (overrides the "
                         "routing's and the graph's)"),
                cl::cat(runCat));
cl::opt<long long> alignOpt(
    "align",
    cl::desc("Expert segment alignment of the received rows: a power of two "
             "in [1, 65536] (default 1: unpadded); replaces a graph's own "
             "align(N)"),
    cl::cat(runCat));
cl::opt<std::string> placementFile(
    "placement", cl::value_desc("FILE"), cl::cat(runCat),
    cl::desc("Expert placement (EPLB's phy2log) of --direct's layouts"));
cl::opt<moecommReplicaChoice_t> replicaChoiceOpt(
    "replica-choice", cl::desc("How --placement's layouts pick a replica"),
    cl::values(clEnumValN(moecommReplicaLocality, "locality",
                          "the fewest inter-node copies (default)"),
               clEnumValN(moecommReplicaLoadOnly, "load_only",
                          "the least-loaded replica (EPLB's balancing)")),
    cl::init(moecommReplicaLocality), cl::cat(runCat));
cl::opt<long long> iterationsOpt(
    "iterations",
    cl::desc("Dispatch+combine N times on one communicator, a layout per "
             "iteration, verifying each"),
    cl::init(1), cl::cat(runCat));
cl::opt<std::string> apiOpt(
    "api",
    cl::desc("Runtime calls of the direct path: oneshot (default) | async "
             "(start/wait)"),
    cl::init("oneshot"), cl::cat(runCat));
#ifdef MOECOMM_RUN_HAVE_COMPILER
cl::opt<std::string> graphFile(
    cl::Positional,
    cl::desc("[graph.mlir] (default: the built-in layer graph, compiled by "
             "moecomm-pipeline and JIT-executed)"),
    cl::cat(runCat));
cl::opt<std::string>
    entryOpt("entry",
             cl::desc("Function of the graph to run (default moe_layer)"),
             cl::init("moe_layer"), cl::cat(runCat));
cl::opt<std::string> aotLibrary(
    "aot",
    cl::desc("Run the graph's ahead-of-time library (moecomm_add_aot_graph, "
             "the moecomm-aot tool) instead of JIT-compiling it"),
    cl::value_desc("lib.so"), cl::cat(runCat));
cl::opt<long long> chunksOpt(
    "chunks",
    cl::desc("moecomm-pipeline chunks: token chunks per MoE layer for the "
             "overlap schedule, 1 to 64 (default 1)"),
    cl::init(1), cl::cat(runCat));
cl::opt<std::string>
    presetOpt("preset",
              cl::desc("Link model of the static auto strategy: h100-dgx, "
                       "h200-dgx (default), gb200-nvl72"),
              cl::init("h200-dgx"), cl::cat(runCat));
cl::opt<bool> directOpt(
    "direct",
    cl::desc("Call the runtime directly instead of running a compiled graph"),
    cl::cat(runCat));
cl::opt<mlir::moecomm::Target> targetOpt(
    "target", cl::desc("Where the graph runs (default host; cuda with "
                       "--backend nccl)"),
    cl::values(clEnumValN(mlir::moecomm::Target::host, "host",
                          "host buffers (moecommCompiledBind)"),
               clEnumValN(mlir::moecomm::Target::cuda, "cuda",
                          "device buffers: compiled with target=cuda, run on "
                          "the communicator's device (the GPU under --backend "
                          "nccl, else the host device)")),
    cl::init(mlir::moecomm::Target::host), cl::cat(runCat));
cl::opt<unsigned long long> weightSeedOpt(
    "weight-seed",
    cl::desc("Seed of the expert weights of a graph that takes them "
             "(w_gate, w_up, w_down; default 1)"),
    cl::init(1), cl::cat(runCat));
#else
cl::opt<bool> directOpt(
    "direct",
    cl::desc("Call the runtime directly (the only execution path in this "
             "build: it has no compiler)"),
    cl::cat(runCat));
// Taken only to say why it cannot run (see checkPathFlags).
cl::opt<std::string> graphFile(cl::Positional, cl::Hidden, cl::cat(runCat));
#endif
cl::opt<bool> skipChecks(
    "skip-input-checks",
    cl::desc("Hand the routing to the runtime without the tool's id/duplicate/"
             "E%W checks (to test the runtime's own validation)"),
    cl::cat(runCat));

// Output.
cl::opt<std::string> jsonFile("json",
                              cl::desc("Write the JSON report ('-' = stdout, "
                                       "replacing the text report)"),
                              cl::value_desc("file"), cl::cat(runCat));
cl::opt<std::string> dumpDir(
    "dump",
    cl::desc("Write rank<r>.{dispatch,src,tokens_per_expert,combine}.npy"),
    cl::value_desc("dir"), cl::cat(runCat));
cl::opt<std::string>
    saveRouting("save-routing",
                cl::desc("Write the routing used (moecomm-routing-v1)"),
                cl::value_desc("file"), cl::cat(runCat));
cl::opt<std::string> timelineFile(
    "trace",
    cl::desc("Record every rank's runtime steps (layout, pack, exchange "
             "stages, unpack, waits) and write them as Chrome trace-event "
             "JSON (Perfetto) to FILE, and a PNG timeline to FILE with .png "
             "(gnuplot); an output, unlike --trace-file"),
    cl::value_desc("file.json"), cl::cat(runCat));
cl::opt<std::string> timelinePng(
    "trace-png",
    cl::desc("With --trace: the PNG timeline's path (default: --trace's "
             "FILE with .png)"),
    cl::value_desc("file.png"), cl::cat(runCat));
cl::opt<bool> quiet("quiet",
                    cl::desc("No report and no progress (errors and "
                             "--json only)"),
                    cl::cat(runCat));
cl::opt<bool> listConfigs("list-configs",
                          cl::desc("List the model configs and exit"),
                          cl::cat(genCat));

/// Prints `e` as one line and returns its exit status (2 bad input, 3 other).
int report(Error e, bool print) {
  return reportError("moecomm-run", std::move(e), print);
}

Expected<moecommStrategy_t> parseStrategy(StringRef s) {
  if (std::optional<moecommStrategy_t> strategy = parseStrategyName(s))
    return *strategy;
  return inputError(formatv("unknown --strategy '{0}' (expected per_expert, "
                            "flat, hierarchical or auto)",
                            s));
}

Expected<std::vector<int64_t>> parseTokens(StringRef s) {
  std::vector<int64_t> out;
  SmallVector<StringRef, 16> parts;
  s.split(parts, ',');
  for (StringRef part : parts) {
    int64_t v;
    if (part.trim().getAsInteger(10, v) || v < 0)
      return inputError(formatv("bad --tokens '{0}': expected N or N0,N1,... "
                                "with every N >= 0",
                                s));
    out.push_back(v);
  }
  return out;
}

/// The files a generated routing was built from (empty: none).
struct GeneratorInputs {
  std::string config, trace;
};

/// Builds the routing problem from the flags (file or generator); the model
/// config and trace files it read land in `inputs`. `defaultRanks`: W
/// without --ranks.
Expected<RoutingProblem> buildProblem(const char *argv0, int defaultRanks,
                                      GeneratorInputs &inputs) {
  const bool fromFile = routingFile.getNumOccurrences() > 0;
  if (fromFile) {
    if (routingDist.getNumOccurrences())
      return inputError("--routing and --routing-dist are exclusive");
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &configName, &ranksOpt, &ranksPerNodeOpt, &expertsOpt, &topkOpt,
             &hiddenOpt, &tokensOpt, &groupsOpt, &seedOpt})
      if (o->getNumOccurrences())
        return inputError(formatv("--{0} only applies to generated routing, "
                                  "not to --routing {1}",
                                  o->ArgStr, routingFile));
    Expected<RoutingProblem> p = loadRoutingFile(routingFile);
    if (!p)
      return p.takeError();
    return p;
  }

  GenerateOptions g;
  Expected<RoutingDist> dist =
      parseRoutingDist(routingDist.getNumOccurrences() ? StringRef(routingDist)
                                                       : StringRef("uniform"));
  if (!dist)
    return dist.takeError();
  g.dist = *dist;
  std::optional<ModelConfig> config;
  if (configName.getNumOccurrences()) {
    std::vector<std::string> dirs = configDir.getNumOccurrences()
                                        ? std::vector<std::string>{configDir}
                                        : dataDirs(argv0, "configs");
    Expected<ModelConfig> c = loadModelConfig(configName, dirs);
    if (!c)
      return c.takeError();
    config = *c;
    inputs.config = c->path;
  }
  auto checkRange = [](const cl::opt<long long> &o, long long lo,
                       long long hi) -> Error {
    if (o.getNumOccurrences() && (o < lo || o > hi))
      return inputError(formatv("--{0} must be in [{1}, {2}], got {3}",
                                o.ArgStr, lo, hi, (long long)o));
    return Error::success();
  };
  for (auto [o, lo, hi] : std::initializer_list<
           std::tuple<const cl::opt<long long> *, long long, long long>>{
           {&ranksOpt, 1, 1 << 16},
           {&ranksPerNodeOpt, 1, 1 << 16},
           {&expertsOpt, 1, kMaxExperts},
           {&topkOpt, 1, kMaxTopk},
           {&hiddenOpt, 1, kMaxHidden},
           {&groupsOpt, 1, 1 << 24}})
    if (Error e = checkRange(*o, lo, hi))
      return std::move(e);

  g.ranks = ranksOpt.getNumOccurrences() ? static_cast<int>(ranksOpt)
                                         : defaultRanks;
  g.ranksPerNode = ranksPerNodeOpt.getNumOccurrences()
                       ? static_cast<int>(ranksPerNodeOpt)
                       : (g.ranks % 2 == 0 ? g.ranks / 2 : g.ranks);
  g.numExperts = expertsOpt.getNumOccurrences() ? expertsOpt
                 : config                       ? config->numExperts
                                                : 4 * g.ranks;
  g.topk = topkOpt.getNumOccurrences() ? static_cast<int>(topkOpt)
           : config                    ? config->topk
                                       : 2;
  g.hidden = hiddenOpt.getNumOccurrences() ? hiddenOpt
             : config                      ? config->hidden
                                           : 128;
  g.groups = groupsOpt.getNumOccurrences()     ? static_cast<int>(groupsOpt)
             : config && config->numGroups > 1 ? config->numGroups
                                               : 0;
  // Named as given: E from a config is not --experts.
  g.placed = !placementFile.empty();
  if (config && !expertsOpt.getNumOccurrences() && !g.placed &&
      g.numExperts % g.ranks != 0)
    return inputError(formatv("config {0}: moe.num_experts ({1}) must be a "
                              "multiple of the ranks ({2}): E % W = {3}; "
                              "choose --ranks or --experts",
                              config->name, g.numExperts, g.ranks,
                              g.numExperts % g.ranks));
  g.seed = seedOpt;
  if (tokensOpt.getNumOccurrences()) {
    Expected<std::vector<int64_t>> t = parseTokens(tokensOpt);
    if (!t)
      return t.takeError();
    g.tokens = *t;
  }
  // The per-rank range first: a value out of it is wrong whatever the
  // memory (generateRouting checks it again).
  for (int64_t t : g.tokens)
    if (t < 0 || t > kMaxTokensPerRank)
      return inputError(formatv("--tokens value {0} must be in [0, {1}]", t,
                                kMaxTokensPerRank));
  if (g.dist.kind == RoutingDist::Trace) {
    Expected<std::string> file = findTraceFile(argv0, traceFile);
    if (!file)
      return file.takeError();
    g.traceFile = *file;
    inputs.trace = *file;
  }
  // Refused before the routing is even generated (moecomm-bench's counting
  // moves no payload and has no such limit).
  const int64_t totalTokens =
      g.tokens.size() == 1
          ? g.tokens[0] * g.ranks
          : std::accumulate(g.tokens.begin(), g.tokens.end(), int64_t(0));
  if (Error e = checkFitsInMemory(totalTokens, g.hidden, g.topk, g.numExperts))
    return std::move(e);
  Expected<RoutingProblem> p = generateRouting(g);
  if (p && config)
    p->origin +=
        formatv(", config {0} ({1})", config->name, config->model).str();
  return p;
}

/// Applies the run flags that override the routing (dtype, capacity, align).
Error applyOverrides(RoutingProblem &p) {
  if (wireDtypeOpt.getNumOccurrences()) {
    std::optional<PayloadType> t = parsePayloadType(wireDtypeOpt);
    if (!t)
      return inputError(formatv("unknown --wire-dtype '{0}' (expected bf16, "
                                "f32, fp8, fp8_e4m3_ue8m0 or mxfp8)",
                                wireDtypeOpt));
    p.dtype = *t;
  }
  if (capacityOpt.getNumOccurrences()) {
    if (capacityOpt < 0)
      return inputError(formatv("--capacity must be >= 0 (0: none), got {0}",
                                (long long)capacityOpt));
    p.capacity = capacityOpt;
  }
  if (alignOpt.getNumOccurrences()) {
    if (!moecomm::isValidAlign(alignOpt))
      return inputError(formatv("--align must be a power of two in [1, {0}], "
                                "got {1}",
                                moecomm::kMaxAlign, (long long)alignOpt));
    p.align = alignOpt;
  }
  return Error::success();
}

/// --placement and --replica-choice: the expert placement of the direct
/// path's layouts, checked against the routing's logical experts.
Error applyPlacement(RoutingProblem &p) {
  if (placementFile.empty()) {
    if (replicaChoiceOpt.getNumOccurrences())
      return inputError("--replica-choice needs --placement FILE");
    return Error::success();
  }
#ifdef MOECOMM_RUN_HAVE_COMPILER
  // A graph's placement is its topologies' (GraphPath.cpp).
  if (!directOpt)
    return inputError("--placement needs --direct (with a generated routing "
                      "or a routing file); a graph's placement is its "
                      "topology's (slots, placement)");
#endif
  p.replicaChoice = replicaChoiceOpt;
  Expected<moecomm::ExpertPlacement> placement = loadPlacementFile(placementFile);
  if (!placement)
    return placement.takeError();
  if (Error e = checkPlacedRouting(*placement, placementFile, p.numExperts,
                                   p.ranks))
    return e;
  p.slotExperts = std::move(placement->slotExperts);
  return Error::success();
}

/// What the prepare phase hands to the execute phase.
struct RunState {
  BackendKind backend = BackendKind::Threads;
  moecommStrategy_t strategy = moecommAuto;
  DirectApi api = DirectApi::OneShot;
#ifdef MOECOMM_RUN_HAVE_COMPILER
  /// The compiled graph (null: the runtime-direct path).
  std::shared_ptr<CompiledGraph> graph;
#endif
  RoutingProblem problem;
  /// The graph's experts (identity for --direct and graphs without weights).
  ExpertSpec experts;
  ReferenceResult reference;
  /// False only with --skip-input-checks and a routing the reference rejects:
  /// the runtime must reject it too.
  bool valid = true;
  /// A hash of the routing this rank prepared, compared across MPI ranks;
  /// inputHash: before a graph's wire dtype and capacity applied.
  uint64_t routingHash = 0;
  uint64_t inputHash = 0;
  /// --trace: the PNG's path and the gnuplot program (found before the run).
  std::string timelinePng, gnuplot;
};

/// Flags that cannot apply to the chosen path (or to this build) are errors,
/// never ignored.
#ifdef MOECOMM_RUN_HAVE_COMPILER
Error checkPathFlags(BackendKind backend) {
  if (backend == BackendKind::Nccl && directOpt)
    return inputError("--backend nccl runs compiled graphs (target cuda) on "
                      "GPUs; --direct calls the runtime's host API: use "
                      "--backend threads or mpi");
  if (backend == BackendKind::Nccl && targetOpt.getNumOccurrences() &&
      targetOpt != mlir::moecomm::Target::cuda)
    return inputError("--backend nccl runs graphs compiled for --target cuda "
                      "(device buffers on the GPU), not --target host");
  if (directOpt && targetOpt.getNumOccurrences())
    return inputError("--target says where a compiled graph runs; --direct "
                      "compiles nothing");
  if (directOpt &&
      (graphFile.getNumOccurrences() || aotLibrary.getNumOccurrences()))
    return inputError("--direct calls the runtime directly; it takes no graph "
                      "or --aot");
  if (aotLibrary.getNumOccurrences() && graphFile.empty())
    return inputError("--aot needs the graph .mlir it was built from (for the "
                      "entry's signature)");
  if (chunksOpt < 1 || chunksOpt > mlir::moecomm::kMaxOverlapChunks)
    return inputError(formatv("--chunks must be in [1, {0}], got {1}",
                              mlir::moecomm::kMaxOverlapChunks,
                              (long long)chunksOpt));
  const cl::Option *compileFlags[] = {&chunksOpt, &presetOpt};
  for (const cl::Option *o : compileFlags) {
    if (!o->getNumOccurrences())
      continue;
    if (directOpt)
      return inputError(formatv("--{0} is a compile option; --direct compiles "
                                "nothing",
                                o->ArgStr));
    if (aotLibrary.getNumOccurrences())
      return inputError(formatv("--{0} is a compile option; an --aot library "
                                "keeps the one it was built with (moecomm-aot "
                                "--pipeline)",
                                o->ArgStr));
  }
  if (aotLibrary.getNumOccurrences() && strategyOpt.getNumOccurrences())
    return inputError("--strategy is compiled into an --aot library; rebuild "
                      "it with moecomm-aot --pipeline strategy=...");
  if (directOpt && entryOpt.getNumOccurrences())
    return inputError("--entry names a graph function; --direct runs none");
  if (!directOpt && apiOpt.getNumOccurrences())
    return inputError("--api selects --direct's runtime calls; a graph's "
                      "calls are compiled in");
  return Error::success();
}
#else
Error checkPathFlags(BackendKind backend) {
  if (backend == BackendKind::Nccl)
    return inputError("--backend nccl runs compiled graphs: this moecomm-run "
                      "was built without the compiler "
                      "(MOECOMM_ENABLE_COMPILER=OFF)");
  if (!graphFile.empty())
    return inputError(formatv("cannot run {0}: this moecomm-run was built "
                              "without the compiler (MOECOMM_ENABLE_COMPILER="
                              "OFF) and only calls the runtime directly",
                              graphFile));
  return Error::success();
}
#endif

/// Local work before any collective: flags, routing, checks, reference.
/// Returns the exit status (0 = go on). Errors are printed by rank 0 only:
/// they are the same on every rank (same flags and files), or rank-0-only
/// (--save-routing, --dump directory creation).
int prepare(const char *argv0, const MpiWorld &world, bool mpi,
            RunState &state) {
  const bool printer = world.rank == 0;
  if (Error e = checkPathsNotEmpty({&routingFile, &configName, &configDir,
                                    &traceFile, &graphFile,
#ifdef MOECOMM_RUN_HAVE_COMPILER
                                    &aotLibrary,
#endif
                                    &placementFile, &jsonFile, &dumpDir,
                                    &saveRouting,
                                    &timelineFile, &timelinePng}))
    return report(std::move(e), printer);
  if (timelinePng.getNumOccurrences() && timelineFile.empty())
    return report(inputError("--trace-png needs --trace FILE (the trace-event "
                             "JSON)"),
                  printer);
  if (timelineFile == "-" || timelinePng == "-")
    return report(inputError("--trace and --trace-png write files, not stdout "
                             "('-')"),
                  printer);
  if (!timelineFile.empty())
    state.timelinePng = timelinePng.getNumOccurrences()
                            ? std::string(timelinePng)
                            : timelinePngPath(timelineFile);
  if (Error e = checkPathFlags(state.backend))
    return report(std::move(e), printer);
  Expected<moecommStrategy_t> strategy = parseStrategy(strategyOpt);
  if (!strategy)
    return report(strategy.takeError(), printer);
  state.strategy = *strategy;
  if (apiOpt == "oneshot")
    state.api = DirectApi::OneShot;
  else if (apiOpt == "async")
    state.api = DirectApi::Async;
  else
    return report(inputError(formatv("unknown --api '{0}' (expected oneshot or "
                                     "async)",
                                     apiOpt)),
                  printer);
  if (iterationsOpt < 1 || iterationsOpt > 1000000)
    return report(inputError(formatv("--iterations must be in [1, 1000000], "
                                     "got {0}",
                                     (long long)iterationsOpt)),
                  printer);

  // One process per rank under mpirun; --backend nccl alone drives this
  // process's GPU, one rank.
  const bool ncclAlone = state.backend == BackendKind::Nccl && !mpi;
  GeneratorInputs generatorInputs;
  Expected<RoutingProblem> problem = buildProblem(
      argv0, mpi ? world.size : ncclAlone ? 1 : 4, generatorInputs);
  if (!problem)
    return report(problem.takeError(), printer);
  state.problem = std::move(*problem);
  RoutingProblem &p = state.problem;
  if (Error e = applyOverrides(p))
    return report(std::move(e), printer);
  if (Error e = applyPlacement(p))
    return report(std::move(e), printer);

  // Shape-level rules always hold before anything runs; the id / duplicate /
  // E % W rules are left to the runtime with --skip-input-checks.
  const ref::Problem refProblem = toReferenceProblem(p);
  if (!skipChecks) {
    if (Error e = validateRouting(p))
      return report(std::move(e), printer);
    std::string why = ref::validate(refProblem);
    if (!why.empty()) // the tool's checks and the runtime's rules disagree
      return report(inputError(why), printer);
  } else if (p.ranks < 1 || p.ranksPerNode < 1 || p.ranks % p.ranksPerNode) {
    return report(validateRouting(p), printer);
  }
  if (mpi && p.ranks != world.size)
    return report(inputError(formatv("rank count mismatch: the routing has {0} "
                                     "ranks but mpirun started {1} processes "
                                     "(use mpirun -np {0})",
                                     p.ranks, world.size)),
                  printer);
  if (ncclAlone && p.ranks != 1)
    return report(inputError(formatv("--backend nccl without mpirun runs one "
                                     "rank on this process's GPU, but the "
                                     "routing has {0} ranks: start one process "
                                     "per GPU with mpirun -np {0}",
                                     p.ranks)),
                  printer);

  if (Error e = checkFitsInMemory(p.totalTokens(), p.hidden, p.topk,
                                  p.numExperts))
    return report(std::move(e), printer);
  if (!mpi && p.ranks > kMaxThreadRanks)
    return report(inputError(formatv("--backend threads runs at most {0} ranks "
                                     "in one process, the routing has {1}; use "
                                     "--backend mpi under mpirun",
                                     kMaxThreadRanks, p.ranks)),
                  printer);

  // --dump writes rank<r>.*.npy for the ranks r of this run.
  auto dumpWrites = [ranks = p.ranks](StringRef name) {
    StringRef rank = name.drop_front(4).split('.').first;
    unsigned r;
    return isDumpFileName(name) && !rank.getAsInteger(10, r) &&
           r < static_cast<unsigned>(ranks) && std::to_string(r) == rank;
  };
  // The PNG's gnuplot data and script are written next to it: outputs too.
  const std::string pngData =
      state.timelinePng.empty() ? "" : state.timelinePng + ".dat";
  const std::string pngScript =
      state.timelinePng.empty() ? "" : state.timelinePng + ".gp";
  if (Error e = checkDistinctOutputs({{"--save-routing", saveRouting},
                                      {"--json", jsonFile},
                                      {"--dump", dumpDir, dumpWrites},
                                      {"--trace", timelineFile},
                                      {"--trace-png", state.timelinePng},
                                      {"--trace-png", pngData},
                                      {"--trace-png", pngScript}}))
    return report(std::move(e), printer);
  // Before anything is written (and on every MPI rank, before any rank
  // writes): an output must not replace a file this run reads, some of
  // which (the graph) are read only after the outputs are opened.
  if (Error e = checkOutputsSpareInputs(
          {{"routing file", routingFile},
           {"placement file", placementFile},
           {"graph", graphFile},
#ifdef MOECOMM_RUN_HAVE_COMPILER
           {"--aot library", aotLibrary},
#endif
           {"model config", generatorInputs.config},
           {"expert-load trace", generatorInputs.trace}},
          {{"--save-routing", saveRouting},
           {"--json", jsonFile},
           {"--dump", dumpDir, isDumpFileName},
           {"--trace", timelineFile},
           {"--trace-png", state.timelinePng},
           {"--trace-png", pngData},
           {"--trace-png", pngScript}}))
    return report(std::move(e), printer);
  if (printer && !saveRouting.empty())
    if (Error e = writeOutputFile(
            "--save-routing", saveRouting, [&](raw_ostream &os) {
              os << formatv("{0:2}", routingToJson(p)) << "\n";
            }))
      return report(std::move(e), printer);
  // Found now, not after the run.
  if (printer && !jsonFile.empty() && jsonFile != "-")
    if (Error e = checkOutputFile("--json", jsonFile))
      return report(std::move(e), printer);
  if (printer && !timelineFile.empty()) {
    Expected<std::string> gnuplot = findGnuplot("--trace", "");
    if (!gnuplot)
      return report(gnuplot.takeError(), printer);
    state.gnuplot = *gnuplot;
    if (Error e = checkOutputFile("--trace", timelineFile))
      return report(std::move(e), printer);
    if (Error e = checkOutputFile("--trace-png", state.timelinePng))
      return report(std::move(e), printer);
  }
  // Every rank writes its own dump files, so every rank checks the
  // directory (under MPI it may be another one on another host), before
  // the run rather than after it.
  if (!dumpDir.empty())
    if (Error e = prepareDumpDir(dumpDir))
      return report(std::move(e), printer);

  // The routing as the files and flags give it, before a graph's declared
  // wire dtype and capacity apply: what tells the two causes of a mismatch
  // between MPI ranks apart.
  if (mpi)
    state.inputHash = xxh3_64bits(formatv("{0}", routingToJson(p)).str());
#ifdef MOECOMM_RUN_HAVE_COMPILER
  if (!directOpt) {
    GraphOptions go;
    go.file = graphFile;
    go.aotLibrary = aotLibrary;
    go.entry = entryOpt;
    go.strategy = state.strategy;
    go.chunks = chunksOpt;
    go.preset = presetOpt;
    go.wireFromGraph = !wireDtypeOpt.getNumOccurrences();
    go.capacityFromGraph = !capacityOpt.getNumOccurrences();
    go.weightSeed = weightSeedOpt;
    go.gpu = state.backend == BackendKind::Nccl;
    go.target = go.gpu ? mlir::moecomm::Target::cuda : targetOpt;
    Expected<std::shared_ptr<CompiledGraph>> graph = compileGraph(go, p);
    if (!graph)
      return report(graph.takeError(), printer);
    state.graph = std::move(*graph);
    state.experts = graphExperts(*state.graph);
    // The pipeline's warnings (moecomm-device-buffers': host code over
    // device buffers) once per run: every MPI rank compiled the graph.
    if (printer && !quiet)
      for (const std::string &warning : graphWarnings(*state.graph))
        writeStderr(formatv("moecomm-run: warning: {0}\n", warning).str());
    // All ranks' experts live in this process under --backend threads; the
    // reference adds one expert's weights. On the host device each rank's
    // weights are copied into its device buffers, host memory too.
    if (state.experts.ffn()) {
      const int64_t experts = mpi ? p.localExperts() : p.numExperts;
      const double oneExpert = expertWeightBytes(*state.graph, p);
      const double copies =
          go.target == mlir::moecomm::Target::cuda && !go.gpu ? 2 : 1;
      const double bytes = static_cast<double>(experts) * oneExpert;
      if (Error e = checkMemory(
              copies * bytes + oneExpert +
                  estimateRunBytes(p.totalTokens(), p.hidden, p.topk,
                                   p.numExperts),
              formatv("the expert weights ({0} experts x 3 x {1} x {2} f32 = "
                      "{3:F0} bytes in this process) and the run",
                      experts, p.hidden,
                      state.experts.intermediate, bytes)))
        return report(std::move(e), printer);
    }
  }
  if (weightSeedOpt.getNumOccurrences() && !state.experts.ffn())
    return report(inputError("--weight-seed applies only to a graph whose "
                             "entry takes expert weights (w_gate, w_up, "
                             "w_down)"),
                  printer);
#endif

  // Without --skip-input-checks the routing was validated above.
  state.valid = !skipChecks || ref::validate(refProblem).empty();
  if (state.valid) {
    // The single-threaded reference can take seconds on big layers.
    double work = 0;
    for (const std::vector<int64_t> &ids : p.topkIdx)
      work += static_cast<double>(ids.size()) * static_cast<double>(p.hidden);
    if (printer && !quiet && work > 5e7)
      writeStderr(formatv("moecomm-run: computing the reference ({0} tokens "
                          "x {1} slots x {2} hidden)...\n",
                          p.totalTokens(), p.topk, p.hidden)
                      .str());
    // One process per rank checks only its own tokens.
    state.reference = computeReference(p, state.experts, mpi ? world.rank : -1);
  } else
    state.reference.problem = refProblem;
  if (mpi)
    state.routingHash = xxh3_64bits(formatv("{0}", routingToJson(p)).str());
  return 0;
}

/// Runs on the backend and reports. Collective over the MPI ranks.
int execute(const MpiWorld &world, RunState &state) {
  const bool printer = world.rank == 0;
  const RoutingProblem &p = state.problem;
  PathOptions pathOptions;
  pathOptions.strategy = state.strategy;
  std::unique_ptr<ExecutionPath> selected;
#ifdef MOECOMM_RUN_HAVE_COMPILER
  if (state.graph)
    selected = std::make_unique<GraphPath>(state.graph, state.reference);
#endif
  if (!selected)
    selected = std::make_unique<DirectPath>(pathOptions, state.api);
  ExecutionPath &path = *selected;
  BackendOptions bo;
  bo.kind = state.backend;
  bo.iterations = static_cast<int>(iterationsOpt);
  bo.dumpDir = dumpDir;
  bo.progress = !quiet;
  bo.trace = !timelineFile.empty();
  Expected<RunSummary> run = runOnBackend(bo, world, path, p, state.reference);
  if (!run)
    return report(run.takeError(), printer);
  if (!printer)
    return 0;
  if (!state.valid) {
    printErrorLine("moecomm-run",
                   "the runtime accepted an invalid routing (" +
                       ref::validate(state.reference.problem) + ")");
    return 1;
  }

  RunInfo info;
  info.path = path.name();
  info.api = apiOpt;
#ifdef MOECOMM_RUN_HAVE_COMPILER
  if (state.graph) {
    info.api = graphLabel(*state.graph);
    info.target = state.backend == BackendKind::Nccl ||
                          targetOpt == mlir::moecomm::Target::cuda
                      ? "cuda"
                      : "host";
  }
  info.strategyFromLibrary = aotLibrary.getNumOccurrences() > 0;
#endif
  info.backend = bo.kind;
  info.requestedStrategy = state.strategy;
  info.iterations = bo.iterations;
  info.chunks = path.chunks();
  info.observesDispatch = path.observesDispatch();
  info.experts = state.experts;
  info.layouts = path.usesLayouts();
  RunReport result =
      analyzeRun(p, state.reference, *run, path.passes(), info.layouts);
  if (bo.trace) {
    TimelineOutput to;
    to.jsonPath = timelineFile;
    to.pngPath = state.timelinePng;
    to.gnuplot = state.gnuplot;
    const moecommStrategy_t inEffect = run->ranks.empty() ||
                                               run->ranks[0].empty()
                                           ? state.strategy
                                           : run->ranks[0][0].strategy;
    to.title = formatv("moecomm-run {0} ({1}): {2}, {3} backend, {4} ranks "
                       "({5} per node), {6} iteration(s)",
                       path.name(), info.api, moecomm::strategyName(inEffect),
                       backendName(bo.kind), p.ranks, p.ranksPerNode,
                       bo.iterations)
                   .str();
    if (Error e = writeTimeline(run->timelines, to))
      return report(std::move(e), printer);
    int64_t dropped = 0;
    for (const RankTimeline &rt : run->timelines)
      dropped += rt.dropped;
    if (dropped > 0) // the JSON says so too (otherData.dropped_events)
      errs() << formatv("moecomm-run: warning: the timeline is truncated: "
                        "{0} event(s) dropped (at most {1} per rank are "
                        "kept)\n",
                        dropped, MOECOMM_TRACE_MAX_EVENTS);
  }
  const bool jsonToStdout = jsonFile == "-";
  if (!quiet && !jsonToStdout)
    printReport(outs(), p, info, result);
  if (!jsonFile.empty()) {
    json::Value doc = reportJson(p, info, result);
    if (Error e = writeOutputFile("--json", jsonFile, [&](raw_ostream &os) {
          os << formatv("{0:2}", doc) << "\n";
        }))
      return report(std::move(e), printer);
  }
  return finishStdout("moecomm-run", result.verified ? 0 : 1);
}

} // namespace

int main(int argc, char **argv) {
  const bool printer = isReportingProcess();
  cl::HideUnrelatedOptions({&runCat, &genCat});
  cl::AddExtraVersionPrinter(moecomm::printMoECommVersion);
  std::string parseError;
  if (!parseCommandLine(
          argc, argv,
          "moecomm-run: run an MoE layer's dispatch and combine on a backend, "
          "verify it against the reference, report traffic per link class\n",
          parseError))
    return report(inputError(parseError), printer);
  if (listConfigs) {
    if (Error e = checkPathsNotEmpty({&configDir}))
      return report(std::move(e), printer);
    if (configDir.getNumOccurrences() && !sys::fs::is_directory(configDir))
      return report(inputError(formatv("--config-dir {0}: not a directory",
                                       configDir)),
                    printer);
    std::vector<std::string> dirs = configDir.getNumOccurrences()
                                        ? std::vector<std::string>{configDir}
                                        : dataDirs(argv[0], "configs");
    for (const std::string &name : listModelConfigs(dirs)) {
      Expected<ModelConfig> c = loadModelConfig(name, dirs);
      if (!c) {
        outs() << name << ": " << toString(c.takeError()) << "\n";
        continue;
      }
      outs() << formatv("{0,-18} {1,-18} H={2} E={3} K={4} groups={5} "
                        "topk_groups={6} shared={7}\n",
                        c->name, c->model, c->hidden, c->numExperts, c->topk,
                        c->numGroups, c->topkGroups, c->sharedExperts);
    }
    return 0;
  }

  RunState state;
  if (backendOpt == "threads")
    state.backend = BackendKind::Threads;
  else if (backendOpt == "mpi")
    state.backend = BackendKind::Mpi;
  else if (backendOpt == "nccl")
    state.backend = BackendKind::Nccl;
  else
    return report(
        inputError(formatv("unknown --backend '{0}' (expected threads, mpi "
                           "or nccl)",
                           backendOpt)),
        printer);
  // One process per rank: mpi, and nccl under mpirun (one GPU each).
  const bool mpi = state.backend == BackendKind::Mpi ||
                   (state.backend == BackendKind::Nccl && launchedByMpirun());
  MpiWorld world;
  if (mpi && !haveMpi())
    return report(inputError(state.backend == BackendKind::Mpi
                                 ? kNoMpi
                                 : "--backend nccl under mpirun is not "
                                   "available: moecomm-run was built without "
                                   "MPI (MOECOMM_ENABLE_MPI=OFF); run one "
                                   "rank without mpirun"),
                  printer);
  if (mpi) {
    Expected<MpiWorld> w = initMpi(argc, argv);
    if (!w)
      return report(w.takeError(), printer);
    world = *w;
  }
  // Ranks that run different flags or inputs would wait on each other
  // forever (e.g. different --iterations) or check wrong results, so they
  // must agree first: on the command line, then on the routing each
  // prepared (files may differ between hosts).
  std::string commandLine;
  for (int i = 1; i < argc; ++i)
    commandLine.append(argv[i]).push_back('\0');
  if (!mpiSameOnEveryRank(world, xxh3_64bits(commandLine))) {
    int code = report(inputError("the MPI ranks were started with different "
                                 "command lines; give every rank the same "
                                 "flags"),
                      printer);
    finalizeMpi(world);
    return code;
  }
  // Every MPI rank makes the same agreements, whatever failed where.
  const int prepared = prepare(argv[0], world, mpi, state);
  int code = mpiMaxInt(world, prepared);
  if (code != 0 && prepared == 0 && printer)
    printErrorLine("moecomm-run",
                   formatv("another MPI rank failed before the run (exit "
                           "status {0}) with the same flags: its files differ "
                           "from rank 0's; run it alone to see why",
                           code)
                       .str());
  if (code == 0 && !mpiSameOnEveryRank(world, state.inputHash))
    code = report(inputError("the MPI ranks prepared different routings from "
                             "the same flags (routing, trace or model config "
                             "files differ between hosts)"),
                  printer);
  if (code == 0 && !mpiSameOnEveryRank(world, state.routingHash))
    code = report(inputError("the MPI ranks' graphs declare different wire "
                             "dtypes or capacities (the graph files differ "
                             "between hosts)"),
                  printer);
  if (code == 0)
    code = execute(world, state);
  code = mpiMaxInt(world, code);
  finalizeMpi(world);
  return code;
}
