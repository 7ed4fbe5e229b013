//===- ToolSupport.cpp - what moecomm-run and moecomm-bench share ---------===//

#include "ToolSupport.h"
#include "Routing.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unistd.h>

using namespace llvm;

namespace moecomm::run {

bool isReportingProcess() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *v = std::getenv(var))
      return StringRef(v) == "0";
  return true;
}

std::vector<std::string> dataDirs(const char *argv0, StringRef sub) {
  std::string exe =
      sys::fs::getMainExecutable(argv0, (void *)&isReportingProcess);
  SmallString<256> installed(sys::path::parent_path(exe));
  sys::path::append(installed, "..", "share", "moecomm", sub);
  SmallString<256> source(MOECOMM_TOOL_EXAMPLES_DIR);
  sys::path::append(source, sub);
  return {installed.str().str(), source.str().str()};
}

Expected<std::string> findTraceFile(const char *argv0, StringRef explicitFile) {
  if (!explicitFile.empty())
    return explicitFile.str();
  for (const std::string &dir : dataDirs(argv0, "data")) {
    SmallString<256> candidate(dir);
    sys::path::append(candidate, "expert_load_olmoe_mixtral.json");
    if (sys::fs::exists(candidate))
      return candidate.str().str();
  }
  return inputError(
      "cannot find expert_load_olmoe_mixtral.json; give --trace-file");
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

std::error_code replaceFile(StringRef path,
                            function_ref<void(raw_ostream &)> write) {
  // A link is followed: the file it names is replaced, as writing through
  // the link would. A target that is not a regular file (/dev/null,
  // /dev/full, a FIFO) is written in place: it cannot be renamed over.
  auto inPlace = [&]() {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    if (ec)
      return ec;
    write(os);
    os.close();
    ec = os.error();
    os.clear_error();
    return ec;
  };
  SmallString<256> target(path);
  sys::fs::file_status status;
  const bool exists = !sys::fs::status(path, status);
  if (exists) {
    if (status.type() != sys::fs::file_type::regular_file)
      return inPlace();
    if (std::error_code ec = sys::fs::real_path(path, target))
      return ec;
  }
  SmallString<256> model(target);
  model += ".tmp-%%%%%%%%";
  int fd = -1;
  SmallString<256> temp;
  if (std::error_code ec = sys::fs::createUniqueFile(model, fd, temp)) {
    // A writable file in a directory that takes no new file: written in
    // place, as before.
    if (exists && ec == std::errc::permission_denied)
      return inPlace();
    return ec;
  }
  std::error_code ec;
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    write(os);
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (!ec)
    ec = sys::fs::rename(temp, target);
  if (ec)
    sys::fs::remove(temp);
  return ec;
}

Error writeOutputFile(StringRef option, StringRef path,
                      function_ref<void(raw_ostream &)> write) {
  if (path != "-") {
    if (std::error_code ec = replaceFile(path, write))
      return systemError(formatv("{0} {1}: {2}", option, path, ec.message()));
    return Error::success();
  }
  write(outs());
  outs().flush();
  if (!outs().has_error())
    return Error::success();
  std::error_code ec = outs().error();
  outs().clear_error();
  return systemError(formatv("{0} {1}: {2}", option, path, ec.message()));
}

Error checkOutputFile(StringRef option, StringRef path) {
  if (path == "-")
    return Error::success();
  auto fail = [&](std::error_code ec) {
    return systemError(formatv("{0} {1}: {2}", option, path, ec.message()));
  };
  int fd = -1;
  if (sys::fs::exists(path)) {
    // Opened for appending: nothing of the file is lost if the run fails.
    if (std::error_code ec = sys::fs::openFileForWrite(
            path, fd, sys::fs::CD_OpenExisting, sys::fs::OF_Append))
      return fail(ec);
    ::close(fd);
    return Error::success();
  }
  // A file that does not exist yet: the directory must take a new file.
  SmallString<256> temp;
  if (std::error_code ec =
          sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp))
    return fail(ec);
  ::close(fd);
  sys::fs::remove(temp);
  return Error::success();
}

