//===- ToolIO.cpp - bounded input and one-line errors ---------------------===//

#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <unistd.h>

using namespace llvm;

namespace moecomm::workload {

Error inputError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

Error systemError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::io_error), message);
}

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

Expected<std::string> readInputFile(StringRef path, StringRef what,
                                    bool allowStdin) {
  Expected<std::string> text = readBoundedFile(path, allowStdin);
  if (!text)
    return inputError(formatv("{0}: cannot read {1}: {2}", path, what,
                              toString(text.takeError())));
  return text;
}

int reportError(StringRef tool, Error error, bool print) {
  int code = 3;
  std::string message;
  handleAllErrors(std::move(error), [&](const ErrorInfoBase &info) {
    if (info.convertToErrorCode() ==
        std::make_error_code(std::errc::invalid_argument))
      code = 2;
    message = info.message();
  });
  if (print)
    printErrorLine(tool, message);
  return code;
}

int finishStdout(StringRef tool, int status) {
  outs().flush();
  if (!outs().has_error())
    return status;
  printErrorLine(tool, "cannot write to stdout: " + outs().error().message());
  outs().clear_error();
  return 3;
}

bool parseCommandLine(int argc, char **argv, StringRef overview,
                      std::string &error) {
  std::string text;
  bool ok;
  {
    raw_string_ostream errStream(text);
    errs().flush();
    std::FILE *capture = std::tmpfile();
    const int saved = capture ? ::dup(2) : -1;
    if (saved >= 0)
      ::dup2(::fileno(capture), 2);
    ok = cl::ParseCommandLineOptions(argc, argv, overview, &errStream);
    errs().flush();
    if (saved >= 0) {
      ::dup2(saved, 2);
      ::close(saved);
      std::rewind(capture);
      char buffer[4096];
      size_t n;
      while ((n = std::fread(buffer, 1, sizeof(buffer), capture)) > 0)
        text.append(buffer, n);
    }
    if (capture)
      std::fclose(capture);
  }
  if (ok)
    return true;
  // One line: llvm::cl may add "Did you mean" hints on more lines.
  StringRef tool = sys::path::filename(argv[0]);
  SmallVector<StringRef, 4> lines;
  StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef l : lines) {
    l = l.trim();
    if (l.starts_with(tool) && l.drop_front(tool.size()).starts_with(": "))
      l = l.drop_front(tool.size() + 2);
    error += (error.empty() ? "" : " ") + l.str();
  }
  if (error.empty())
    error = "invalid command line";
  return false;
}

Expected<json::Value> parseUserJson(StringRef text, int maxDepth) {
  int depth = 0, line = 1;
  size_t lineStart = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return createStringError(
            inconvertibleErrorCode(),
            formatv("[{0}:{1}, byte={2}]: nested deeper than {3} levels", line,
                    i - lineStart + 1, i, maxDepth));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return json::parse(text);
}

Expected<json::Value> readUserJsonFile(StringRef path, StringRef what) {
  Expected<std::string> text = readInputFile(path, what);
  if (!text)
    return text.takeError();
  Expected<json::Value> parsed = parseUserJson(*text);
  if (!parsed)
    return inputError(formatv("{0}: malformed JSON at {1}", path,
                              toString(parsed.takeError())));
  return parsed;
}

} // namespace moecomm::workload
