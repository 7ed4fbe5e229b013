//===- RootBuffer.h - the buffer behind a memref view ----------*- C++ -*-===//
//
// Bufferized moecomm graphs pass buffers through casts and views
// (subviews of chunks, the ABI's strided casts); the passes that free or
// place buffers (moecomm-buffer-deallocation, moecomm-device-buffers) reason
// about the buffer that owns the memory.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_PASSES_ROOTBUFFER_H
#define MOECOMM_PASSES_ROOTBUFFER_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::moecomm {

/// Follows casts and views back to the value that owns the memory: an
/// allocation, a function or block argument, a call result or a global.
inline Value rootBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto cast = dyn_cast<memref::CastOp>(def))
      v = cast.getSource();
    else if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else
      break;
  }
  return v;
}

} // namespace mlir::moecomm

#endif // MOECOMM_PASSES_ROOTBUFFER_H
