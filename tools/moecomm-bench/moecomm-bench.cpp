//===- moecomm-bench.cpp - traffic, modelled and measured time of MoE EP --===//
//
// moecomm-bench sweeps model configs x clusters (nodes x ranks per node) x
// routing x wire dtype x strategy and reports, per cell, the exact bytes and
// messages per link class, the inter-node lower bound, the modelled time per
// stage on H100/H200 DGX and GB200 NVL72 links, what the runtime's `auto`
// picks, and - where the payload fits here - the measured time on the CPU
// backends or the GPU (--backend nccl) as a ratio to a baseline all-to-all
// run in the same process; on the GPU also DeepEP's algorithm bandwidth
// (GB/s per rank, Cells.h).
// `--routing FILE` measures one routing file's group instead of the sweep;
// `--link-rate R` adds, for runs on the emulated cluster, each cell's
// link-limited time and `x link` (LinkLimit.h); `--placements` adds the
// replicated-experts rows (Placements.h: EPLB placements, both replica
// choices, counted).
// docs/BENCHMARKS.md explains every number and how to regenerate the plots.
//
// Exit status: 0 all checks passed, 1 a check failed (listed), 2 invalid flags
// or configs (one line on stderr), 3 a failure that is not the input's fault
// (runtime, MPI, I/O, gnuplot; one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "Cells.h"
#include "Count.h"
#include "LinkLimit.h"
#include "Measure.h"
#include "MoECommVersion.h"
#include "Output.h"
#include "Placements.h"
#include "Plots.h"
#include "Sweep.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Workload/DataDir.h"
#include "moecomm/Workload/ExpertLoad.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/MemoryEstimate.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/Progress.h"
#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/Workload/RoutingFile.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <unistd.h>

using namespace llvm;
using namespace moecomm;
using namespace moecomm::bench;

