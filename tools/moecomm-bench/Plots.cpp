//===- Plots.cpp - PNG plots of a sweep with gnuplot ----------------------===//

#include "Plots.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <iterator>
#include <map>
#include <set>
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

/// `text` as a gnuplot string expression that is exactly `text`: in single
/// quotes, where gnuplot expands no backslash escapes, backquoted commands or
/// macros (a quote is written twice), and with each control character, which
/// cannot stand in a script line, joined on as a double-quoted octal escape:
/// we"ir'd -> 'we"ir''d', a<LF>b -> 'a'."\012".'b'.
std::string gnuplotString(StringRef text) {
  std::string out = "'";
  for (unsigned char ch : text) {
    if (ch == '\'') {
      out += "''";
    } else if (ch < 0x20 || ch == 0x7f) {
      char escape[16];
      std::snprintf(escape, sizeof(escape), "'.\"\\%03o\".'", ch);
      out += escape;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "'";
}

/// `text` for a '#' comment line of a gnuplot script or data file: a line
/// break would end the comment, so control characters become spaces.
std::string commentText(StringRef text) {
  std::string out = text.str();
  for (char &ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      ch = ' ';
  return out;
}

/// The last non-empty line of the file `path` ("" when none or unreadable).
std::string lastLine(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  StringRef text = (*buffer)->getBuffer().rtrim();
  return text.substr(text.find_last_of("\r\n") + 1).trim().str();
}

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
            d << "# " << commentText(p.title) << ": " << commentText(s.title)
              << "\n# ranks value\n";
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
        g << "# Written by moecomm-bench; data in " << commentText(base)
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
  auto dashOf = [](workload::PayloadType t) {
    return t == workload::PayloadType::BF16  ? 1
           : t == workload::PayloadType::FP8 ? 2
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
      std::string cd = "cd " + gnuplotString(absDir);
      StringRef args[] = {program, "-e", cd, *script};
      // gnuplot's messages span lines (the script line, a caret, the
      // error): its stderr goes to a file, and the error line quotes the last.
      SmallString<128> log;
      if (std::error_code ec =
              sys::fs::createTemporaryFile("moecomm-bench-gnuplot", "log", log))
        return workload::systemError(
            formatv("cannot create a temporary file: {0}", ec.message()));
      FileRemover removeLog(log);
      std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                              StringRef(log)};
      std::string err;
      if (sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0, 0,
                              &err) != 0) {
        std::string why = lastLine(log);
        if (why.empty())
          why = err;
        return workload::systemError(formatv("gnuplot failed on {0}{1}",
                                             *script,
                                             why.empty() ? "" : ": " + why));
      }
      SmallString<256> png(dir);
      sys::path::append(png, f.name + ".png");
      pngs.push_back(png.str().str());
    }
  }
  return pngs;
}

} // namespace moecomm::bench
