//===- Progress.cpp - progress line on stderr for long runs ---------------===//

#include "moecomm/Workload/Progress.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

namespace moecomm::workload {

Progress::Progress(llvm::StringRef tool, bool enabled)
    : tool(tool.str()), enabled(enabled),
      tty(llvm::sys::Process::StandardErrIsDisplayed()), start(Clock::now()),
      last(start) {}

void Progress::update(const std::string &what, bool lastStep) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double sinceLast = std::chrono::duration<double>(now - last).count();
  if (elapsed < 1.0 || (sinceLast < 1.0 && !lastStep))
    return;
  last = now;
  std::string line =
      llvm::formatv("{0}: {1} ({2:f1} s)", tool, what, elapsed).str();
  if (tty) {
    writeStderr("\r" + line + "\x1b[K");
    lineOpen = true;
  } else {
    writeStderr(line + "\n");
  }
}

void Progress::finish() {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (lineOpen)
    writeStderr("\n");
  lineOpen = false;
}

} // namespace moecomm::workload
