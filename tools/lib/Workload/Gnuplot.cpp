//===- Gnuplot.cpp - driving Debian's gnuplot for PNGs --------------------===//

#include "moecomm/Workload/Gnuplot.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdio>
#include <optional>

using namespace llvm;

namespace moecomm::workload {

namespace {

bool isControl(unsigned char ch) { return ch < 0x20 || ch == 0x7f; }

/// The last non-empty line of the file `path` ("" when none or unreadable):
/// gnuplot's messages span lines (the script line, a caret, the error).
std::string lastLineOf(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  StringRef text = (*buffer)->getBuffer().rtrim();
  return text.substr(text.find_last_of("\r\n") + 1).trim().str();
}

} // namespace

std::string gnuplotString(StringRef text) {
  std::string out = "'";
  for (unsigned char ch : text) {
    if (ch == '\'')
      out += "''";
    else if (isControl(ch)) {
      char escape[16];
      std::snprintf(escape, sizeof(escape), "'.\"\\%03o\".'", ch);
      out += escape;
    } else
      out += static_cast<char>(ch);
  }
  return out + "'";
}

std::string gnuplotComment(StringRef text) {
  std::string out = text.str();
  for (char &ch : out)
    if (isControl(static_cast<unsigned char>(ch)))
      ch = ' ';
  return out;
}

Expected<std::string> findGnuplot(StringRef option,
                                  const std::string &program) {
  if (!program.empty()) {
    if (!sys::fs::can_execute(program))
      return systemError(formatv(
          "{0}: gnuplot {1} is not an executable program", option, program));
    return program;
  }
  ErrorOr<std::string> found = sys::findProgramByName("gnuplot");
  if (!found)
    return systemError(formatv("{0} needs gnuplot for its PNG (Debian: "
                               "apt-get install gnuplot-nox); not found on "
                               "PATH",
                               option));
  return *found;
}

std::string pngTerminal(StringRef program) {
  StringRef args[] = {program, "-e", "set terminal pngcairo"};
  std::optional<StringRef> quiet[] = {std::nullopt, StringRef(""),
                                      StringRef("")};
  return sys::ExecuteAndWait(program, args, std::nullopt, quiet) == 0
             ? "pngcairo"
             : "png";
}

Error runGnuplot(StringRef program, StringRef script, StringRef directory) {
  SmallString<128> log;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("moecomm-gnuplot", "log", log))
    return systemError(
        formatv("cannot create a temporary file: {0}", ec.message()));
  FileRemover removeLog(log);
  // ExecuteAndWait starts the program in this process's directory; gnuplot's
  // own cd moves it before the script runs.
  std::string cd = directory.empty() ? "" : "cd " + gnuplotString(directory);
  SmallVector<StringRef, 4> args = {program};
  if (!directory.empty())
    args.append({"-e", cd});
  args.push_back(script);
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          StringRef(log)};
  std::string err;
  if (sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0, 0, &err) ==
      0)
    return Error::success();
  std::string why = lastLineOf(log);
  if (why.empty())
    why = err;
  return systemError(formatv("gnuplot failed on {0}{1}", script,
                             why.empty() ? "" : ": " + why));
}

} // namespace moecomm::workload
