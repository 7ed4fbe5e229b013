/*===- moecomm_nccl.h - The GPU backend: CUDA kernels + NCCL (C99) --------===*
 *
 * Communicators of backend `nccl` and the calls only that backend has.
 * Available when moecomm is built with CUDA and NCCL (the CMake target
 * moecomm_runtime then defines MOECOMM_HAVE_NCCL for its users); in a build
 * without them every function here returns moecommUnsupported ("built
 * without CUDA/NCCL"), so callers need no #ifdef. moecommCommInitNccl takes
 * an MPI_Comm: it is declared when <mpi.h> (or moecomm/moecomm_mpi.h) is
 * included before this header, and exists when moecomm is built with MPI
 * (MOECOMM_HAVE_MPI). This header itself needs neither CUDA nor MPI.
 *
 * On an nccl communicator every call of moecomm.h works as on the CPU
 * backends, with these differences (docs/gpu.md):
 *  - moecommRows_t data / scales passed to dispatch, combine, all_to_all,
 *    pack, exchange and unpack are DEVICE pointers (cudaMalloc'd or managed
 *    memory of the communicator's device); host pointers are rejected
 *    (InvalidArgument).
 *  - `stream` is a cudaStream_t of the communicator's device (NULL = the
 *    legacy default stream). The call enqueues its work on `stream` and
 *    returns without waiting for the GPU: results are ready in stream
 *    order. Exchanges run on the communicator's
 *    own communication stream, joined to `stream` with CUDA events.
 *    moecommDispatchStart / CombineStart / ExchangeStart / AllToAllStart
 *    enqueue the pack on `stream` and the exchange on the communication
 *    stream and return; moecommWait makes `stream` (the one given at start)
 *    wait for the exchange and enqueues the unpack on it, so computation
 *    enqueued on `stream` between start and wait overlaps the exchange.
 *  - moecommLayoutCreate ("exact" mode) accepts host or device topk_idx /
 *    topk_weights; it copies device ones to the host (a host
 *    synchronization), builds the plan on the host exactly as the CPU
 *    backends do, and uploads its row maps. Layout queries
 *    (tokens per expert, recv weights, sources) fill HOST arrays.
 *  - Every collective first agrees on its arguments over the host channel
 *    (MPI, or nothing when W = 1): a host collective, no GPU synchronization.
 *  - moecommQuantizeFp8 / moecommDequantizeFp8 stay host-only; the device
 *    forms are below.
 * Results are bit-identical to the CPU backends (same plans, same order of
 * f32 operations, the same FP8 rounding) except for the bits of NaN
 * payloads.
 *===----------------------------------------------------------------------===*/
#ifndef MOECOMM_MOECOMM_NCCL_H
#define MOECOMM_MOECOMM_NCCL_H

#include "moecomm/moecomm.h"

