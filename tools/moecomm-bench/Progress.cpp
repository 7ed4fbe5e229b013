//===- Progress.cpp - moecomm-bench's progress line on stderr -------------===//

#include "Progress.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

namespace moecomm::bench {

Progress::Progress(bool enabled)
    : enabled(enabled), tty(llvm::sys::Process::StandardErrIsDisplayed()),
      start(Clock::now()), last(start) {}

void Progress::update(long done, long total, const std::string &what) {
  if (!enabled)
    return;
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double sinceLast = std::chrono::duration<double>(now - last).count();
  if (elapsed < 1.0 || sinceLast < 1.0)
    return;
  last = now;
  std::string line = llvm::formatv("moecomm-bench: [{0}/{1}] {2} ({3:f0} s)",
                                   done, total, what, elapsed)
                         .str();
  if (tty) {
    llvm::errs() << "\r" << line << "\x1b[K";
    lineOpen = true;
  } else {
    llvm::errs() << line << "\n";
  }
  llvm::errs().flush();
}

void Progress::finish() {
  if (enabled && lineOpen)
    llvm::errs() << "\n";
  lineOpen = false;
}

} // namespace moecomm::bench
