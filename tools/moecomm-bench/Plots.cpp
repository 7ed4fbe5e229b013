//===- Plots.cpp - PNG plots of a sweep with gnuplot ----------------------===//

#include "Plots.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/Gnuplot.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <iterator>
#include <map>
#include <set>
#include <tuple>

using namespace llvm;

namespace moecomm::bench {

using workload::gnuplotComment;
using workload::gnuplotString;

namespace {

struct Point {
  int ranks;
  double value;
};

/// One line of a panel.
struct Series {
  std::string title;
  const char *color; ///< "#rrggbb"
  int dash;
  std::vector<Point> points;
};

struct Panel {
  std::string title;
  std::vector<Series> series;
};

/// Writes `panels` as gnuplot data blocks (one index per series) and a
/// script that draws them side by side into `png`. Returns the script path.
Expected<std::string>
writeFigure(const std::string &dir, const std::string &base,
            const std::string &terminal, const std::string &title,
            const std::string &ylabel, const std::vector<Panel> &panels) {
  SmallString<256> dat(dir), gp(dir);
  sys::path::append(dat, base + ".dat");
  sys::path::append(gp, base + ".gp");
  int index = 0;
  std::vector<std::vector<int>> indices;
  if (Error e = workload::writeOutputFile("--plots", dat, [&](raw_ostream &d) {
        for (const Panel &p : panels) {
          indices.emplace_back();
          for (const Series &s : p.series) {
            d << "# " << gnuplotComment(p.title) << ": "
              << gnuplotComment(s.title) << "\n# ranks value\n";
            for (const Point &pt : s.points)
              d << pt.ranks << " " << shortestDouble(pt.value) << "\n";
            d << "\n\n";
            indices.back().push_back(index++);
          }
        }
      }))
    return std::move(e);
  if (Error e = workload::writeOutputFile("--plots", gp, [&](raw_ostream &g) {
        // Every string from the user (file names, config and model names,
        // routing specs) goes through gnuplotString.
        g << "# Written by moecomm-bench; data in " << gnuplotComment(base)
          << ".dat\n";
        g << formatv(
            "set terminal {0} size {1},520 noenhanced font \"sans,10\"\n",
            terminal, 120 + 460 * panels.size());
        g << "set output " << gnuplotString(base + ".png") << "\n";
        g << formatv("set multiplot layout 1,{0} title {1}\n", panels.size(),
                     gnuplotString(title));
        g << "set logscale x 2\nset logscale y 10\nset format y \"%g\"\n"
             "set xlabel \"ranks\"\nset grid\nset key top left\n";
        g << "set ylabel " << gnuplotString(ylabel) << "\n";
        for (size_t p = 0; p < panels.size(); ++p) {
          g << "set title " << gnuplotString(panels[p].title) << "\n";
          g << "plot ";
          for (size_t s = 0; s < panels[p].series.size(); ++s) {
            const Series &se = panels[p].series[s];
            g << (s ? ", \\\n     " : "")
              << formatv("{0} index {1} using 1:2 with linespoints lc rgb "
                         "'{2}' dt {3} pt 7 ps 0.6 lw 1.5 title {4}",
                         gnuplotString(base + ".dat"), indices[p][s], se.color,
                         se.dash, gnuplotString(se.title));
          }
          g << "\n";
        }
        g << "unset multiplot\n";
      }))
    return std::move(e);
  return gp.str().str();
}

} // namespace

Error checkPlottable(const std::vector<SweepSpec> &plan) {
  // The series writePlots draws, keyed as there, with the rank counts the
  // plan gives each (across sweeps: a series may span two).
  using SeriesKey = std::tuple<std::string, int, int64_t, std::string,
                               workload::PayloadType, moecommStrategy_t>;
  std::map<SeriesKey, std::set<int>> ranks;
  for (const SweepSpec &sw : plan)
    for (const std::string &config : sw.configs)
      for (const Cluster &topo : sw.topologies)
        for (const workload::RoutingDist &routing : sw.routings)
          for (workload::PayloadType dtype : sw.dtypes)
            for (moecommStrategy_t strategy : sw.strategies)
              if (strategy != moecommAuto) {
                std::set<int> &w = ranks[{config, topo.ranksPerNode, sw.tokens,
                                          routing.spec, dtype, strategy}];
                w.insert(topo.ranks());
                if (w.size() >= 2)
                  return Error::success();
              }
  return workload::inputError(
      "--plots has nothing to plot: a plot needs a fixed strategy at two or "
      "more rank counts with the same ranks per node (e.g. --topologies "
      "1x8,2x8)");
}

bool isPlotFileName(StringRef fileName) {
  return fileName.ends_with(".dat") || fileName.ends_with(".gp") ||
         fileName.ends_with(".png");
}

Expected<std::string> preparePlots(const std::string &dir,
                                   const std::string &gnuplot) {
  // create_directories accepts an existing file, so the kind is checked too.
  std::error_code ec = sys::fs::create_directories(dir);
  if (!ec && !sys::fs::is_directory(dir))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (!ec)
    ec = sys::fs::access(dir, sys::fs::AccessMode::Write);
  if (ec)
    return workload::systemError(
        formatv("--plots {0}: {1}", dir, ec.message()));
  if (!gnuplot.empty()) {
    if (!sys::fs::can_execute(gnuplot))
      return workload::systemError(
          formatv("--gnuplot {0} is not an executable program", gnuplot));
    return gnuplot;
  }
  ErrorOr<std::string> found = sys::findProgramByName("gnuplot");
  if (!found)
    return workload::systemError(
        "--plots needs gnuplot (Debian: apt-get install "
        "gnuplot-nox); not found on PATH");
  return *found;
}

Expected<std::vector<std::string>> writePlots(const BenchReport &report,
                                              const std::string &dir,
                                              const std::string &program) {
  std::vector<std::string> pngs;
  // (config, G, tokens) -> routing -> (dtype, strategy) -> ranks -> cell.
  using FigKey = std::tuple<std::string, int, int64_t>;
  std::map<FigKey, std::vector<std::string>> routingOrder;
  std::map<
      FigKey,
      std::map<std::string,
               std::map<std::pair<workload::PayloadType, moecommStrategy_t>,
                        std::map<int, const Cell *>>>>
      figs;
  for (const Cell &c : report.cells) {
    if (c.strategy == moecommAuto)
      continue;
    FigKey k{c.config, c.cluster.ranksPerNode, c.tokens};
    std::vector<std::string> &order = routingOrder[k];
    if (std::find(order.begin(), order.end(), c.routing) == order.end())
      order.push_back(c.routing);
    figs[k][c.routing][{c.dtype, c.strategy}][c.cluster.ranks()] = &c;
  }

  // A figure needs a series with two or more rank counts to draw a line.
  for (auto it = figs.begin(); it != figs.end();) {
    bool plottable = false;
    for (const auto &[r, bySeries] : it->second)
      for (const auto &[s, byRanks] : bySeries)
        plottable = plottable || byRanks.size() >= 2;
    it = plottable ? std::next(it) : figs.erase(it);
  }
  if (figs.empty())
    return pngs;

  SmallString<256> absDir(dir);
  sys::fs::make_absolute(absDir);

  const std::string terminal = workload::pngTerminal(program);

  static const std::pair<moecommStrategy_t, const char *> colors[] = {
      {moecommPerExpert, "#d62728"},
      {moecommFlat, "#2ca02c"},
      {moecommHierarchical, "#1f77b4"}};
  auto dashOf = [](workload::PayloadType t) {
    return t == workload::PayloadType::BF16 ? 1
           : workload::isFp8(t)             ? 2
                                            : 3;
  };

  for (const auto &[k, byRouting] : figs) {
    const auto &[config, G, tokens] = k;
    const Cell &sample =
        *byRouting.begin()->second.begin()->second.begin()->second;
    const int preset = plotPreset(report, sample.cluster);
    std::vector<Panel> bytesPanels, timePanels;
    for (const std::string &routing : routingOrder[k]) {
      Panel bp{routing, {}}, tp{routing, {}};
      for (const auto &[key, byRanks] : byRouting.at(routing)) {
        const auto &[dtype, strategy] = key;
        const char *color = "#000000";
        for (const auto &[s, c] : colors)
          if (s == strategy)
            color = c;
        std::string title = (std::string(strategyName(strategy)) + " " +
                             workload::payloadTypeName(dtype))
                                .str();
        Series bs{title, color, dashOf(dtype), {}};
        Series ts = bs;
        for (const auto &[W, c] : byRanks) {
          bs.points.push_back({W, c->interBytes() / 1e9});
          if (preset >= 0)
            ts.points.push_back({W, c->models[preset].time.totalSec() * 1e3});
        }
        bp.series.push_back(bs);
        tp.series.push_back(ts);
      }
      bytesPanels.push_back(bp);
      timePanels.push_back(tp);
    }
    const std::string base = formatv("{0}-g{1}-t{2}", config, G, tokens).str();
    const std::string model = sample.model;
    struct Fig {
      std::string name, title, ylabel;
      const std::vector<Panel> *panels;
    };
    std::vector<Fig> todo = {
        {base + "-inter-node-bytes",
         formatv("{0}: exact inter-node bytes of dispatch + combine vs ranks "
                 "({1} ranks per node, {2} tokens per rank)",
                 model, G, tokens),
         "inter-node GB (exact count)", &bytesPanels}};
    if (preset >= 0)
      todo.push_back(
          {base + "-modelled-time",
           formatv("{0}: MODELLED dispatch + combine time vs ranks on {1} "
                   "links ({2} ranks per node, {3} tokens per rank)",
                   model, report.presets[preset].name, G, tokens),
           formatv("modelled ms ({0})", report.presets[preset].name),
           &timePanels});
    for (const Fig &f : todo) {
      Expected<std::string> script = writeFigure(
          absDir.str().str(), f.name, terminal, f.title, f.ylabel, *f.panels);
      if (!script)
        return script.takeError();
      if (Error e = workload::runGnuplot(program, *script, absDir))
        return std::move(e);
      SmallString<256> png(dir);
      sys::path::append(png, f.name + ".png");
      pngs.push_back(png.str().str());
    }
  }
  return pngs;
}

} // namespace moecomm::bench