namespace {

cl::OptionCategory sweepCat("sweep (any of these replaces the default plan "
                            "with one cross product)");
cl::OptionCategory modelCat("model, measurement and output");

cl::opt<std::string> configOpt(
    "config",
    cl::desc("Model configs from examples/configs, comma-separated (default: "
             "all)"),
    cl::value_desc("name,..."), cl::cat(sweepCat));
cl::opt<std::string> topologiesOpt(
    "topologies",
    cl::desc(
        "Clusters NODESxRANKS_PER_NODE, comma-separated (default 2x4,8x8)"),
    cl::value_desc("NxG,..."), cl::cat(sweepCat));
cl::opt<std::string> routingOpt(
    "routing-dist",
    cl::desc("Routing distributions, comma-separated: uniform | zipf:S | "
             "node-limited:M (at most M nodes per token) | "
             "trace:MODEL:DOMAIN:LAYER (default uniform,node-limited:4,"
             "trace:olmoe-1b-7b:github:15)"),
    cl::value_desc("dist,..."), cl::cat(sweepCat));
cl::opt<std::string>
    dtypesOpt("dtypes",
              cl::desc("Wire dtypes: bf16, fp8 (bf16 in/out, FP8 e4m3 with "
                       "f32 1x128 scales on the dispatch wire), "
                       "fp8_e4m3_ue8m0 (1x128 E8M0 scales), mxfp8 (1x32 E8M0 "
                       "scales), f32 (default bf16,fp8)"),
              cl::value_desc("dtype,..."), cl::cat(sweepCat));
cl::opt<std::string> strategiesOpt(
    "strategies",
    cl::desc("per_expert, flat, hierarchical, auto (default: all four)"),
    cl::value_desc("s,..."), cl::cat(sweepCat));
cl::opt<long long> tokensOpt("tokens",
                             cl::desc("Tokens per rank (default 1024)"),
                             cl::cat(sweepCat));
cl::opt<std::string> routingFileOpt(
    "routing",
    cl::desc("One group from a moecomm-routing-v1 file (DESIGN.md §8) instead "
             "of the generated sweep: cluster, E, K, H and the default wire "
             "dtype come from the file; --strategies and --dtypes still "
             "apply; --config, --topologies, --routing-dist, --tokens, "
             "--seed and --scale-experts conflict with it"),
    cl::value_desc("file"), cl::cat(sweepCat));
cl::opt<unsigned long long> seedOpt("seed",
                                    cl::desc("Routing generator seed (default "
                                             "1)"),
                                    cl::init(1), cl::cat(modelCat));
cl::opt<bool> scaleExperts(
    "scale-experts",
    cl::desc("When W does not divide a config's E, use the smallest multiple "
             "of W >= E (same H and K); =false skips such cells (default "
             "true)"),
    cl::init(true), cl::cat(modelCat));
cl::opt<std::string> configDir("config-dir",
                               cl::desc("Directory of model configs"),
                               cl::value_desc("dir"), cl::cat(modelCat));
cl::opt<std::string>
    traceFile("trace-file",
              cl::desc("Per-expert load trace for trace:... (default: the "
                       "shipped examples/data/expert_load_olmoe_mixtral.json)"),
              cl::value_desc("file"), cl::cat(modelCat));
cl::opt<bool> listConfigs("list-configs",
                          cl::desc("List the model configs and exit"),
                          cl::cat(modelCat));

cl::opt<std::string> presetsOpt(
    "presets",
    cl::desc("Link presets to model (default h100-dgx,h200-dgx,gb200-nvl72)"),
    cl::value_desc("name,..."), cl::init("h100-dgx,h200-dgx,gb200-nvl72"),
    cl::cat(modelCat));
cl::opt<std::string> autoPresetOpt(
    "auto-preset",
    cl::desc("The link model the runtime's auto uses when measuring, and the "
             "table's detailed preset (default h200-dgx)"),
    cl::init("h200-dgx"), cl::cat(modelCat));
cl::opt<double> autoTolerance(
    "auto-tolerance",
    cl::desc("Fail when auto is slower than the best fixed strategy by more "
             "than this fraction in modelled time (default 0.05)"),
    cl::init(0.05), cl::cat(modelCat));

cl::opt<std::string> backendOpt(
    "backend",
    cl::desc("auto (default: mpi under mpirun, else threads) | count (no "
             "payload) | threads | mpi | nccl (the GPU: one GPU, clusters "
             "of 1 rank; under mpirun one process per GPU)"),
    cl::init("auto"), cl::cat(modelCat));
cl::opt<long long> iterationsOpt("iterations",
                                 cl::desc("Timed iterations per measured cell "
                                          "(default 3)"),
                                 cl::init(3), cl::cat(modelCat));
cl::opt<long long> alignOpt("align",
                            cl::desc("Expert segment alignment of the measured "
                                     "layouts: a power of two in [1, 65536] "
                                     "(default 1: unpadded; traffic counts "
                                     "do not change)"),
                            cl::init(1), cl::cat(modelCat));
cl::opt<long long> warmupOpt("warmup",
                             cl::desc("Untimed iterations first (default 1)"),
                             cl::init(1), cl::cat(modelCat));
cl::opt<long long> measureMaxRanks(
    "measure-max-ranks",
    cl::desc("threads: move the payload only for clusters of at most this many "
             "ranks (default 8); larger ones are counted"),
    cl::init(8), cl::cat(modelCat));
cl::opt<long long> measureMaxMiB(
    "measure-max-mib",
    cl::desc("Move the payload only when the estimated memory of a cell is at "
             "most this many MiB (default 4096)"),
    cl::init(4096), cl::cat(modelCat));

cl::opt<std::string> linkRateOpt(
    "link-rate",
    cl::desc("The emulated cluster's per-node egress rate in tc's syntax "
             "(250mbit, 1gbit, 2.5gbit; kbit/mbit/gbit = 1e3/1e6/1e9 "
             "bits/s): adds per cell the link-limited time (the slowest "
             "node's inter-node bytes, payload + layout metadata, / rate) "
             "and x link = measured median / it, also for the baseline"),
    cl::value_desc("rate"), cl::cat(modelCat));
cl::opt<std::string> placementsOpt(
    "placements",
    cl::desc("Expert placements to count, comma-separated: none (no "
             "replicas) | eplb:R (DeepSeek EPLB over E + R slots from the "
             "routing's expert loads; rows for the locality and load_only "
             "replica choices) | eplb-global:R (EPLB with one expert group: "
             "its global policy); adds the replicated-experts table "
             "(default none: no table); --backend count only"),
    cl::value_desc("p,..."), cl::init("none"), cl::cat(modelCat));
cl::opt<std::string> csvFile("csv",
                             cl::desc("Write one CSV row per cell ('-' = "
                                      "stdout, replacing the table)"),
                             cl::value_desc("file"), cl::cat(modelCat));
cl::opt<std::string> jsonFile("json",
                              cl::desc("Write the JSON report ('-' = stdout, "
                                       "replacing the table)"),
                              cl::value_desc("file"), cl::cat(modelCat));
cl::opt<std::string>
    plotsDir("plots",
             cl::desc("Write PNG plots (gnuplot) of inter-node bytes and "
                      "modelled time vs ranks into this directory"),
             cl::value_desc("dir"), cl::cat(modelCat));
cl::opt<std::string> gnuplotOpt("gnuplot",
                                cl::desc("The gnuplot program (default: "
                                         "gnuplot on PATH)"),
                                cl::value_desc("path"), cl::cat(modelCat));
cl::opt<bool> quiet("quiet", cl::desc("No table and no progress line"),
                    cl::cat(modelCat));

/// Prints `e` as one line ("moecomm-bench: error: ...") when `print`, and
/// returns its exit status: 2 for invalid_argument, else 3.
int report(Error e, bool print) {
  return workload::reportError("moecomm-bench", std::move(e), print);
}

/// Parses the command line; returns false with one line in `error`.
bool parseFlags(int argc, char **argv, std::string &error) {
  return workload::parseCommandLine(
      argc, argv,
      "moecomm-bench: exact traffic, modelled time and measured time of MoE "
      "dispatch + combine per strategy (docs/BENCHMARKS.md)\n",
      error);
}

/// Everything decided from the flags before any work.
struct Setup {
  std::vector<SweepSpec> plan;
  std::map<std::string, workload::ModelConfig> configs;
  std::vector<LinkPreset> presets;
  size_t autoPreset = 0;
  std::string traceFile;
  std::string backend; ///< count | threads | mpi | nccl
  double linkRate = 0; ///< --link-rate, bits/s (0 = not given)
  /// --routing's problem (the plan's only group), else null.
  std::shared_ptr<const workload::RoutingProblem> fileRouting;
  /// --placements when given (the placement table), else empty.
  std::vector<PlacementSpec> placements;
};

/// Sets `sw`'s wire dtypes (--dtypes, else `defaultDtypes`) and strategies
/// (--strategies, else all four); errors are the parsers' (one line).
Error parseWireAndStrategies(StringRef defaultDtypes, SweepSpec &sw) {
  Expected<std::vector<workload::PayloadType>> dtypes = parseDtypes(
      dtypesOpt.getNumOccurrences() ? StringRef(dtypesOpt) : defaultDtypes);
  if (!dtypes)
    return dtypes.takeError();
  sw.dtypes = *dtypes;
  Expected<std::vector<moecommStrategy_t>> strategies =
      parseStrategies(strategiesOpt.getNumOccurrences()
                          ? StringRef(strategiesOpt)
                          : StringRef("per_expert,flat,hierarchical,auto"));
  if (!strategies)
    return strategies.takeError();
  sw.strategies = *strategies;
  return Error::success();
}

/// The sweep flags --routing replaces (each one conflicts with it).
const std::initializer_list<const cl::Option *> kGeneratedSweepFlags = {
    &configOpt, &topologiesOpt, &routingOpt,
    &tokensOpt, &seedOpt,       &scaleExperts};

/// The plan of --routing FILE: one sweep of one group whose config (named
/// after the file's stem), cluster and tokens come from the file; the wire
/// dtypes are --dtypes or the file's dtype. Errors (invalid_argument, one
/// line): a generator flag given too, an unreadable or invalid file, a
/// capacity (moecomm-bench measures without drops).
Error buildFilePlan(Setup &s) {
  for (const cl::Option *o : kGeneratedSweepFlags)
    if (o->getNumOccurrences())
      return workload::inputError(
          formatv("--{0} conflicts with --routing (the file gives the "
                  "cluster, experts, top-k, hidden size and tokens)",
                  o->ArgStr));
  Expected<workload::RoutingProblem> p =
      workload::loadRoutingFile(routingFileOpt);
  if (!p)
    return p.takeError();
  if (Error e = workload::validateRouting(*p))
    return e;
  if (p->capacity != 0)
    return workload::inputError(
        formatv("{0}: capacity {1} is not supported by moecomm-bench (it "
                "measures without drops); remove \"capacity\"",
                routingFileOpt, p->capacity));
  workload::ModelConfig config;
  config.name = sys::path::stem(routingFileOpt).str();
  config.model = "routing file";
  config.hidden = p->hidden;
  config.numExperts = p->numExperts;
  config.topk = p->topk;
  config.path = routingFileOpt;
  SweepSpec sw;
  sw.name = "routing-file";
  sw.configs = {config.name};
  sw.topologies = {Cluster{p->numNodes(), p->ranksPerNode}};
  workload::RoutingDist dist;
  dist.spec = "file:" + routingFileOpt;
  sw.routings = {dist};
  if (Error e = parseWireAndStrategies(workload::payloadTypeName(p->dtype), sw))
    return e;
  // Tokens per rank for the report and the memory estimates: the mean,
  // rounded up (ranks may hold different counts).
  sw.tokens = (p->totalTokens() + p->ranks - 1) / p->ranks;
  s.configs.emplace(config.name, config);
  s.plan.push_back(sw);
  s.fileRouting =
      std::make_shared<const workload::RoutingProblem>(std::move(*p));
  return Error::success();
}

Error buildGeneratedPlan(const char *argv0,
                         const std::vector<std::string> &dirs, Setup &s);

/// Parses --placements and checks that every placement fits every cell of
/// the plan (EPLB's (E + R) % W == 0) and that the backend counts.
Error buildPlacements(Setup &s) {
  Expected<std::vector<PlacementSpec>> specs = parsePlacements(placementsOpt);
  if (!specs)
    return specs.takeError();
  s.placements = *specs;
  for (const PlacementSpec &spec : s.placements) {
    if (spec.isNone())
      continue;
    if (s.backend != "count")
      return workload::inputError(
          formatv("--placements {0} needs --backend count: the {1} backend "
                  "measures no placement rows (moecomm-run --placement "
                  "measures one)",
                  spec.spec, s.backend));
    for (const SweepSpec &sw : s.plan)
      for (const std::string &name : sw.configs)
        for (const Cluster &topo : sw.topologies) {
          const int64_t experts =
              s.fileRouting ? s.fileRouting->numExperts
                            : cellExperts(s.configs.at(name).numExperts,
                                          topo.ranks(), scaleExperts);
          if (experts == 0) // skipped (--scale-experts=false)
            continue;
          if (Error e =
                  checkPlacementFits(spec, experts, topo.ranks(),
                                     formatv("config {0} on {1}x{2}", name,
                                             topo.nodes, topo.ranksPerNode)
                                         .str()))
            return e;
        }
  }
  return Error::success();
}

Error buildSetup(const char *argv0, Setup &s) {
  std::vector<std::string> dirs = configDir.getNumOccurrences()
                                      ? std::vector<std::string>{configDir}
                                      : workload::dataDirs(argv0, "configs");
  // Presets.
  Expected<std::vector<std::string>> presetNames =
      splitList(presetsOpt, "presets");
  if (!presetNames)
    return presetNames.takeError();
  auto known = [] {
    std::vector<std::string> names;
    for (const LinkPreset &p : linkPresets())
      names.push_back(p.name);
    return join(names, ", ");
  };
  for (const std::string &name : *presetNames) {
    const LinkPreset *p = findLinkPreset(name);
    if (!p)
      return workload::inputError(formatv(
          "unknown preset '{0}' in --presets (known: {1})", name, known()));
    s.presets.push_back(*p);
  }
  const LinkPreset *ap = findLinkPreset(autoPresetOpt);
  if (!ap)
    return workload::inputError(formatv(
        "unknown --auto-preset '{0}' (known: {1})", autoPresetOpt, known()));
  s.autoPreset = s.presets.size();
  for (size_t i = 0; i < s.presets.size(); ++i)
    if (s.presets[i].name == std::string(ap->name))
      s.autoPreset = i;
  if (s.autoPreset == s.presets.size())
    s.presets.push_back(*ap);
  if (!(autoTolerance >= 0) || autoTolerance > 10)
    return workload::inputError(
        formatv("--auto-tolerance must be in [0, 10], got {0}", autoTolerance));

  // Numbers.
  for (auto [o, lo, hi] : std::initializer_list<
           std::tuple<const cl::opt<long long> *, long long, long long>>{
           {&iterationsOpt, 1, 1000},
           {&warmupOpt, 0, 1000},
           {&measureMaxRanks, 0, workload::kMaxThreadRanks},
           {&measureMaxMiB, 0, 1 << 30}})
    if (*o < lo || *o > hi)
      return workload::inputError(
          formatv("--{0} must be in [{1}, {2}], got {3}", o->ArgStr, lo, hi,
                  (long long)*o));
  if (!moecomm::isValidAlign(alignOpt))
    return workload::inputError(
        formatv("--align must be a power of two in [1, {0}], got {1}",
                moecomm::kMaxAlign, (long long)alignOpt));
  if (tokensOpt.getNumOccurrences() && (tokensOpt < 0 || tokensOpt > (1 << 24)))
    return workload::inputError(formatv(
        "--tokens must be in [0, 16777216], got {0}", (long long)tokensOpt));
  if (Error e =
          workload::checkPathsNotEmpty({&configDir, &traceFile, &routingFileOpt,
                                        &csvFile, &jsonFile, &plotsDir}))
    return e;
  if (Error e = workload::checkDistinctOutputs(
          {{"--csv", csvFile},
           {"--json", jsonFile},
           {"--plots", plotsDir, isPlotFileName}}))
    return e;

  // Backend.
  if (backendOpt == "auto")
    s.backend = workload::launchedByMpirun() ? "mpi" : "threads";
  else if (backendOpt == "count" || backendOpt == "threads" ||
           backendOpt == "mpi" || backendOpt == "nccl")
    s.backend = backendOpt;
  else
    return workload::inputError(
        formatv("unknown --backend '{0}' (expected auto, "
                "count, threads, mpi or nccl)",
                backendOpt));

  if (linkRateOpt.getNumOccurrences()) {
    Expected<double> rate = parseLinkRate(linkRateOpt);
    if (!rate)
      return rate.takeError();
    s.linkRate = *rate;
  }

  if (routingFileOpt.getNumOccurrences()) {
    if (Error e = buildFilePlan(s))
      return e;
  } else if (Error e = buildGeneratedPlan(argv0, dirs, s)) {
    return e;
  }

  if (placementsOpt.getNumOccurrences())
    if (Error e = buildPlacements(s))
      return e;

  // No output may replace a file the sweep reads.
  std::vector<workload::InputFile> inputs;
  for (const auto &[name, config] : s.configs)
    inputs.push_back(
        {s.fileRouting ? "routing file" : "model config", config.path});
  inputs.push_back({"expert-load trace", s.traceFile});
  inputs.push_back({"--gnuplot program", gnuplotOpt});
  return workload::checkOutputsSpareInputs(
      inputs, {{"--csv", csvFile},
               {"--json", jsonFile},
               {"--plots", plotsDir, isPlotFileName}});
}

/// The generated plan: the default plan, or one cross product of the sweep
/// flags; loads the configs and the trace file and refuses routings that
/// cannot fit in memory.
Error buildGeneratedPlan(const char *argv0,
                         const std::vector<std::string> &dirs, Setup &s) {
  // Configs.
  std::vector<std::string> configNames;
  if (configOpt.getNumOccurrences()) {
    Expected<std::vector<std::string>> names = splitList(configOpt, "config");
    if (!names)
      return names.takeError();
    configNames = *names;
  } else {
    configNames = workload::listModelConfigs(dirs);
    if (configNames.empty())
      return workload::inputError(formatv("no model configs found in {0}; give "
                                          "--config-dir",
                                          join(dirs, " or ")));
  }
  for (std::string &name : configNames) {
    Expected<workload::ModelConfig> c = workload::loadModelConfig(name, dirs);
    if (!c)
      return c.takeError();
    name = c->name;
    // Configs are keyed by name: a second one would replace the first.
    if (!s.configs.try_emplace(c->name, *c).second)
      return workload::inputError(
          formatv("two configs are named {0}; rename one "
                  "of the files",
                  c->name));
  }

  // The plan.
  const bool custom =
      configOpt.getNumOccurrences() || topologiesOpt.getNumOccurrences() ||
      routingOpt.getNumOccurrences() || dtypesOpt.getNumOccurrences() ||
      strategiesOpt.getNumOccurrences() || tokensOpt.getNumOccurrences();
  if (!custom) {
    s.plan = defaultPlan(configNames);
  } else {
    SweepSpec sw;
    sw.name = "custom";
    sw.configs = configNames;
    Expected<std::vector<Cluster>> topo = parseTopologies(
        topologiesOpt.getNumOccurrences() ? StringRef(topologiesOpt)
                                          : StringRef("2x4,8x8"));
    if (!topo)
      return topo.takeError();
    sw.topologies = *topo;
    Expected<std::vector<workload::RoutingDist>> routings =
        parseRoutings(routingOpt.getNumOccurrences()
                          ? StringRef(routingOpt)
                          : StringRef("uniform,node-limited:4,"
                                      "trace:olmoe-1b-7b:github:15"));
    if (!routings)
      return routings.takeError();
    sw.routings = *routings;
    if (Error e = parseWireAndStrategies("bf16,fp8", sw))
      return e;
    sw.tokens = tokensOpt.getNumOccurrences() ? tokensOpt : 1024;
    s.plan.push_back(sw);
  }

  // The trace file, when some routing needs it.
  bool needTrace = false;
  for (const SweepSpec &sw : s.plan)
    for (const workload::RoutingDist &d : sw.routings)
      needTrace = needTrace || d.kind == workload::RoutingDist::Trace;
  if (needTrace) {
    Expected<std::string> file = workload::findTraceFile(argv0, traceFile);
    if (!file)
      return file.takeError();
    s.traceFile = *file;
    // Fail early (exit 2) on an unknown model/domain/layer.
    for (const SweepSpec &sw : s.plan)
      for (const workload::RoutingDist &d : sw.routings)
        if (d.kind == workload::RoutingDist::Trace) {
          Expected<std::vector<double>> loads = workload::loadTraceLoads(
              s.traceFile, d.traceModel, d.traceDomain, d.traceLayer, 64);
          if (!loads)
            return loads.takeError();
        }
  }

  // Every cell generates and counts its routing, measured or not: one that
  // cannot fit is refused before the sweep (tokens <= 2^24 per rank and
  // configs' E <= 2^24 keep these products exact).
  for (const SweepSpec &sw : s.plan)
    for (const std::string &name : sw.configs)
      for (const Cluster &topo : sw.topologies) {
        const workload::ModelConfig &config = s.configs.at(name);
        const int64_t experts =
            cellExperts(config.numExperts, topo.ranks(), scaleExperts);
        const int64_t tokens = sw.tokens * topo.ranks();
        if (Error e = workload::checkMemory(
                workload::estimateRoutingBytes(tokens, config.topk, experts),
                formatv("config {0} on {1}x{2}: the routing of {3} tokens x "
                        "top-{4} over {5} experts{6}",
                        name, topo.nodes, topo.ranksPerNode, tokens,
                        config.topk, experts,
                        experts != config.numExperts
                            ? " (scaled to a multiple of the ranks)"
                            : "")))
          return e;
      }
  return Error::success();
}

struct GroupSpec {
  const SweepSpec *sweep;
  std::string config;
  Cluster topo;
  workload::RoutingDist routing;
};

} // namespace

