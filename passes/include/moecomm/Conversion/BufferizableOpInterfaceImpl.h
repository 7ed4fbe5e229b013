//===- BufferizableOpInterfaceImpl.h - moecomm bufferization ----*- C++ -*-===//
//
// External BufferizableOpInterface models of the moecomm ops, which one-shot
// bufferization (run by convert-moecomm-to-runtime) uses to turn them into
// calls of the runtime's compiled-code ABI.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_CONVERSION_BUFFERIZABLEOPINTERFACEIMPL_H
#define MOECOMM_CONVERSION_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace moecomm {

/// Attaches moecomm's BufferizableOpInterface models to its ops.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace moecomm
} // namespace mlir

#endif // MOECOMM_CONVERSION_BUFFERIZABLEOPINTERFACEIMPL_H
