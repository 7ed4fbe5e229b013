//===- MoECommDialect.cpp - moecomm dialect registration -------------------===//

#include "moecomm/Dialect/MoEComm/MoEComm.h"

using namespace mlir;
using namespace mlir::moecomm;

#include "moecomm/Dialect/MoEComm/MoECommDialect.cpp.inc"
#include "moecomm/Dialect/MoEComm/MoECommEnums.cpp.inc"

void MoECommDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "moecomm/Dialect/MoEComm/MoECommOps.cpp.inc"
      >();
}