int main(int argc, char **argv) {
  const auto started = std::chrono::steady_clock::now();
  const bool printer = workload::isReportingProcess();
  cl::HideUnrelatedOptions({&sweepCat, &modelCat});
  cl::AddExtraVersionPrinter(moecomm::printMoECommVersion);
  std::string command;
  for (int i = 0; i < argc; ++i)
    command += (i ? " " : "") + std::string(argv[i]);
  {
    std::string error;
    if (!parseFlags(argc, argv, error))
      return report(workload::inputError(error), printer);
  }
  if (listConfigs) {
    std::vector<std::string> dirs =
        configDir.getNumOccurrences() ? std::vector<std::string>{configDir}
                                      : workload::dataDirs(argv[0], "configs");
    for (const std::string &name : workload::listModelConfigs(dirs)) {
      Expected<workload::ModelConfig> c = workload::loadModelConfig(name, dirs);
      if (!c)
        return report(c.takeError(), printer);
      outs() << formatv("{0,-18} {1,-18} H={2} E={3} K={4}\n", c->name,
                        c->model, c->hidden, c->numExperts, c->topk);
    }
    return 0;
  }

  Setup setup;
  if (Error e = buildSetup(argv[0], setup))
    return report(std::move(e), printer);
  // The backends whose processes are the ranks under mpirun (each process
  // measures; rank 0 reports).
  const bool processRanks = setup.backend == "mpi" || setup.backend == "nccl";
  // Under mpirun without such a backend, rank 0 alone does the work.
  if (!printer && !processRanks)
    return 0;
  // Unwritable outputs (and a missing gnuplot) are found now, not after the
  // sweep.
  std::string gnuplotProgram;
  if (printer) {
    for (auto [option, path] :
         {std::pair<const char *, std::string>{"--json", jsonFile},
          {"--csv", csvFile}})
      if (!path.empty() && path != "-")
        if (Error e = workload::checkOutputFile(option, path))
          return report(std::move(e), printer);
    if (!plotsDir.empty()) {
      Expected<std::string> program = preparePlots(plotsDir, gnuplotOpt);
      if (!program)
        return report(program.takeError(), printer);
      gnuplotProgram = *program;
    }
  }
  // After the paths, so that a bad --plots path is exit status 3 whatever the
  // plan; on every process, so that all of them stop.
  if (!plotsDir.empty())
    if (Error e = checkPlottable(setup.plan))
      return report(std::move(e), printer);

  std::unique_ptr<Executor> executor;
  if (setup.backend == "threads")
    executor = makeThreadsExecutor();
  else if (processRanks) {
    Expected<std::unique_ptr<Executor>> made =
        setup.backend == "mpi" ? makeMpiExecutor(argc, argv)
                               : makeNcclExecutor(argc, argv);
    if (!made)
      return report(made.takeError(), printer);
    executor = std::move(*made);
    // Processes given different flags (e.g. --iterations) would wait on each
    // other forever in the collectives of a measurement. Reported while the
    // executor (and so MPI) lives: rank 0 must print before the others
    // finalize and exit, or mpirun kills it first.
    std::string commandLine;
    for (int i = 1; i < argc; ++i)
      commandLine.append(argv[i]).push_back('\0');
    if (!executor->sameOnEveryProcess(xxh3_64bits(commandLine)))
      return report(workload::inputError(
                        "the MPI processes were started with different "
                        "command lines; give every process the same flags"),
                    printer);
  }
  const bool root = !executor || executor->isRoot();
  // A routing file fixes the ranks, so under mpirun they must be the
  // processes (a generated sweep may hold clusters this world does not fit;
  // those are counted only). The same verdict on every process.
  if (routingFileOpt.getNumOccurrences() && processRanks)
    for (const SweepSpec &sw : setup.plan)
      for (const Cluster &topo : sw.topologies)
        if (!executor->canRun(topo))
          return report(workload::inputError(formatv(
                            "--routing {0} has {1} ranks: run it under "
                            "mpirun -np {1}",
                            routingFileOpt, topo.ranks())),
                        root);

  BenchReport rep;
  rep.command = command;
  rep.backend = setup.backend;
  rep.align = alignOpt;
  rep.baselineKind = setup.backend == "mpi"     ? "MPI_Alltoallv"
                     : setup.backend == "count" ? "none"
                                                : "moecommAllToAll";
  rep.presets = setup.presets;
  rep.autoPreset = setup.autoPreset;
  rep.findings.tolerance = autoTolerance;
  rep.linkRateBitsPerSec = setup.linkRate;
  rep.placementsWanted = !setup.placements.empty();

  MeasureOptions mopt;
  mopt.warmup = static_cast<int>(warmupOpt);
  mopt.iterations = static_cast<int>(iterationsOpt);
  mopt.align = alignOpt;

  // Clusters of equal W are adjacent so that a routing that does not depend
  // on the nodes is generated once for all of them (see `cache` below).
  std::vector<GroupSpec> groups;
  for (const SweepSpec &sw : setup.plan)
    for (const std::string &config : sw.configs) {
      std::vector<int> sizes;
      for (const Cluster &topo : sw.topologies)
        sizes.push_back(topo.ranks());
      llvm::sort(sizes);
      sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
      for (int W : sizes)
        for (const Cluster &topo : sw.topologies)
          if (topo.ranks() == W)
            for (const workload::RoutingDist &d : sw.routings)
              groups.push_back({&sw, config, topo, d});
    }
  // Under MPI the groups every process measures come first: for the others
  // (counted by rank 0 alone) the other processes would only wait.
  if (processRanks) {
    std::vector<GroupSpec> measuredFirst;
    for (bool pass : {true, false})
      for (const GroupSpec &g : groups)
        if (executor->canRun(g.topo) == pass)
          measuredFirst.push_back(g);
    groups = std::move(measuredFirst);
  }
  std::map<std::string, std::shared_ptr<const workload::RoutingProblem>> cache;
  std::string cacheScope;

  workload::Progress progress("moecomm-bench", root && !quiet);
  bool anyMeasured = false;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupSpec &gs = groups[gi];
    const SweepSpec &sw = *gs.sweep;
    const workload::ModelConfig &config = setup.configs.at(gs.config);
    const int W = gs.topo.ranks();
    progress.update(formatv("[{0}/{1}] {2} {3}x{4} {5}", gi, groups.size(),
                            gs.config, gs.topo.nodes, gs.topo.ranksPerNode,
                            gs.routing.spec)
                        .str());
    const int64_t experts = cellExperts(config.numExperts, W, scaleExperts);
    if (experts == 0) {
      if (root)
        rep.skipped.push_back({sw.name, gs.config, gs.routing.spec, gs.topo,
                               formatv("E = {0} is not divisible by {1} ranks "
                                       "(--scale-experts=false)",
                                       config.numExperts, W)});
      continue;
    }
    const bool measure =
        executor && executor->canRun(gs.topo) &&
        (processRanks || W <= measureMaxRanks) &&
        workload::estimateRunBytes(sw.tokens * gs.topo.ranks(), config.hidden,
                                   config.topk, experts) <=
            static_cast<double>(measureMaxMiB) * (1 << 20);
    if (!root && !measure)
      continue;
    const std::string scope =
        formatv("{0}|{1}|{2}|{3}", gs.config, W, experts, sw.tokens).str();
    if (scope != cacheScope) {
      cache.clear();
      cacheScope = scope;
    }
    std::shared_ptr<const workload::RoutingProblem> &cached =
        cache[gs.routing.spec];
    const bool shareable = !routingDependsOnNodes(gs.routing);
    Expected<RoutingGroup> g = makeGroup(config, gs.topo, gs.routing, sw.tokens,
                                         experts, seedOpt, setup.traceFile,
                                         setup.fileRouting ? setup.fileRouting
                                         : shareable       ? cached
                                                           : nullptr);
    if (g && shareable)
      cached = g->routing;
    if (!g) {
      std::string why = toString(g.takeError());
      if (root)
        rep.skipped.push_back(
            {sw.name, gs.config, gs.routing.spec, gs.topo, why});
      continue;
    }
    // The runtime's auto chooses with this preset's link model.
    const size_t choice =
        choicePreset(setup.presets, setup.autoPreset, gs.topo);
    mopt.autoLink = setup.presets[choice].link;
    std::vector<Cell> cells;
    std::vector<DtypeCounts> counts;
    DtypeCounts bf16;
    if (root) {
      bool haveBf16 = false;
      for (workload::PayloadType t : sw.dtypes) {
        counts.push_back(countDtype(*g, t, setup.presets));
        if (t == workload::PayloadType::BF16) {
          bf16 = counts.back();
          haveBf16 = true;
        }
      }
      if (!haveBf16)
        bf16 = countDtype(*g, workload::PayloadType::BF16, setup.presets);
      cells = makeCells(sw.name, *g, sw.dtypes, sw.strategies, counts, bf16,
                        setup.presets, choice);
      if (!setup.placements.empty()) {
        Expected<std::vector<double>> loads =
            placementLoads(*g, setup.traceFile, setup.fileRouting != nullptr);
        if (!loads)
          return report(loads.takeError(), printer);
        Expected<std::vector<PlacementRow>> rows =
            placementRows(sw.name, *g, setup.placements, *loads, sw.dtypes);
        if (!rows)
          return report(rows.takeError(), printer);
        for (PlacementRow &r : *rows)
          rep.placements.push_back(std::move(r));
      }
    }
    if (measure) {
      std::vector<std::pair<workload::PayloadType, moecommStrategy_t>> ops;
      for (workload::PayloadType t : sw.dtypes)
        for (moecommStrategy_t s : sw.strategies)
          ops.push_back({t, s});
      Expected<GroupMeasurement> m = executor->run(*g, ops, mopt);
      if (!m)
        return report(m.takeError(), printer);
      anyMeasured = true;
      if (root)
        attachMeasurement(cells, *g, sw.dtypes, counts, bf16, *m, rep.findings);
    }
    for (Cell &c : cells)
      rep.cells.push_back(std::move(c));
  }
  progress.finish();
  if (!root) {
    executor.reset(); // MPI_Finalize
    return 0;
  }
  if (!anyMeasured && setup.backend != "count")
    rep.baselineKind = "none";
  checkCells(rep.cells, rep.findings);

  if (!plotsDir.empty()) {
    Expected<std::vector<std::string>> pngs =
        writePlots(rep, plotsDir, gnuplotProgram);
    if (!pngs)
      return report(pngs.takeError(), printer);
    rep.plots = *pngs;
    rep.plotsWanted = true;
  }
  rep.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  if (!csvFile.empty())
    if (Error e = workload::writeOutputFile(
            "--csv", csvFile, [&](raw_ostream &os) { writeCsv(os, rep); }))
      return report(std::move(e), printer);
  if (!jsonFile.empty())
    if (Error e =
            workload::writeOutputFile("--json", jsonFile, [&](raw_ostream &os) {
              os << formatv("{0:2}", toJson(rep)) << "\n";
            }))
      return report(std::move(e), printer);
  if (!quiet && csvFile != "-" && jsonFile != "-") {
    printTable(outs(), rep);
    outs().flush();
  }
  executor.reset();
  return workload::finishStdout("moecomm-bench",
                                rep.findings.failures.empty() ? 0 : 1);
}
