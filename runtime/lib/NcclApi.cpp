//===- NcclApi.cpp - The C entry points of moecomm_nccl.h -----------------===//
//
// Compiled in every build. With MOECOMM_HAVE_NCCL the calls reach the GPU
// backend (runtime/lib/cuda, through the CUDA-free NcclBackend.h); without
// it each returns moecommUnsupported with a message saying so.
//
//===----------------------------------------------------------------------===//
#ifdef MOECOMM_HAVE_MPI
#include <mpi.h> // declares moecommCommInitNccl in moecomm_nccl.h
#endif

#include "moecomm/moecomm_nccl.h"

#include "ApiBoundary.h"
#include "Comm.h"
#include "DeviceEngine.h"
#include "moecomm/Model/WireFormat.h"

#ifdef MOECOMM_HAVE_NCCL
#include "cuda/NcclBackend.h"
#endif
#ifdef MOECOMM_HAVE_MPI
#include "MpiTransport.h"
#endif

using namespace moecomm;

namespace {

[[maybe_unused]] Status notBuilt() {
  return Status::error(moecommUnsupported,
                       "moecomm was built without CUDA/NCCL (the nccl backend "
                       "needs MOECOMM_ENABLE_CUDA with nvcc and NCCL found)");
}

#ifdef MOECOMM_HAVE_NCCL
Status makeComm(std::unique_ptr<Transport> host, int cudaDevice,
                moecommComm_t *comm) {
  std::unique_ptr<Transport> t;
  if (Status st = createNcclTransport(std::move(host), cudaDevice, t); !st.ok())
    return st;
  *comm = new moecommComm(std::move(t));
  return Status::success();
}
#endif

/// The device engine of an nccl communicator.
Status engineOf(Comm &c, DeviceEngine *&engine) {
  engine = c.transport().deviceEngine();
  if (!engine)
    return invalidArgument(
        cat("rank ", c.rank(), ": the communicator is not of backend nccl"));
  return Status::success();
}

/// moecommQuantizeFp8Device (`quantize`: f32/bf16 -> FP8) and
/// moecommDequantizeFp8Device (FP8 -> f32/bf16) on the device engine.
moecommResult_t convertOnDevice(moecommComm_t comm, const moecommRows_t *in,
                                moecommRows_t *out, moecommStream_t stream,
                                bool quantize) {
  return onComm(comm, [&](Comm &c) -> Status {
    DeviceEngine *engine = nullptr;
    if (Status st = engineOf(c, engine); !st.ok())
      return st;
    if (!in || !out)
      return invalidArgument("in and out must not be NULL");
    if (!isFp8((quantize ? out : in)->type))
      return invalidArgument(quantize ? "quantize needs FP8 out"
                                      : "dequantize needs FP8 in");
    return engine->convertRows(*in, *out, stream);
  });
}

/// Runs `body` on the communicator of `plan`.
template <typename F>
moecommResult_t onPlan(moecommCapacityPlan_t plan, F body) {
  if (!plan)
    return failNoComm(invalidArgument("plan is NULL"));
#ifdef MOECOMM_HAVE_NCCL
  // Every Comm is created as a moecommComm (the C handle).
  return onComm(static_cast<moecommComm_t>(capacityPlanComm(plan)),
                [&](Comm &) { return body(); });
#else
  (void)body;
  return failNoComm(notBuilt());
#endif
}

} // namespace

