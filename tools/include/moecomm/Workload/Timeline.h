//===- Timeline.h - every rank's trace as JSON and a PNG --------*- C++ -*-===//
//
// The runtime records, per communicator and when asked, timestamped spans of
// its work (moecommCommSetTrace, moecommTraceEvent_t). This collects every
// rank's spans onto one clock and writes them as
//  - Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one
//    process per rank, one track (thread) per kind of step and stage, "X"
//    complete events with ts / dur in microseconds from the earliest event
//    of the run, args {bytes, scope, direction, stage}; plus "compute"
//    slices, the gaps between the caller's runtime calls (the runtime's
//    "call" spans) inside one iteration (from a layout creation to the last
//    call before the next one), where the caller (compiled code, the tool's
//    experts) computes while its started collectives may be in flight;
//  - a PNG (gnuplot): ranks down, time across, three lanes per rank
//    (exchanges; the rank's own row work; calls, compute and waits), one
//    colour per kind, with a legend.
// Use: startTimeline(comm) on every rank before the work, readTimeline(comm)
// after it (threads: inside each rank's body, before its communicator
// goes), gatherTimelines under MPI, then writeTimeline on the reporting
// process.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_TIMELINE_H
#define MOECOMM_WORKLOAD_TIMELINE_H

#include "moecomm/Workload/RankLauncher.h"
#include "moecomm/moecomm.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::workload {

/// One rank's recorded spans (times: seconds on steady_clock; after
/// gatherTimelines, on rank 0's clock) and how many the runtime dropped.
struct RankTimeline {
  int rank = 0;
  std::vector<moecommTraceEvent_t> events;
  int64_t dropped = 0;
};

/// Where and how writeTimeline writes.
struct TimelineOutput {
  std::string jsonPath; ///< the trace-event JSON ("" = none, "-" = stdout)
  std::string pngPath;  ///< the PNG ("" = none)
  std::string gnuplot;  ///< the program for the PNG (findGnuplot)
  std::string title;    ///< e.g. "hierarchical, threads, 4 ranks (2 per node)"
  std::string option = "--trace"; ///< the flag named in errors
};

/// Starts recording on `comm` (local; clears what it recorded so far).
/// Errors: runtimeError.
llvm::Error startTimeline(moecommComm_t comm);

/// This rank's spans so far (local). Errors: runtimeError.
llvm::Expected<RankTimeline> readTimeline(moecommComm_t comm);

/// Collective over MPI_COMM_WORLD: every rank's timeline to rank 0, which
/// gets all of them in rank order (the others get an empty list). Clocks
/// are aligned on one reference: every rank reads steady_clock right after
/// an MPI_Barrier and rank r's times are shifted by (stamp_r - stamp_0), so
/// ranks agree to within the barrier's exit skew (on one machine, where
/// steady_clock is shared, the shift only adds that skew). Errors: io_error
/// when MPI fails; invalid_argument without MPI.
llvm::Expected<std::vector<RankTimeline>>
gatherTimelines(const MpiWorld &world, const RankTimeline &mine);

/// The PNG next to a trace file: FILE.json -> FILE.png, else FILE.png.
std::string timelinePngPath(llvm::StringRef jsonPath);

/// Writes `ranks` (any order; each rank once) as out.jsonPath and out.pngPath
/// (whichever are set). Errors: io_error (one line) for an unwritable file
/// or a failing gnuplot.
llvm::Error writeTimeline(llvm::ArrayRef<RankTimeline> ranks,
                          const TimelineOutput &out);

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_TIMELINE_H