Error checkDistinctOutputs(ArrayRef<OutputPath> outputs) {
  auto normalized = [](StringRef path) {
    SmallString<256> full(path);
    if (path != "-") {
      sys::fs::make_absolute(full);
      sys::path::remove_dots(full, /*remove_dot_dot=*/true);
      while (full.size() > 1 && sys::path::is_separator(full.back()))
        full.pop_back();
    }
    return full;
  };
  auto sameFile = [&](StringRef first, StringRef second) {
    if (normalized(first) == normalized(second))
      return true;
    bool equivalent = false;
    return first != "-" && second != "-" &&
           !sys::fs::equivalent(first, second, equivalent) && equivalent;
  };
  // Whether the file output `file` is one the directory output `dir` writes.
  auto writtenInto = [&](const OutputPath &dir, StringRef file) {
    if (!dir.writesName || dir.path == "-" || file == "-")
      return false;
    SmallString<256> full = normalized(file);
    StringRef parent = sys::path::parent_path(full);
    return dir.writesName(sys::path::filename(full)) &&
           !parent.empty() && sameFile(parent, dir.path);
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const OutputPath &first = outputs[i], &second = outputs[j];
      if (first.path.empty() || second.path.empty())
        continue;
      StringRef written;
      if (sameFile(first.path, second.path))
        written = first.path;
      else if (!second.writesName && writtenInto(first, second.path))
        written = second.path;
      else if (!first.writesName && writtenInto(second, first.path))
        written = first.path;
      if (!written.empty())
        return inputError(formatv("{0} and {1} both write {2}", first.option,
                                  second.option,
                                  written == "-" ? StringRef("stdout")
                                                 : written));
    }
  return Error::success();
}

Error checkPathsNotEmpty(ArrayRef<const cl::opt<std::string> *> options) {
  for (const cl::opt<std::string> *o : options)
    if (o->getNumOccurrences() && o->getValue().empty())
      return inputError(o->isPositional()
                            ? std::string("the graph's path is empty")
                            : formatv("--{0}: the path is empty", o->ArgStr)
                                  .str());
  return Error::success();
}

Expected<std::string>
readInputFile(StringRef path, StringRef what, bool allowStdin) {
  Expected<std::string> text = readBoundedFile(path, allowStdin);
  if (!text)
    return inputError(formatv("{0}: cannot read {1}: {2}", path, what,
                              toString(text.takeError())));
  return text;
}

namespace {

/// The identity of the file `path` ("-" with `fd` >= 0: that descriptor), or
/// std::nullopt when it does not exist (or cannot be inspected).
std::optional<sys::fs::UniqueID> identityOf(StringRef path, int fd = -1) {
  sys::fs::file_status status;
  if (path == "-" ? (fd < 0 || sys::fs::status(fd, status))
                  : static_cast<bool>(sys::fs::status(path, status)))
    return std::nullopt;
  return status.getUniqueID();
}

} // namespace

Error checkOutputsSpareInputs(ArrayRef<InputFile> inputs,
                              ArrayRef<OutputPath> outputs) {
  std::vector<std::pair<const InputFile *, sys::fs::UniqueID>> ids;
  for (const InputFile &in : inputs)
    if (!in.path.empty())
      if (std::optional<sys::fs::UniqueID> id = identityOf(in.path, 0))
        ids.push_back({&in, *id});
  auto inputAt = [&](StringRef path) -> const InputFile * {
    std::optional<sys::fs::UniqueID> id = identityOf(path);
    if (id)
      for (auto &[in, inputId] : ids)
        if (inputId == *id)
          return in;
    return nullptr;
  };
  auto refuse = [](const OutputPath &out, StringRef written,
                   const InputFile &in) {
    std::string target =
        written == out.path ? std::string("the")
                            : formatv("{0}, which is the", written).str();
    return inputError(formatv("{0} {1} would overwrite {2} {3} {4}; write the "
                              "output elsewhere",
                              out.option, out.path, target, in.what,
                              in.path == "-" ? StringRef("(stdin)") : in.path));
  };
  for (const OutputPath &out : outputs) {
    if (out.path.empty() || out.path == "-")
      continue;
    if (!out.writesName) {
      if (const InputFile *in = inputAt(out.path))
        return refuse(out, out.path, *in);
      continue;
    }
    std::error_code ec;
    for (sys::fs::directory_iterator it(out.path, ec), end; it != end && !ec;
         it.increment(ec))
      if (out.writesName(sys::path::filename(it->path())))
        if (const InputFile *in = inputAt(it->path()))
          return refuse(out, it->path(), *in);
  }
  return Error::success();
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

} // namespace moecomm::run
