//===- Plots.cpp - PNG plots of a sweep with gnuplot ----------------------===//

#include "Plots.h"
#include "ToolSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <tuple>

using namespace llvm;

namespace moecomm::bench {

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
  if (Error e = run::writeOutputFile("--plots", dat, [&](raw_ostream &d) {
        for (const Panel &p : panels) {
          indices.emplace_back();
          for (const Series &s : p.series) {
            d << "# " << p.title << ": " << s.title << "\n# ranks value\n";
            for (const Point &pt : s.points)
              d << pt.ranks << " " << shortestDouble(pt.value) << "\n";
            d << "\n\n";
            indices.back().push_back(index++);
          }
        }
      }))
    return std::move(e);
  if (Error e = run::writeOutputFile("--plots", gp, [&](raw_ostream &g) {
        g << "# Written by moecomm-bench; data in " << base << ".dat\n";
        g << formatv(
            "set terminal {0} size {1},520 noenhanced font \"sans,10\"\n",
            terminal, 120 + 460 * panels.size());
        g << "set output '" << base << ".png'\n";
        g << formatv("set multiplot layout 1,{0} title \"{1}\"\n",
                     panels.size(), title);
        g << "set logscale x 2\nset logscale y 10\nset format y \"%g\"\n"
             "set xlabel \"ranks\"\nset grid\nset key top left\n";
        g << "set ylabel \"" << ylabel << "\"\n";
        for (size_t p = 0; p < panels.size(); ++p) {
          g << "set title \"" << panels[p].title << "\"\n";
          g << "plot ";
          for (size_t s = 0; s < panels[p].series.size(); ++s) {
            const Series &se = panels[p].series[s];
            g << (s ? ", \\\n     " : "")
              << formatv("'{0}.dat' index {1} using 1:2 with linespoints lc "
                         "rgb '{2}' dt {3} pt 7 ps 0.6 lw 1.5 title \"{4}\"",
                         base, indices[p][s], se.color, se.dash, se.title);
          }
          g << "\n";
        }
        g << "unset multiplot\n";
      }))
    return std::move(e);
  return gp.str().str();
}

} // namespace

Expected<std::vector<std::string>> writePlots(const BenchReport &report,
                                              const std::string &dir,
                                              const std::string &gnuplot) {
  std::vector<std::string> pngs;
  // (config, G, tokens) -> routing -> (dtype, strategy) -> ranks -> cell.
  using FigKey = std::tuple<std::string, int, int64_t>;
  std::map<FigKey, std::vector<std::string>> routingOrder;
  std::map<FigKey,
           std::map<std::string,
                    std::map<std::pair<run::PayloadType, moecommStrategy_t>,
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

  bool any = false;
  for (const auto &[k, byRouting] : figs)
    for (const auto &[r, bySeries] : byRouting)
      for (const auto &[s, byRanks] : bySeries)
        any = any || byRanks.size() >= 2;
  if (!any)
    return pngs;

  std::string program = gnuplot;
  if (!program.empty() && !sys::fs::can_execute(program))
    return run::systemError(
        formatv("--gnuplot {0} is not an executable program", program));
  if (program.empty()) {
    ErrorOr<std::string> found = sys::findProgramByName("gnuplot");
    if (!found)
      return run::systemError("--plots needs gnuplot (Debian: apt-get install "
                              "gnuplot-nox); not found on PATH");
    program = *found;
  }
  if (std::error_code ec = sys::fs::create_directories(dir))
    return run::systemError(
        formatv("cannot create --plots directory {0}: {1}", dir, ec.message()));
  SmallString<256> absDir(dir);
  sys::fs::make_absolute(absDir);

  // pngcairo when this gnuplot has it (gnuplot-nox does), else libgd's png.
  std::string terminal = "png";
  {
    StringRef args[] = {program, "-e", "set terminal pngcairo"};
    std::optional<StringRef> quiet[] = {std::nullopt, StringRef(""),
                                        StringRef("")};
    if (sys::ExecuteAndWait(program, args, std::nullopt, quiet) == 0)
      terminal = "pngcairo";
  }

  static const std::pair<moecommStrategy_t, const char *> colors[] = {
      {moecommPerExpert, "#d62728"},
      {moecommFlat, "#2ca02c"},
      {moecommHierarchical, "#1f77b4"}};
  auto dashOf = [](run::PayloadType t) {
    return t == run::PayloadType::BF16 ? 1 : t == run::PayloadType::FP8 ? 2 : 3;
  };

  for (const auto &[k, byRouting] : figs) {
    const auto &[config, G, tokens] = k;
    bool plottable = false;
    for (const auto &[r, bySeries] : byRouting)
      for (const auto &[s, byRanks] : bySeries)
        plottable = plottable || byRanks.size() >= 2;
    if (!plottable)
      continue;
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
                             run::payloadTypeName(dtype))
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
      std::string cd = formatv("cd '{0}'", absDir).str();
      StringRef args[] = {program, "-e", cd, *script};
      std::string err;
      if (sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0, &err) != 0)
        return run::systemError(
            formatv("gnuplot failed on {0}{1}", *script,
                    err.empty() ? std::string() : ": " + err));
      SmallString<256> png(dir);
      sys::path::append(png, f.name + ".png");
      pngs.push_back(png.str().str());
    }
  }
  return pngs;
}

} // namespace moecomm::bench
