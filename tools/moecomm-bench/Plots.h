//===- Plots.h - PNG plots of a sweep with gnuplot --------------*- C++ -*-===//
//
// For every (config, ranks per node, tokens per rank) with at least two rank
// counts, two PNGs: exact inter-node bytes (dispatch + combine) versus ranks,
// and modelled dispatch + combine time versus ranks (on plotPreset()), one
// panel per routing, one line per fixed strategy and wire dtype. moecomm-bench
// writes the data (.dat) and a gnuplot script (.gp) next to each PNG and runs
// Debian's gnuplot (pngcairo, else png). The plan, the directory and gnuplot
// are checked before the sweep.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_PLOTS_H
#define MOECOMM_TOOLS_BENCH_PLOTS_H

#include "Output.h"
#include "Sweep.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace moecomm::bench {

/// Checks, before the sweep, that `plan` gives writePlots something to draw:
/// a fixed strategy at two or more rank counts with the same config, ranks
/// per node, tokens per rank, routing and wire dtype. invalid_argument (one
/// line) when not.
llvm::Error checkPlottable(const std::vector<SweepSpec> &plan);

/// Readies the plots output before the sweep: creates the directory `dir`
/// and finds the gnuplot program (`gnuplot`, or "" = "gnuplot" on PATH).
/// Returns the program's path. io_error (one line) when `dir` is an existing
/// file or cannot be created or written, or no such program.
llvm::Expected<std::string> preparePlots(const std::string &dir,
                                         const std::string &gnuplot);

/// Whether `fileName` has the form writePlots writes into the plots
/// directory (*.dat, *.gp, *.png), so that an input by such a name there is
/// refused before the sweep.
bool isPlotFileName(llvm::StringRef fileName);

/// Writes the plots of `report` into `dir` (readied by preparePlots) with the
/// gnuplot `program`, and returns the PNG paths. Errors are io_error: a
/// failing gnuplot run (with its last line of stderr), an unwritable file.
/// No series at two rank counts (all skipped) gives an empty list.
llvm::Expected<std::vector<std::string>> writePlots(const BenchReport &report,
                                                    const std::string &dir,
                                                    const std::string &program);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_PLOTS_H
