//===- Timeline.cpp - every rank's trace as Perfetto JSON and a PNG -------===//

#include "moecomm/Workload/Timeline.h"
#include "moecomm/Workload/Gnuplot.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/RuntimeError.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#ifdef MOECOMM_HAVE_MPI
#include <mpi.h>
#endif

using namespace llvm;

namespace moecomm::workload {

namespace {

/// The "compute" slices are not runtime events: a kind of their own.
constexpr int kComputeKind = -1;

/// A span to draw: a runtime event or a compute slice.
struct Span {
  int kind; ///< moecommTraceKind_t or kComputeKind
  moecommTraceDirection_t direction = moecommTraceDirNone;
  int32_t stage = -1;
  moecommScope_t scope = moecommScopeGlobal;
  double start = 0, end = 0; ///< seconds, run clock
  int64_t bytes = 0;
};

const char *kindName(int kind) {
  return kind == kComputeKind
             ? "compute"
             : moecommTraceKindName(static_cast<moecommTraceKind_t>(kind));
}

const char *directionName(moecommTraceDirection_t d) {
  return d == moecommTraceDirDispatch  ? "dispatch"
         : d == moecommTraceDirCombine ? "combine"
                                       : "none";
}

const char *scopeName(moecommScope_t s) {
  return s == moecommScopeIntraNode   ? "intra"
         : s == moecommScopeInterNode ? "inter"
                                      : "global";
}

bool isStep(int kind) {
  return kind == moecommTraceKindPack || kind == moecommTraceKindReduce ||
         kind == moecommTraceKindQuantize;
}

/// The track (Chrome "thread") of a span: its id orders the tracks of a
/// rank top-down, its name says what runs there. Lanes of one track (spans
/// that partially overlap, e.g. the same stage of two chunks in flight) add
/// kLane to the id.
constexpr int kLane = 1000;
std::pair<int, std::string> trackOf(const Span &s) {
  const int dir = s.direction == moecommTraceDirCombine ? 1 : 0;
  const std::string d = directionName(s.direction);
  if (s.kind == moecommTraceKindLayout)
    return {0, "layout"};
  if (s.kind == moecommTraceKindDispatch || s.kind == moecommTraceKindCombine)
    return {1 + dir, d};
  // Per stage: its pack, reduce, quantize and exchange tracks, in order.
  if ((isStep(s.kind) || s.kind == moecommTraceKindExchange) && s.stage >= 0)
    return {10 + 200 * dir + 4 * s.stage + (s.kind - moecommTraceKindPack),
            formatv("{0} s{1} {2}", d, s.stage, kindName(s.kind)).str()};
  if (s.direction != moecommTraceDirNone &&
      (s.kind == moecommTraceKindUnpack || isStep(s.kind)))
    return {200 + 200 * dir - (s.kind == moecommTraceKindUnpack ? 1 : 2),
            d + " " + kindName(s.kind)};
  if (s.kind == moecommTraceKindAllToAll)
    return {500, "all_to_all"};
  if (s.kind == moecommTraceKindWait)
    return {502, "wait"};
  if (s.kind == kComputeKind)
    return {503, "compute"};
  if (s.kind == moecommTraceKindCall)
    return {504, "call"};
  return {501, kindName(s.kind)}; // compiled code's FP8 casts
}

/// Spans of one rank (events, then compute slices), on the run clock. The
/// compute slices are the complement of the runtime's call spans inside an
/// iteration.
std::vector<Span> spansOf(const RankTimeline &rt) {
  std::vector<Span> spans, calls;
  std::vector<double> layoutStarts;
  for (const moecommTraceEvent_t &e : rt.events) {
    Span s{e.kind,     e.direction, e.stage,
           e.scope,    e.startSec,  std::max(e.endSec, e.startSec),
           e.bytes};
    spans.push_back(s);
    if (e.kind == moecommTraceKindCall)
      calls.push_back(s);
    if (e.kind == moecommTraceKindLayout)
      layoutStarts.push_back(s.start);
  }
  std::sort(calls.begin(), calls.end(),
            [](const Span &a, const Span &b) { return a.start < b.start; });
  std::sort(layoutStarts.begin(), layoutStarts.end());
  auto createsLayout = [&](const Span &call) {
    auto it = std::lower_bound(layoutStarts.begin(), layoutStarts.end(),
                               call.start);
    return it != layoutStarts.end() && *it <= call.end;
  };
  // An iteration runs from a layout creation to the last runtime call
  // before the next one; inside it, the caller computes where its thread is
  // in no runtime call (the runtime's call spans; its collectives may be in
  // flight meanwhile, moved by the progress thread).
  double coveredUntil = -std::numeric_limits<double>::infinity();
  for (const Span &c : calls) {
    const bool layout = createsLayout(c);
    if (!layout && c.start > coveredUntil && std::isfinite(coveredUntil))
      spans.push_back({kComputeKind, moecommTraceDirNone, -1,
                       moecommScopeGlobal, coveredUntil, c.start, 0});
    coveredUntil = layout && c.start > coveredUntil
                       ? c.end
                       : std::max(coveredUntil, c.end);
  }
  return spans;
}

/// Microseconds from `t0`, rounded to nanoseconds.
double micros(double sec, double t0) {
  return std::round((sec - t0) * 1e9) / 1e3;
}

struct Placed {
  Span span;
  int tid;
};

/// Places every span on its track, a partial overlap on the next lane: on a
/// lane, spans are disjoint (or touch).
std::vector<Placed> place(const std::vector<Span> &spans,
                          std::map<int, std::string> &trackNames) {
  // By start, the longer first: a span nested in another follows it.
  std::vector<Span> order = spans;
  std::sort(order.begin(), order.end(), [](const Span &a, const Span &b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::map<int, std::vector<double>> laneEnds; // track -> end of each lane
  std::vector<Placed> out;
  for (const Span &s : order) {
    auto [track, name] = trackOf(s);
    std::vector<double> &ends = laneEnds[track];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > s.start)
      ++lane;
    if (lane == ends.size())
      ends.push_back(s.end);
    else
      ends[lane] = s.end;
    const int tid = track + kLane * static_cast<int>(lane);
    trackNames[tid] = lane ? formatv("{0} ({1})", name, lane + 1).str() : name;
    out.push_back({s, tid});
  }
  return out;
}

double earliest(ArrayRef<RankTimeline> ranks) {
  double t0 = std::numeric_limits<double>::infinity();
  for (const RankTimeline &rt : ranks)
    for (const moecommTraceEvent_t &e : rt.events)
      t0 = std::min(t0, e.startSec);
  return std::isfinite(t0) ? t0 : 0;
}

void writeJson(raw_ostream &os, ArrayRef<RankTimeline> ranks,
               const TimelineOutput &out) {
  const double t0 = earliest(ranks);
  json::OStream j(os);
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeObject("otherData", [&] {
      j.attribute("title", out.title);
      j.attribute("clock", "steady_clock; ts in microseconds from the "
                           "earliest event; MPI ranks aligned after a "
                           "barrier");
      j.attributeObject("dropped_events", [&] {
        for (const RankTimeline &rt : ranks)
          j.attribute(std::to_string(rt.rank), rt.dropped);
      });
    });
    j.attributeArray("traceEvents", [&] {
      for (const RankTimeline &rt : ranks) {
        auto meta = [&](StringRef what, std::optional<int> tid, StringRef key,
                        json::Value v) {
          j.object([&] {
            j.attribute("ph", "M");
            j.attribute("name", what);
            j.attribute("pid", rt.rank);
            if (tid)
              j.attribute("tid", *tid);
            j.attributeObject("args", [&] { j.attribute(key, std::move(v)); });
          });
        };
        meta("process_name", std::nullopt, "name",
             formatv("rank {0}", rt.rank).str());
        meta("process_sort_index", std::nullopt, "sort_index", rt.rank);
        std::map<int, std::string> tracks;
        std::vector<Placed> placed = place(spansOf(rt), tracks);
        for (const auto &[tid, name] : tracks) {
          meta("thread_name", tid, "name", name);
          meta("thread_sort_index", tid, "sort_index", tid);
        }
        for (const Placed &p : placed) {
          const double ts = micros(p.span.start, t0);
          j.object([&] {
            j.attribute("name", kindName(p.span.kind));
            j.attribute("cat",
                        p.span.kind == kComputeKind ? "caller" : "runtime");
            j.attribute("ph", "X");
            j.attribute("pid", rt.rank);
            j.attribute("tid", p.tid);
            j.attribute("ts", ts);
            j.attribute("dur", std::max(0.0, micros(p.span.end, t0) - ts));
            j.attributeObject("args", [&] {
              j.attribute("bytes", p.span.bytes);
              j.attribute("scope", scopeName(p.span.scope));
              j.attribute("direction", directionName(p.span.direction));
              j.attribute("stage", p.span.stage);
            });
          });
        }
      }
    });
  });
  os << "\n";
}

/// The PNG's kinds: name, colour, lane (0 exchanges, 1 the rank's own row
/// work, 2 the caller: runtime calls, compute and waits, drawn in this order
/// so that a wait covers its call). Whole dispatch / combine spans are left
/// out: they cover their steps.
struct PngKind {
  int kind;
  const char *color;
  int lane;
};
constexpr PngKind kPngKinds[] = {
    {moecommTraceKindExchange, "#d62728", 0},
    {moecommTraceKindAllToAll, "#ff7f0e", 0},
    {moecommTraceKindLayout, "#7f7f7f", 1},
    {moecommTraceKindPack, "#1f77b4", 1},
    {moecommTraceKindReduce, "#9467bd", 1},
    {moecommTraceKindQuantize, "#e377c2", 1},
    {moecommTraceKindUnpack, "#17becf", 1},
    {moecommTraceKindCall, "#8c564b", 2},
    {kComputeKind, "#2ca02c", 2},
    {moecommTraceKindWait, "#bcbd22", 2},
};

Error writePng(ArrayRef<RankTimeline> ranks, const TimelineOutput &out) {
  const double t0 = earliest(ranks);
  SmallString<256> png(out.pngPath);
  sys::fs::make_absolute(png);
  const std::string dat = (png + ".dat").str(), gp = (png + ".gp").str();
  // Boxes per kind, one data block (index) each: x y dx dy (ms, rank).
  std::vector<int> drawn;
  int maxRank = 0;
  if (Error e = writeOutputFile(out.option, dat, [&](raw_ostream &d) {
        for (const PngKind &k : kPngKinds) {
          std::string block;
          raw_string_ostream b(block);
          for (const RankTimeline &rt : ranks) {
            maxRank = std::max(maxRank, rt.rank);
            for (const Span &s : spansOf(rt))
              if (s.kind == k.kind) {
                const double a = (s.start - t0) * 1e3, z = (s.end - t0) * 1e3;
                b << formatv("{0} {1} {2} {3}\n", (a + z) / 2,
                             rt.rank + 0.3 * (k.lane - 1), (z - a) / 2, 0.13);
              }
          }
          if (block.empty())
            continue;
          d << "# " << kindName(k.kind) << "\n" << block << "\n\n";
          drawn.push_back(static_cast<int>(&k - kPngKinds));
        }
      }))
    return e;
  Expected<std::string> program = findGnuplot(out.option, out.gnuplot);
  if (!program)
    return program.takeError();
  if (Error e = writeOutputFile(out.option, gp, [&](raw_ostream &g) {
        g << "# Written by moecomm (Timeline.cpp); data in "
          << gnuplotComment(dat) << "\n";
        g << formatv("set terminal {0} size 1400,{1} noenhanced font "
                     "\"sans,10\"\n",
                     pngTerminal(*program), 160 + 60 * (maxRank + 1));
        g << "set output " << gnuplotString(png) << "\n";
        g << "set title " << gnuplotString(out.title) << "\n";
        g << "set xlabel 'ms (per rank, top to bottom: exchanges, row work, "
             "calls, compute and waits)'\n";
        g << formatv("set yrange [{0}:-0.6]\n", maxRank + 0.6);
        g << "set ytics (";
        for (int r = 0; r <= maxRank; ++r)
          g << (r ? ", " : "") << formatv("'rank {0}' {0}", r);
        g << ")\nset grid xtics\nset key outside right top\n"
             "set style fill solid 1.0 noborder\n";
        if (drawn.empty()) {
          g << "set xrange [0:1]\nplot 1/0 notitle\n";
          return;
        }
        g << "plot ";
        for (size_t i = 0; i < drawn.size(); ++i) {
          const PngKind &k = kPngKinds[drawn[i]];
          g << (i ? ", \\\n     " : "")
            << formatv("{0} index {1} using 1:2:3:4 with boxxyerror lc rgb "
                       "'{2}' title '{3}'",
                       gnuplotString(dat), i, k.color, kindName(k.kind));
        }
        g << "\n";
      }))
    return e;
  return runGnuplot(*program, gp);
}

} // namespace

