//===- Dump.h - moecomm-run --dump: NumPy files per rank --------*- C++ -*-===//
//
// DESIGN.md §8: for each rank r, in DIR:
//   rank<r>.dispatch.npy           [R][H]  float32, expert-major
//   rank<r>.src.npy                [R][2]  int64 (source rank, source token)
//   rank<r>.tokens_per_expert.npy  [E/W]   int64
//   rank<r>.combine.npy            [T_r][H] float32, weighted combine of
//                                  identity experts
// Files are NumPy format 1.0, little-endian, C order (written with xtensor's
// xt::dump_npy).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_DUMP_H
#define MOECOMM_TOOLS_RUN_DUMP_H

#include "LayerResult.h"

namespace moecomm::run {

/// Creates `dir` (and parents) if needed and checks it is a writable
/// directory. invalid_argument error (exit status 2) otherwise.
llvm::Error prepareDumpDir(llvm::StringRef dir);

/// Whether `fileName` is one dumpRank writes (rank<r>.<what>.npy), so that
/// an input by that name in the dump directory is refused before the run.
bool isDumpFileName(llvm::StringRef fileName);

/// Writes the four files of `result.rank` into `dir` (DESIGN.md §8), plus
/// rank<r>.grad_x.npy for a training step; a graph that returns only its
/// combine output gets rank<r>.combine.npy alone. io_error on failure.
llvm::Error dumpRank(llvm::StringRef dir, const LayerResult &result);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_DUMP_H
