//===- Passes.cpp - C API for moecomm's passes and moecomm-pipeline -------===//
//
// The generated pass C API (as upstream's lib/CAPI/Transforms/Passes.cpp)
// plus the registration of the pipeline, which TableGen does not describe.
//
//===----------------------------------------------------------------------===//

#include "moecomm-c/Passes.h"

#include "mlir/CAPI/Pass.h"
#include "moecomm/Conversion/Passes.h"
#include "moecomm/Pipelines/Pipeline.h"
#include "moecomm/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::moecomm;

// The generated definitions call create<Def>() and register<Def>()
// unqualified: the declarations of moecomm/{Transforms,Conversion}/Passes.h.
extern "C" {
#include "moecomm/Conversion/Passes.capi.cpp.inc"
#include "moecomm/Transforms/Passes.capi.cpp.inc"
}

void mlirRegisterMoECommPipeline(void) {
  // registerPassPipeline asserts that a name is registered once (MLIR built
  // with assertions); registration functions of a C API are called by
  // several parts of a program (every Python module that needs the
  // pipeline), so only the first call registers.
  static const bool registered = (registerMoECommPipeline(), true);
  (void)registered;
}
