//===- Output.h - moecomm-bench's table, CSV and JSON -----------*- C++ -*-===//
//
// Three views of the same cells: a readable table (grouped by routing, with
// a scaling summary and the auto check), one CSV row per cell, and a JSON
// document ("moecomm-bench-v1") with everything, including per-stage
// modelled times and the runtime's counters. With --link-rate every cell
// also gets its link-limited time and, when measured, `x link`; with
// --placements the table and the JSON ("placements") get the
// replicated-experts rows (Placements.h). Times under a
// preset are *modelled* (alpha-beta, CostModel.h) and labelled so; measured
// times are CPU wall time here and reported with their ratio to the baseline.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_OUTPUT_H
#define MOECOMM_TOOLS_BENCH_OUTPUT_H

#include "Cells.h"
#include "Placements.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace moecomm::bench {

/// The whole run, as written by every output.
struct BenchReport {
  std::string command;      ///< argv joined
  std::string backend;      ///< count | threads | mpi
  std::string baselineKind; ///< MPI_Alltoallv | moecommAllToAll | none
  int64_t align = 1;        ///< --align: expert segment alignment, rows
  std::vector<LinkPreset> presets;
  size_t autoPreset = 0; ///< index into presets
  std::vector<Cell> cells;
  std::vector<Skipped> skipped;
  Findings findings;
  double seconds = 0;             ///< wall time of the whole run
  std::vector<std::string> plots; ///< PNG files written
  bool plotsWanted = false;       ///< --plots was given
  /// --link-rate in bits/s (0 = not given): the emulated cluster's per-node
  /// egress rate, for the link-limited time and `x link` (LinkLimit.h).
  double linkRateBitsPerSec = 0;
  /// --placements' rows (Placements.h), when it was given.
  std::vector<PlacementRow> placements;
  bool placementsWanted = false;
};

/// The preset a cluster's plots and scaling summary use: choicePreset(), or
/// -1 when no preset applies.
int plotPreset(const BenchReport &report, const Cluster &cluster);

/// The readable table, the scaling summary and the checks.
void printTable(llvm::raw_ostream &os, const BenchReport &report);
/// One header line and one line per cell.
void writeCsv(llvm::raw_ostream &os, const BenchReport &report);
/// The JSON document.
llvm::json::Value toJson(const BenchReport &report);

/// "1.23 GB", "456 MB", "12.0 kB", "17 B" (powers of 1000).
std::string humanBytes(double bytes);

/// `value` with 17 significant digits ("%.17g"): reads back to the same
/// double (CSV and plot data).
std::string shortestDouble(double value);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_OUTPUT_H