Error startTimeline(moecommComm_t comm) {
  return runtimeError(moecommCommSetTrace(comm, 1), comm,
                      "moecommCommSetTrace");
}

Expected<RankTimeline> readTimeline(moecommComm_t comm) {
  RankTimeline rt;
  int64_t n = 0;
  if (Error e = runtimeError(moecommCommRank(comm, &rt.rank), comm,
                             "moecommCommRank"))
    return std::move(e);
  if (Error e = runtimeError(moecommCommGetTrace(comm, nullptr, 0, &n), comm,
                             "moecommCommGetTrace"))
    return std::move(e);
  rt.events.resize(static_cast<size_t>(n));
  if (Error e = runtimeError(moecommCommGetTrace(comm, rt.events.data(), n, &n),
                             comm, "moecommCommGetTrace"))
    return std::move(e);
  if (Error e = runtimeError(moecommCommGetTraceDropped(comm, &rt.dropped),
                             comm, "moecommCommGetTraceDropped"))
    return std::move(e);
  return rt;
}

Expected<std::vector<RankTimeline>> gatherTimelines(const MpiWorld &world,
                                                    const RankTimeline &mine) {
#ifdef MOECOMM_HAVE_MPI
  auto stamp = [] {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  bool ok = MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS;
  // {event count, dropped, clock stamp} per rank; counts are at most
  // MOECOMM_TRACE_MAX_EVENTS, exact in a double.
  double head[3] = {static_cast<double>(mine.events.size()),
                    static_cast<double>(mine.dropped), stamp()};
  std::vector<double> heads(world.rank == 0 ? 3 * world.size : 0);
  ok = ok && MPI_Gather(head, 3, MPI_DOUBLE, heads.data(), 3, MPI_DOUBLE, 0,
                        MPI_COMM_WORLD) == MPI_SUCCESS;
  constexpr int kTag = 0x7ace;
  const int eventBytes = static_cast<int>(sizeof(moecommTraceEvent_t));
  std::vector<RankTimeline> all;
  if (world.rank != 0) {
    ok = ok && MPI_Send(mine.events.data(),
                        static_cast<int>(mine.events.size()) * eventBytes,
                        MPI_BYTE, 0, kTag, MPI_COMM_WORLD) == MPI_SUCCESS;
  } else {
    all.resize(world.size);
    for (int r = 0; r < world.size && ok; ++r) {
      RankTimeline &rt = all[r];
      rt.rank = r;
      rt.dropped = static_cast<int64_t>(heads[3 * r + 1]);
      if (r == 0) {
        rt.events = mine.events;
      } else {
        rt.events.resize(static_cast<size_t>(heads[3 * r]));
        ok =
            MPI_Recv(rt.events.data(),
                     static_cast<int>(rt.events.size()) * eventBytes, MPI_BYTE,
                     r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS;
      }
      const double shift = heads[3 * r + 2] - heads[2];
      for (moecommTraceEvent_t &e : rt.events) {
        e.startSec -= shift;
        e.endSec -= shift;
      }
    }
  }
  if (!ok)
    return systemError("MPI failed while gathering the ranks' timelines");
  return all;
#else
  (void)world;
  (void)mine;
  return inputError("gathering timelines needs MPI; this build has none");
#endif
}

std::string timelinePngPath(StringRef jsonPath) {
  SmallString<256> png(jsonPath);
  if (sys::path::extension(png) == ".json")
    sys::path::replace_extension(png, ".png");
  else
    png += ".png";
  return png.str().str();
}

Error writeTimeline(ArrayRef<RankTimeline> ranks, const TimelineOutput &out) {
  std::vector<RankTimeline> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const RankTimeline &a, const RankTimeline &b) {
              return a.rank < b.rank;
            });
  if (!out.jsonPath.empty())
    if (Error e =
            writeOutputFile(out.option, out.jsonPath, [&](raw_ostream &os) {
              writeJson(os, sorted, out);
            }))
      return e;
  if (!out.pngPath.empty())
    return writePng(sorted, out);
  return Error::success();
}

} // namespace moecomm::workload