#ifdef __cplusplus
extern "C" {
#endif

/*--- Communicators --------------------------------------------------------*/

/** Local: a communicator of backend `nccl` with one rank (W = 1, G = 1) on
 *  CUDA device `cudaDevice` (-1: the current device), usable without MPI.
 *  Errors: Unsupported when moecomm is built without CUDA/NCCL or no CUDA
 *  device is usable (message "no CUDA device: ..."); InvalidArgument when
 *  cudaDevice is not a device ordinal; SystemError when CUDA or NCCL fail. */
moecommResult_t moecommCommInitNcclSingle(moecommComm_t *comm, int cudaDevice);

#ifdef MPI_VERSION /* <mpi.h> was included first */
/** Collective over `mpiComm`: a communicator of backend `nccl` whose ranks
 *  are mpiComm's ranks, `ranksPerNode` consecutive ranks per node (the same
 *  on every rank), each driving CUDA device `cudaDevice` (-1: local rank
 *  (rank % ranksPerNode) modulo the number of visible devices). Rank 0
 *  creates the NCCL unique id and the host channel (an MPI duplicate of
 *  mpiComm, as moecommCommInitMpi makes) gives it to every rank; then
 *  ncclCommInitRank makes the EP communicator and ncclCommSplit the
 *  intra-node (color node, key rank) and inter-node (color local rank, key
 *  rank) ones. MPI must be initialized. Errors (identical on every rank when
 *  they are found before NCCL starts): InvalidArgument (MPI not
 *  initialized, MPI_COMM_NULL, ranksPerNode not dividing the size, a bad
 *  device ordinal), Mismatch (different ranksPerNode), Unsupported (no
 *  usable CUDA device on some rank, or built without CUDA/NCCL),
 *  SystemError (MPI, CUDA or NCCL failures). Destroy the communicator
 *  before MPI_Finalize. */
moecommResult_t moecommCommInitNccl(moecommComm_t *comm, MPI_Comm mpiComm,
                                    int ranksPerNode, int cudaDevice);
#endif

/** Local: the CUDA device ordinal of an nccl communicator. InvalidArgument
 *  on another backend. */
moecommResult_t moecommCommCudaDevice(moecommComm_t comm, int *cudaDevice);

/*--- FP8 on the device (local) --------------------------------------------*/

/** Device rows, same shape: in f32/bf16 -> out FP8 + scales of any FP8
 *  type, exactly moecommQuantizeFp8's rounding (per block of the type, 1
 *  for an all-zero block: amax/448 for moecommFloat8E4M3, the E8M0 power
 *  of two of moecommFloat8E4M3UE8M0 and moecommMxfp8; round to nearest
 *  even, saturating). Enqueued on
 *  `stream`. InvalidArgument on a non-nccl communicator, host pointers or
 *  wrong types. */
moecommResult_t moecommQuantizeFp8Device(moecommComm_t comm,
                                         const moecommRows_t *in,
                                         moecommRows_t *out,
                                         moecommStream_t stream);
/** Device rows: FP8 + scales -> f32/bf16 (x = q * scale in f32, rounded to
 *  nearest even for bf16), enqueued on `stream`. Errors: InvalidArgument (a
 *  non-nccl communicator, NULL in or out, in not FP8 or out not f32/bf16,
 *  different or negative shapes, missing data or scales, host pointers or
 *  another device's memory), SystemError (CUDA failures). */
moecommResult_t moecommDequantizeFp8Device(moecommComm_t comm,
                                           const moecommRows_t *in,
                                           moecommRows_t *out,
                                           moecommStream_t stream);

/*--- Capacity mode: fixed buffers, no host synchronization ----------------*
 * A capacity plan fixes every size up front (T, K, E, H, types, capacity C
 * rows per receiving rank, and P rows per (source, destination) buffer), so
 * dispatch and combine need no host knowledge of the routing: the layout is
 * computed on the device from device topk_idx, fixed-size blocks travel with
 * grouped ncclSend/ncclRecv, and the receiver compacts what it got into
 * expert-major order. Nothing waits on the GPU from the host, so the calls
 * can be captured in a CUDA graph (and replayed with new topk_idx / x / y
 * contents at the same addresses). Run a plan's dispatch and combine once
 * before capturing them: NCCL sets up its peer connections on first use.
 * The strategy is per_expert (one row per kept (token, expert), scope
 * global).
 *
 * Semantics equal moecommLayoutCreate + dispatch + combine with capacity C
 * (DESIGN.md §3): destination d keeps its pairs in (source rank, source
 * token, expert id) order up to C and drops the rest; recv rows [0, R) are
 * the kept rows expert-major, bit-identical to the exact mode's; combine
 * sums the kept slots in slot order (bit-identical to per_expert). With the
 * default P a source never drops more than the capacity rule does. A
 * smaller P also drops, at the source, a source's pairs to one destination
 * beyond its first P (in (token, expert) order); then the capacity rule
 * counts only rows that arrived. Dropping sets MOECOMM_CAPACITY_OVERFLOW.
 *
 * Routing errors cannot be returned without a host synchronization: an id
 * outside [-1, E) is treated as masked and sets MOECOMM_CAPACITY_BAD_EXPERT;
 * an id repeated in a token's row keeps its first slot and sets
 * MOECOMM_CAPACITY_DUPLICATE. Flags are reset by every dispatch.
 *
 * A plan holds the device state of its latest dispatch, which its combine
 * uses (like a layout handle): one dispatch in flight per plan; make more
 * plans for more live handles. Plans of one communicator share its
 * communication stream: do not capture one while other calls on the same
 * communicator run. Every call agrees on its arguments over the host
 * channel first (no GPU synchronization; during graph capture this happens
 * once, at capture).                                                      */

typedef struct moecommCapacityPlan *moecommCapacityPlan_t;

/** Bits of moecommCapacityOutputs_t::flags. */
#define MOECOMM_CAPACITY_OVERFLOW 1    /* rows were dropped (capacity or P) */
#define MOECOMM_CAPACITY_BAD_EXPERT 2  /* an id outside [-1, E) was masked */
#define MOECOMM_CAPACITY_DUPLICATE 4   /* a repeated id in a row was masked */

typedef struct {
  int64_t numTokens;          /* T >= 0 of this rank (may differ per rank) */
  int32_t topk;               /* K >= 1, same on all ranks */
  int64_t numExperts;         /* E >= 1, E % W == 0, same on all ranks */
  int64_t capacity;           /* C >= 1: max rows received per rank */
  int64_t pairCapacity;       /* P: rows per (source, destination) buffer;
                                 0 = min(C, maxT * min(K, E/W)) with maxT
                                 the largest T of any rank (never drops more
                                 than the capacity rule) */
  int64_t hidden;             /* H >= 1 */
  moecommDataType_t idxType;  /* moecommInt32 or moecommInt64 */
  moecommDataType_t dataType; /* x, recv, y, out: f32 or bf16 */
  moecommDataType_t wireType; /* dataType or moecommFloat8E4M3 */
} moecommCapacityDesc_t;

/** Device arrays owned by the plan, written by every dispatch (stable
 *  addresses, so a captured graph can read them). */
typedef struct {
  int64_t *recvRows;        /* [1] R <= C: valid rows of recv */
  int64_t *dropped;         /* [1] pairs routed here that were not received */
  int32_t *flags;           /* [1] MOECOMM_CAPACITY_* bits */
  int64_t *tokensPerExpert; /* [E/W] rows per local expert */
  float *recvWeights;       /* [C] routing weight of each row (0: padding) */
  int64_t *recvSources;     /* [C][2] (source rank, source token); -1:
                               padding */
  int64_t capacity;         /* C (host value) */
  int64_t pairCapacity;     /* P in effect (host value) */
} moecommCapacityOutputs_t;

/** Collective: checks and agrees on `desc` (K, E, C, P, H and types must be
 *  equal on every rank), learns every rank's T, and allocates the plan's
 *  device buffers (about 2*W*P rows of the wire type plus 2*W*P rows of the
 *  data type, W*P*64 + T*K*32 + W*T*8 + C*28 bytes of metadata). Errors:
 *  InvalidArgument (bad sizes or types, T*K or W*P beyond 2^31 - 1, not an
 *  nccl communicator), Mismatch, SystemError (out of device memory). */
moecommResult_t moecommCapacityPlanCreate(moecommComm_t comm,
                                          const moecommCapacityDesc_t *desc,
                                          moecommCapacityPlan_t *plan);
/** Local. Waits for the device to finish with the plan's buffers, frees
 *  it. Destroy plans before their communicator. */
moecommResult_t moecommCapacityPlanDestroy(moecommCapacityPlan_t plan);
/** Local. The plan's device output arrays. */
moecommResult_t moecommCapacityPlanGetOutputs(moecommCapacityPlan_t plan,
                                              moecommCapacityOutputs_t *out);

/** Collective, enqueued on `stream`, no host synchronization.
 *  topkIdx: device [T][K] (desc.idxType), -1 = masked; topkWeights: device
 *  [T][K] f32 or NULL (1.0); x: device [T][H] of desc.dataType; recv: device
 *  [C][H] of desc.dataType: rows [0, R) expert-major (local expert, source
 *  rank, source token), rows [R, C) zero. The plan's outputs (above) are
 *  written on `stream`. FP8 on the wire: quantized once at the source,
 *  dequantized into recv. Errors (argument errors agreed on every rank):
 *  InvalidArgument (NULL plan, x or recv of the wrong shape or type, NULL
 *  topkIdx with T > 0, host pointers or another device's memory: checked
 *  unless `stream` is capturing), Mismatch (ranks disagree on the plan or
 *  H), SystemError (CUDA or NCCL failures). */
moecommResult_t moecommCapacityDispatch(moecommCapacityPlan_t plan,
                                        const void *topkIdx,
                                        const float *topkWeights,
                                        const moecommRows_t *x,
                                        moecommRows_t *recv,
                                        moecommStream_t stream);
/** Collective, enqueued on `stream`: y: device [C][H] of desc.dataType in
 *  the latest dispatch's row order (rows [R, C) ignored); out: device [T][H]:
 *  out[t] = sum over kept slots k, in slot order, of (weighted ? w[t,k] : 1)
 *  * y[row(t,k)], accumulated in f32 (w from that dispatch's topkWeights);
 *  tokens with no kept slot get zeros. Errors (argument errors agreed on
 *  every rank): InvalidArgument (NULL plan, y or out of the wrong shape or
 *  type, host pointers or another device's memory: checked unless `stream`
 *  is capturing), Mismatch (ranks disagree on the plan, H or `weighted`),
 *  SystemError (CUDA or NCCL failures). */
moecommResult_t moecommCapacityCombine(moecommCapacityPlan_t plan,
                                       const moecommRows_t *y, int weighted,
                                       moecommRows_t *out,
                                       moecommStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* MOECOMM_MOECOMM_NCCL_H */
