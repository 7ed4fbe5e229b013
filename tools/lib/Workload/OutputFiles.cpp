//===- OutputFiles.cpp - output files written whole, never over inputs ----===//

#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <optional>
#include <unistd.h>

using namespace llvm;

namespace moecomm::workload {

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
    return dir.writesName(sys::path::filename(full)) && !parent.empty() &&
           sameFile(parent, dir.path);
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
        return inputError(
            formatv("{0} and {1} both write {2}", first.option, second.option,
                    written == "-" ? StringRef("stdout") : written));
    }
  return Error::success();
}

Error checkPathsNotEmpty(ArrayRef<const cl::opt<std::string> *> options) {
  for (const cl::opt<std::string> *o : options)
    if (o->getNumOccurrences() && o->getValue().empty())
      return inputError(
          o->isPositional()
              ? std::string("the graph's path is empty")
              : formatv("--{0}: the path is empty", o->ArgStr).str());
  return Error::success();
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
    std::string target = written == out.path
                             ? std::string("the")
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

} // namespace moecomm::workload
