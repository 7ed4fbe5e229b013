//===- ToolSupport.h - what moecomm-run and moecomm-bench share -*- C++ -*-===//

#ifndef MOECOMM_TOOLS_RUN_TOOLSUPPORT_H
#define MOECOMM_TOOLS_RUN_TOOLSUPPORT_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace moecomm::run {

/// Whether this process prints: not an MPI rank other than 0 (read from the
/// launcher's environment, so it holds before MPI_Init).
bool isReportingProcess();

/// Where data of kind `sub` ("configs", "data") is looked up, in order: the
/// installed <bin>/../share/moecomm/<sub> next to the executable `argv0`,
/// then the source tree's examples/<sub>.
std::vector<std::string> dataDirs(const char *argv0, llvm::StringRef sub);

/// llvm::cl::ParseCommandLineOptions with every error on one line: llvm::cl
/// writes some errors to its stream and others straight to stderr, so file
/// descriptor 2 is captured while parsing. Returns false with the line (the
/// "<tool>: " prefixes removed) in `error`.
bool parseCommandLine(int argc, char **argv, llvm::StringRef overview,
                      std::string &error);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_TOOLSUPPORT_H
