//===- Dump.cpp - moecomm-run --dump: NumPy files per rank ----------------===//

#include "Dump.h"
#include "moecomm/Workload/OutputFiles.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

Error prepareDumpDir(StringRef dir) {
  if (std::error_code ec = sys::fs::create_directories(dir))
    return inputError(
        formatv("--dump {0}: cannot create directory: {1}", dir, ec.message()));
  if (!sys::fs::is_directory(dir))
    return inputError(formatv("--dump {0}: not a directory", dir));
  if (sys::fs::access(dir, sys::fs::AccessMode::Write))
    return inputError(formatv("--dump {0}: directory is not writable", dir));
  return Error::success();
}

bool isDumpFileName(StringRef fileName) {
  if (!fileName.consume_front("rank") || !fileName.consume_back(".npy"))
    return false;
  auto [rank, what] = fileName.split('.');
  unsigned r;
  return !rank.getAsInteger(10, r) &&
         (what == "dispatch" || what == "src" || what == "tokens_per_expert" ||
          what == "combine" || what == "grad_x");
}

namespace {

/// Serializes `count` elements of `data` with `shape` as .npy and writes it.
template <typename T>
Error writeNpy(StringRef dir, const Twine &name, const T *data, size_t count,
               std::vector<size_t> shape) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  // xt::adapt needs a valid pointer even for zero elements.
  static const T empty{};
  const T *base = count ? data : &empty;
  auto view = xt::adapt(base, count, xt::no_ownership(), shape);
  std::string bytes = xt::dump_npy(view);
  if (std::error_code ec =
          replaceFile(path, [&](raw_ostream &os) { os << bytes; }))
    return systemError(formatv("cannot write {0}: {1}", path, ec.message()));
  return Error::success();
}

} // namespace

Error dumpRank(StringRef dir, const LayerResult &res) {
  const size_t R = static_cast<size_t>(res.recvRows);
  const size_t H = static_cast<size_t>(res.hidden);
  const size_t T = static_cast<size_t>(res.numTokens);
  const std::string prefix = ("rank" + Twine(res.rank)).str();
  if (res.training)
    if (Error e = writeNpy(dir, prefix + ".grad_x.npy", res.gradX.data(),
                           res.gradX.size(), {T, H}))
      return e;
  if (!res.dispatchObserved)
    return writeNpy(dir, prefix + ".combine.npy", res.combine.data(),
                    res.combine.size(), {T, H});
  if (Error e = writeNpy(dir, prefix + ".dispatch.npy", res.recv.data(),
                         res.recv.size(), {R, H}))
    return e;
  if (Error e = writeNpy(dir, prefix + ".src.npy", res.sources.data(),
                         res.sources.size(), {R, 2}))
    return e;
  if (Error e = writeNpy(dir, prefix + ".tokens_per_expert.npy",
                         res.tokensPerExpert.data(), res.tokensPerExpert.size(),
                         {res.tokensPerExpert.size()}))
    return e;
  return writeNpy(dir, prefix + ".combine.npy", res.combine.data(),
                  res.combine.size(), {T, H});
}

} // namespace moecomm::run
