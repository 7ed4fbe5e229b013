//===- CompiledError.h - the recorded error of compiled code ----*- C++ -*-===//
//
// Compiled code cannot branch on a status (moecomm_compiled.h): the first
// failure on a thread is recorded and every later call on that thread does
// nothing. The state lives in CompiledAbi.cpp; entry points defined in other
// files (Matmul.cpp) record their errors through these two functions so the
// host reads them with moecommCompiledStatus / moecommCompiledLastError.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_COMPILEDERROR_H
#define MOECOMM_LIB_COMPILEDERROR_H

#include "moecomm/moecomm.h"

#include <string>

namespace moecomm {

/// Whether compiled code on this thread hit an error since the last
/// moecommCompiledBind (its entry points then return at once).
bool compiledStopped();

/// Records a local error of compiled code on this thread (only the first one
/// since the last bind is kept; no other rank learns of it until the next
/// collective entry point shares it).
void compiledFail(moecommResult_t code, const std::string &message);

} // namespace moecomm

#endif // MOECOMM_LIB_COMPILEDERROR_H
