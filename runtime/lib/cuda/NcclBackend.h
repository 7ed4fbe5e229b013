//===- NcclBackend.h - The nccl backend for the C entry points -*- C++ -*-===//
//
// What NcclApi.cpp (compiled without CUDA headers) calls: creating the
// transport over a host channel, and the capacity mode. Declared without
// CUDA types; implemented in NcclBackend.cpp and Capacity.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_NCCLBACKEND_H
#define MOECOMM_LIB_CUDA_NCCLBACKEND_H

#include "Status.h"
#include "Transport.h"
#include "moecomm/moecomm_nccl.h"

#include <memory>

namespace moecomm {

class Comm;

/// A host channel for a single rank (W = 1, G = 1): allGather and host
/// exchanges are local copies.
std::unique_ptr<Transport> createSelfTransport();

/// Collective over `host` (the host channel of W ranks, G per node, which
/// the transport takes over): picks and checks CUDA device `cudaDevice` (-1:
/// W == 1 the current device, else local rank % visible devices), agrees on
/// every rank's verdict, shares rank 0's NCCL unique id over the host
/// channel, then ncclCommInitRank + ncclCommSplit. Errors as documented for
/// moecommCommInitNccl (moecomm_nccl.h).
Status createNcclTransport(std::unique_ptr<Transport> host, int cudaDevice,
                           std::unique_ptr<Transport> &out);

/// The CUDA device of an nccl transport; InvalidArgument for another one.
Status ncclDeviceOf(Transport &transport, int &device);

} // namespace moecomm

/// The C handle of a capacity plan (Capacity.h).
struct moecommCapacityPlan;

namespace moecomm {

/// moecommCapacityPlanCreate (collective).
Status capacityPlanCreate(Comm &comm, const moecommCapacityDesc_t *desc,
                          moecommCapacityPlan *&plan);
/// moecommCapacityPlanDestroy (local).
Status capacityPlanDestroy(moecommCapacityPlan *plan);
/// The communicator a plan was made on.
Comm *capacityPlanComm(moecommCapacityPlan *plan);
/// moecommCapacityPlanGetOutputs (local).
Status capacityPlanOutputs(moecommCapacityPlan *plan,
                           moecommCapacityOutputs_t *out);
/// moecommCapacityDispatch / moecommCapacityCombine (collective).
Status capacityDispatch(moecommCapacityPlan *plan, const void *topkIdx,
                        const float *topkWeights, const moecommRows_t *x,
                        const moecommRows_t *recv, moecommStream_t stream);
Status capacityCombine(moecommCapacityPlan *plan, const moecommRows_t *y,
                       int weighted, const moecommRows_t *out,
                       moecommStream_t stream);

} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_NCCLBACKEND_H
