//===- ToolIO.cpp - bounded input and one-write error lines ---------------===//

#include "ToolIO.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstring>
#include <system_error>
#include <unistd.h>

using namespace llvm;

namespace moecomm {
namespace run {

Expected<std::string> readBoundedFile(StringRef path, bool allowStdin) {
  auto fail = [](const Twine &why) {
    return createStringError(std::make_error_code(std::errc::invalid_argument),
                             why);
  };
  const bool stdinInput = allowStdin && path == "-";
  int fd = 0;
  if (!stdinInput) {
    // A FIFO without a writer blocks here, as for any reader of a FIFO.
    if (std::error_code ec = sys::fs::openFileForRead(path, fd))
      return fail(ec.message());
  }
  llvm::scope_exit closeFd([&] {
    if (!stdinInput)
      ::close(fd);
  });
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(fd, status))
    return fail(ec.message());
  if (status.type() == sys::fs::file_type::directory_file)
    return fail("it is a directory");
  const std::string limit = formatv("{0} GiB", kMaxInputBytes >> 30).str();
  const bool regular = status.type() == sys::fs::file_type::regular_file;
  if (regular && status.getSize() > kMaxInputBytes)
    return fail(formatv("{0} bytes, more than the limit of {1}",
                        status.getSize(), limit));
  // Read in chunks whatever the kind: pipes and devices have no size, and a
  // regular file may grow while it is read.
  std::string text;
  if (regular)
    text.reserve(status.getSize());
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail(std::strerror(errno));
    }
    if (n == 0)
      break;
    if (text.size() + static_cast<size_t>(n) > kMaxInputBytes)
      return fail(formatv("more than the limit of {0}", limit));
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

void writeStderr(StringRef text) {
  const char *data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(2, data, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return; // stderr is gone: nowhere left to say so
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void printErrorLine(StringRef tool, StringRef message) {
  // Newlines fold to spaces; any other control character (a NUL or an
  // escape sequence from an input file) is escaped, never written raw.
  std::string line;
  for (char c : (tool + ": error: " + message).str()) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r')
      line.push_back(' ');
    else if (u < 0x20 || u == 0x7f)
      line += formatv("\\x{0:x-2}", static_cast<unsigned>(u)).str();
    else
      line.push_back(c);
  }
  line.push_back('\n');
  writeStderr(line);
}

} // namespace run
} // namespace moecomm
