//===- DataDir.cpp - where configs and traces are found -------------------===//

#include "moecomm/Workload/DataDir.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace moecomm::workload {

std::vector<std::string> dataDirs(const char *argv0, StringRef sub) {
  std::string exe = sys::fs::getMainExecutable(argv0, (void *)&dataDirs);
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

} // namespace moecomm::workload
