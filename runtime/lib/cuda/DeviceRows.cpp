//===- DeviceRows.cpp - Picks the row kernel of a gather ------------------===//
#include "DeviceRows.h"

#include "RowKernels.h"
#include "moecomm/Model/WireFormat.h"

namespace moecomm {
namespace cuda {

Status gatherRowsDevice(const moecommRows_t &in, const moecommRows_t &out,
                        const GatherIndex &gather, cudaStream_t stream) {
  if (in.hidden != out.hidden)
    return internalError(cat("gather from rows of hidden size ", in.hidden,
                             " into rows of hidden size ", out.hidden));
  if (!gather.index && in.rows != out.rows)
    return internalError(cat("an identity gather of ", in.rows, " rows into ",
                             out.rows, " rows"));
  if (out.rows == 0 || out.hidden == 0)
    return Status::success();
  if ((isFp8(in.type) && !in.scales && in.rows > 0) ||
      (isFp8(out.type) && !out.scales))
    return invalidArgument("FP8 rows need scales");
  if (in.type == out.type && (isFloatData(in.type) || isFp8(in.type)))
    return launchCopyRows(in, out, gather, stream);
  if (isFloatData(in.type) && isFp8(out.type))
    return launchQuantizeRows(in, out, gather, stream);
  if (isFp8(in.type) && isFloatData(out.type))
    return launchDequantizeRows(in, out, gather, stream);
  return invalidArgument(cat("cannot convert rows of type ", (int)in.type,
                             " to type ", (int)out.type));
}

} // namespace cuda
} // namespace moecomm
