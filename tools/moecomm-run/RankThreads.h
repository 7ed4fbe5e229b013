//===- RankThreads.h - one thread per rank, started all or none -*- C++ -*-===//
//
// The threads backend runs W ranks as W threads of this process, and each
// rank's collectives wait for every other rank. A thread that cannot be
// created (RLIMIT_NPROC, address space, memory) must therefore stop the run
// before any rank begins: otherwise the started ranks wait for ever in their
// first collective, or std::thread's exception aborts the process.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_RUN_RANKTHREADS_H
#define MOECOMM_RUN_RANKTHREADS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace moecomm {
namespace run {

/// Runs `body(r)` for every rank r in [0, ranks) on a thread of its own and
/// joins them. No body starts before every thread exists. Errors: a system
/// error (tools: exit 3) naming the rank whose thread could not be created,
/// and then no body has run.
llvm::Error runOnRankThreads(int ranks, llvm::function_ref<void(int)> body);

} // namespace run
} // namespace moecomm

#endif // MOECOMM_RUN_RANKTHREADS_H
