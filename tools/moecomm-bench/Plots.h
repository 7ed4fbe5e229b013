//===- Plots.h - PNG plots of a sweep with gnuplot --------------*- C++ -*-===//
//
// For every (config, ranks per node, tokens per rank) with at least two rank
// counts, two PNGs: exact inter-node bytes (dispatch + combine) versus ranks,
// and modelled dispatch + combine time versus ranks (on plotPreset()), one
// panel per routing, one line per fixed strategy and wire dtype. moecomm-bench
// writes the data (.dat) and a gnuplot script (.gp) next to each PNG and runs
// Debian's gnuplot (pngcairo, else png).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_PLOTS_H
#define MOECOMM_TOOLS_BENCH_PLOTS_H

#include "Output.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace moecomm::bench {

/// Writes the plots of `report` into `dir` (created if needed) and returns
/// the PNG paths. `gnuplot` is the program to run ("" = find "gnuplot" on
/// PATH). Errors are io_error: no gnuplot, a failing gnuplot run, an
/// unwritable directory. No plottable series is not an error (empty list).
llvm::Expected<std::vector<std::string>> writePlots(const BenchReport &report,
                                                    const std::string &dir,
                                                    const std::string &gnuplot);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_PLOTS_H