extern "C" {

moecommResult_t moecommCommInitNcclSingle(moecommComm_t *comm, int cudaDevice) {
  return noComm([&]() -> Status {
    if (!comm)
      return invalidArgument("comm is NULL");
    *comm = nullptr;
#ifdef MOECOMM_HAVE_NCCL
    return makeComm(createSelfTransport(), cudaDevice, comm);
#else
    (void)cudaDevice;
    return notBuilt();
#endif
  });
}

#ifdef MOECOMM_HAVE_MPI
moecommResult_t moecommCommInitNccl(moecommComm_t *comm, MPI_Comm mpiComm,
                                    int ranksPerNode, int cudaDevice) {
  return noComm([&]() -> Status {
    if (!comm)
      return invalidArgument("comm is NULL");
    *comm = nullptr;
#ifdef MOECOMM_HAVE_NCCL
    std::unique_ptr<Transport> host;
    if (Status st = createMpiTransport(mpiComm, ranksPerNode, host); !st.ok())
      return st;
    return makeComm(std::move(host), cudaDevice, comm);
#else
    (void)mpiComm;
    (void)ranksPerNode;
    (void)cudaDevice;
    return notBuilt();
#endif
  });
}
#endif

moecommResult_t moecommCommCudaDevice(moecommComm_t comm, int *cudaDevice) {
  return onCommLocal(comm, [&](Comm &c) -> Status {
    if (!cudaDevice)
      return invalidArgument("cudaDevice is NULL");
#ifdef MOECOMM_HAVE_NCCL
    return ncclDeviceOf(c.transport(), *cudaDevice);
#else
    (void)c;
    return notBuilt();
#endif
  });
}

moecommResult_t moecommQuantizeFp8Device(moecommComm_t comm,
                                         const moecommRows_t *in,
                                         moecommRows_t *out,
                                         moecommStream_t stream) {
  return convertOnDevice(comm, in, out, stream, /*quantize=*/true);
}

moecommResult_t moecommDequantizeFp8Device(moecommComm_t comm,
                                           const moecommRows_t *in,
                                           moecommRows_t *out,
                                           moecommStream_t stream) {
  return convertOnDevice(comm, in, out, stream, /*quantize=*/false);
}

moecommResult_t moecommCapacityPlanCreate(moecommComm_t comm,
                                          const moecommCapacityDesc_t *desc,
                                          moecommCapacityPlan_t *plan) {
  if (plan)
    *plan = nullptr;
  return onComm(comm, [&](Comm &c) -> Status {
#ifdef MOECOMM_HAVE_NCCL
    if (!plan) {
      // Still take part in the agreement so that no rank hangs.
      Signature sig(OpKind::CapacityCreate);
      sig.setError(invalidArgument(cat("rank ", c.rank(), ": plan is NULL")));
      return c.agree(sig, nullptr);
    }
    return capacityPlanCreate(c, desc, *plan);
#else
    (void)c;
    (void)desc;
    return notBuilt();
#endif
  });
}

moecommResult_t moecommCapacityPlanDestroy(moecommCapacityPlan_t plan) {
  return noComm([&]() -> Status {
#ifdef MOECOMM_HAVE_NCCL
    return capacityPlanDestroy(plan);
#else
    (void)plan;
    return notBuilt();
#endif
  });
}

moecommResult_t moecommCapacityPlanGetOutputs(moecommCapacityPlan_t plan,
                                              moecommCapacityOutputs_t *out) {
  return noComm([&]() -> Status {
#ifdef MOECOMM_HAVE_NCCL
    return capacityPlanOutputs(plan, out);
#else
    (void)plan;
    (void)out;
    return notBuilt();
#endif
  });
}

moecommResult_t
moecommCapacityDispatch(moecommCapacityPlan_t plan, const void *topkIdx,
                        const float *topkWeights, const moecommRows_t *x,
                        moecommRows_t *recv, moecommStream_t stream) {
  return onPlan(plan, [&]() -> Status {
#ifdef MOECOMM_HAVE_NCCL
    return capacityDispatch(plan, topkIdx, topkWeights, x, recv, stream);
#else
    (void)topkIdx;
    (void)topkWeights;
    (void)x;
    (void)recv;
    (void)stream;
    return notBuilt();
#endif
  });
}

moecommResult_t moecommCapacityCombine(moecommCapacityPlan_t plan,
                                       const moecommRows_t *y, int weighted,
                                       moecommRows_t *out,
                                       moecommStream_t stream) {
  return onPlan(plan, [&]() -> Status {
#ifdef MOECOMM_HAVE_NCCL
    return capacityCombine(plan, y, weighted, out, stream);
#else
    (void)y;
    (void)weighted;
    (void)out;
    (void)stream;
    return notBuilt();
#endif
  });
}

} // extern "C"
