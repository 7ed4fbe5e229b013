/*===- moecomm_compiled.h - ABI between compiled MoE graphs and the runtime =*
 *
 * `convert-moecomm-to-runtime` lowers moecomm ops to calls of the functions
 * below; `moecomm-run` (JIT) and ahead-of-time objects resolve them from
 * libmoecomm_runtime. Host code only needs the first three functions:
 *
 *   moecommCompiledBind(comm);          // on each rank's thread
 *   graph(...);                         // the compiled function
 *   if (moecommCompiledStatus() != moecommSuccess)
 *     report(moecommCompiledLastError());
 *
 * Memref arguments are MLIR's C-interface descriptors (`llvm.emit_c_interface`,
 * passed by pointer): {allocated, aligned, offset, sizes[N], strides[N]}; rows
 * must be contiguous (stride 1 along H, stride H between rows; the expert
 * GEMM's operands may also be rows of a larger buffer). Function names
 * carry element types: bf16, f32, i32, i64, and the FP8 formats, whose
 * f8E4M3FN rows are always followed by their scales: f8 (fp8_e4m3,
 * [rows][ceil(H/128)] f32), ue8m0 (fp8_e4m3_ue8m0, [rows][ceil(H/128)] E8M0
 * bytes) and mxfp8 ([rows][ceil(H/32)] E8M0 bytes); scales of another shape
 * are moecommInvalidArgument. `direction` is 0 = dispatch,
 * 1 = combine; `step` is an exchange stage index or -1 for the output order.
 *
 * Errors: compiled code cannot branch on a status, so the first failure on a
 * thread is recorded (code + message, see moecommCompiledLastError) and every
 * later call on that thread returns without doing anything (row queries
 * return 0, layout calls NULL, tokens_per_expert / expert_offsets / the
 * all_to_all receive counts are written as zeros, since the graph's host code
 * reads them as loop bounds and sizes). The message is the failing runtime call's
 * own (moecommCommGetLastError's), for calls with and without a
 * communicator alike. Compiled code allocates the buffers it writes with
 * malloc and does not check them: an output buffer that is NULL but has
 * elements is recorded as moecommSystemError "out of memory: ...", not as
 * a bad argument. Malformed descriptors (strided rows, topk_weights not of
 * topk_idx's shape, top-k beyond 2^31 - 1) are moecommInvalidArgument. Collective failures (bad routing, count
 * mismatches) are agreed by all ranks, so all ranks stop at the same call. A
 * local failure (e.g. malformed rows) is shared at the next collective call:
 * the stopped rank takes part in that call's agreement with its error, so
 * the other ranks stop there too, with that error ("rank R: " before it
 * unless it names its rank already), instead of waiting for it.
 * A layout returned by a compiled function belongs to the caller:
 * release it with moecomm_rt_layout_release or moecommLayoutDestroy.
 *===----------------------------------------------------------------------===*/
#ifndef MOECOMM_MOECOMM_COMPILED_H
#define MOECOMM_MOECOMM_COMPILED_H

#include "moecomm/moecomm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Makes `comm` the communicator of compiled code running on this thread and
 *  clears the thread's recorded error. */
moecommResult_t moecommCompiledBind(moecommComm_t comm);
/** The first error compiled code hit on this thread since the last bind. */
moecommResult_t moecommCompiledStatus(void);
/** Its message ("" when none). */
const char *moecommCompiledLastError(void);

/*--- The device form (moecomm-pipeline target=cuda) -----------------------*
 * Graphs compiled for target=cuda call the same entry points as host
 * graphs, plus the buffer calls below, and run on a thread bound with
 * moecommCompiledBindDevice. Such a thread has a *device*:
 *  - on an nccl communicator, the communicator's CUDA device: buffers are
 *    device memory (cudaMallocAsync on the bound stream), every entry point
 *    enqueues its work on the bound stream (collectives through the nccl
 *    backend, FP8 conversion by its kernels, the expert GEMM by cuBLAS), and
 *    returns without waiting for the GPU except where noted (a layout waits
 *    for the stream, since it plans on the host);
 *  - on a threads or mpi communicator, the *host device*: the same contract
 *    with host memory, and the queue executed in order on the calling
 *    thread, so the cuda-target lowering runs and verifies on a CPU.
 * Both share everything but the memory and stream primitives: every buffer
 * compiled code allocates is recorded (address, bytes, host or device), and
 * the entry points check that the rows they read or write lie in device
 * buffers (moecommInvalidArgument "... not device memory ...", e.g. a host
 * graph run on a device-bound thread), that a buffer is not freed while an
 * exchange started on it is not yet waited (moecommInvalidArgument), and
 * moecommCompiledDeviceSynchronize reports exchanges left unwaited.
 * Per-expert metadata the graph's host code reads (tokens_per_expert,
 * expert_offsets) stays in host memory: the plan is made on the host (like
 * DeepEP's num_recv_tokens_per_expert_list). Errors are recorded as for host
 * graphs (moecommCompiledStatus).
 *---------------------------------------------------------------------------*/

/** Like moecommCompiledBind, for graphs compiled with target=cuda: `comm`'s
 *  device (above) runs their work on `stream` (a cudaStream_t of the nccl
 *  communicator's device, NULL = the legacy default stream; NULL on the CPU
 *  backends, else InvalidArgument). Frees nothing a previous binding
 *  allocated. InvalidArgument when comm is NULL; SystemError when CUDA
 *  fails (e.g. cuBLAS cannot start). */
moecommResult_t moecommCompiledBindDevice(moecommComm_t comm,
                                          moecommStream_t stream);
/** Driver calls on a device-bound thread (local): `bytes` of device memory
 *  for a graph's arguments (*ptr NULL for 0 bytes), freed with
 *  moecommCompiledFree, which also frees the buffers a graph returns (its
 *  descriptors' `allocated` pointers, host or device); copies of `bytes`
 *  between host and device memory in any direction, after the stream's
 *  earlier work and complete on return; and a wait for the stream.
 *  InvalidArgument: no device bound, a pointer not allocated by this thread's
 *  device calls or compiled code (free), NULL with bytes > 0 (copy);
 *  SystemError: out of memory, CUDA errors; synchronize also
 *  InvalidArgument when exchanges started by compiled code were not waited
 *  (their count in the message); copy also InvalidArgument when a range
 *  runs past the end of the buffer it starts in or starts before one and
 *  runs into it. A failing driver call is recorded like compiled code's
 *  errors: if it is the thread's first since the bind, its code and message
 *  become moecommCompiledStatus / moecommCompiledLastError (later failures
 *  keep the first message), and compiled code called afterwards does
 *  nothing, as after any error. */
moecommResult_t moecommCompiledDeviceAlloc(size_t bytes, void **ptr);
moecommResult_t moecommCompiledFree(void *ptr);
moecommResult_t moecommCompiledDeviceCopy(void *dst, const void *src,
                                          size_t bytes);
moecommResult_t moecommCompiledDeviceSynchronize(void);
/** The stream the thread's device works on (the cudaStream_t given to
 *  moecommCompiledBindDevice; NULL on the host device or unbound). A graph's
 *  own kernels (external functions it calls on device buffers) enqueue on
 *  it, so they are ordered with the runtime's work: declare it in IR as
 *  `func.func private @moecomm_rt_stream() -> !llvm.ptr`. */
void *moecomm_rt_stream(void);

/** Most exchange stages a strategy has (hierarchical: inter + intra). */
#define MOECOMM_MAX_STAGES 2

/** What the layouts compiled code created on this thread since the last
 *  bind looked like (for drivers' reports: compiled code releases its
 *  layouts itself). Row counts are summed over those layouts (one per chunk
 *  of a chunked layer). */
typedef struct {
  int32_t layouts;                  /* layouts created */
  moecommStrategy_t strategy;       /* of the last one (auto resolved) */
  int32_t numStages;                /* of the last one */
  int64_t recvRows;                 /* dispatch output rows */
  int64_t dropped;                  /* rows dropped by capacity */
  moecommScope_t stageScope[2][MOECOMM_MAX_STAGES]; /* [direction][stage] */
  int64_t stageSendRows[2][MOECOMM_MAX_STAGES];
  int64_t stageRecvRows[2][MOECOMM_MAX_STAGES];
  moecommDataType_t wireType; /* dispatch wire dtype of the last one */
  int64_t capacity;           /* its capacity in rows (0 = none) */
  int64_t align;              /* its expert segment alignment (1 = none) */
} moecommCompiledStats_t;

/** This thread's layout statistics since the last moecommCompiledBind.
 *  InvalidArgument when `stats` is NULL. */
moecommResult_t moecommCompiledGetStats(moecommCompiledStats_t *stats);

/** A rank-1 / rank-2 memref descriptor as MLIR passes it. */
typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} moecommMemRef1D;
typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} moecommMemRef2D;

/* Layout: topk_idx [T][K] (i32 or i64), topk_weights [T][K] f32. Checks
 * that the bound communicator has `ranks` ranks and `ranksPerNode` per node.
 * strategy: 0 per_expert, 1 flat, 2 hierarchical, 3 auto. capacity 0 = none.
 * hidden (H, 0 = unknown) and wire (a moecommDataType_t) are the
 * row-size hints of auto's cost model; align (1 = none) the expert segment
 * alignment of the dispatch output; numSlots, slotExperts [numSlots] and
 * replicaChoice (moecommReplicaChoice_t) the topology's expert placement
 * (0, NULL, 0 without one; compiled code passes a constant global), all as
 * in moecommLayoutDesc_t. The ABI is unversioned: graph and runtime are
 * built from one source tree (moecomm-run's JIT, moecomm-aot's objects
 * linked with the runtime), and a changed signature changes the parameter
 * list here and in convert-moecomm-to-runtime together. */
typedef void *moecommRtLayout_t(moecommMemRef2D *topkIdx,
                                moecommMemRef2D *topkWeights, int64_t ranks,
                                int64_t ranksPerNode, int64_t experts,
                                int32_t strategy, int64_t capacity,
                                int64_t hidden, int32_t wire, int64_t align,
                                int64_t numSlots, const int64_t *slotExperts,
                                int32_t replicaChoice);
moecommRtLayout_t _mlir_ciface_moecomm_rt_layout_i32,
    _mlir_ciface_moecomm_rt_layout_i64;
void moecomm_rt_layout_release(void *layout);
/** Rows of `step` of `direction` (send side, or receive side when `recv`);
 *  step -1: the output (dispatch: R, combine: T). The layout's counts also
 *  on a stopped rank (0 without a layout), consistent with the
 *  tokens_per_expert it gave before the stop. */
int64_t moecomm_rt_rows(void *layout, int32_t direction, int64_t step,
                        int32_t recv);
/** recv_weights [R] f32, tokens_per_expert [E/W] i64 and the expert
 *  segment offsets [E/W + 1] i64 (moecommLayoutExpertOffsets); with an
 *  expert placement S/W and S/W + 1, per local slot. */
void _mlir_ciface_moecomm_rt_recv_weights(void *layout, moecommMemRef1D *out);
void _mlir_ciface_moecomm_rt_tokens_per_expert(void *layout,
                                               moecommMemRef1D *out);
void _mlir_ciface_moecomm_rt_expert_offsets(void *layout, moecommMemRef1D *out);

/* The entry points per element type, grouped by signature: as for the
 * layouts above, each typedef is a function type and the names after it are
 * declared with it. */

/* Gather (permute/pack/unpack): step >= 0 -> moecommPack, -1 ->
 * moecommUnpack. _mlir_ciface_moecomm_rt_gather_<in>_<out>; scales are
 * present exactly for the f8 sides. */
typedef void moecommRtGather_t(void *layout, int32_t direction, int64_t step,
                               int32_t weighted, moecommMemRef2D *in,
                               moecommMemRef2D *out);
typedef void moecommRtGatherToF8_t(void *layout, int32_t direction,
                                   int64_t step, int32_t weighted,
                                   moecommMemRef2D *in, moecommMemRef2D *out,
                                   moecommMemRef2D *outScales);
typedef void moecommRtGatherFromF8_t(void *layout, int32_t direction,
                                     int64_t step, int32_t weighted,
                                     moecommMemRef2D *in,
                                     moecommMemRef2D *inScales,
                                     moecommMemRef2D *out);
typedef void moecommRtGatherF8_t(void *layout, int32_t direction, int64_t step,
                                 int32_t weighted, moecommMemRef2D *in,
                                 moecommMemRef2D *inScales,
                                 moecommMemRef2D *out,
                                 moecommMemRef2D *outScales);
moecommRtGather_t _mlir_ciface_moecomm_rt_gather_bf16_bf16,
    _mlir_ciface_moecomm_rt_gather_f32_f32;
moecommRtGatherToF8_t _mlir_ciface_moecomm_rt_gather_bf16_f8,
    _mlir_ciface_moecomm_rt_gather_f32_f8;
moecommRtGatherFromF8_t _mlir_ciface_moecomm_rt_gather_f8_bf16,
    _mlir_ciface_moecomm_rt_gather_f8_f32;
moecommRtGatherToF8_t _mlir_ciface_moecomm_rt_gather_bf16_ue8m0,
    _mlir_ciface_moecomm_rt_gather_f32_ue8m0,
    _mlir_ciface_moecomm_rt_gather_bf16_mxfp8,
    _mlir_ciface_moecomm_rt_gather_f32_mxfp8;
moecommRtGatherFromF8_t _mlir_ciface_moecomm_rt_gather_ue8m0_bf16,
    _mlir_ciface_moecomm_rt_gather_ue8m0_f32,
    _mlir_ciface_moecomm_rt_gather_mxfp8_bf16,
    _mlir_ciface_moecomm_rt_gather_mxfp8_f32;
moecommRtGatherF8_t _mlir_ciface_moecomm_rt_gather_f8_f8,
    _mlir_ciface_moecomm_rt_gather_ue8m0_ue8m0,
    _mlir_ciface_moecomm_rt_gather_mxfp8_mxfp8;

/* FP8: rows [N][H] bf16 or f32 <-> q [N][H] f8 with their scales:
 * quantize_<T> / dequantize_<T> for fp8_e4m3, quantize_<T>_<format> /
 * dequantize_<T>_<format> for ue8m0 and mxfp8 (moecommQuantizeFp8's
 * rules). */
typedef void moecommRtQuantize_t(moecommMemRef2D *in, moecommMemRef2D *q,
                                 moecommMemRef2D *scales);
typedef void moecommRtDequantize_t(moecommMemRef2D *q, moecommMemRef2D *scales,
                                   moecommMemRef2D *out);
moecommRtQuantize_t _mlir_ciface_moecomm_rt_quantize_bf16,
    _mlir_ciface_moecomm_rt_quantize_f32;
moecommRtDequantize_t _mlir_ciface_moecomm_rt_dequantize_bf16,
    _mlir_ciface_moecomm_rt_dequantize_f32;
moecommRtQuantize_t _mlir_ciface_moecomm_rt_quantize_bf16_ue8m0,
    _mlir_ciface_moecomm_rt_quantize_f32_ue8m0,
    _mlir_ciface_moecomm_rt_quantize_bf16_mxfp8,
    _mlir_ciface_moecomm_rt_quantize_f32_mxfp8;
moecommRtDequantize_t _mlir_ciface_moecomm_rt_dequantize_bf16_ue8m0,
    _mlir_ciface_moecomm_rt_dequantize_f32_ue8m0,
    _mlir_ciface_moecomm_rt_dequantize_bf16_mxfp8,
    _mlir_ciface_moecomm_rt_dequantize_f32_mxfp8;

/* Exchange stage `stage` of `direction` (moecommExchange); the _start_
 * forms return the request (moecommExchangeStart) that moecomm_rt_wait
 * completes, NULL after a failure. */
typedef void moecommRtExchange_t(void *layout, int32_t direction, int64_t stage,
                                 moecommMemRef2D *send, moecommMemRef2D *recv);
typedef void *moecommRtExchangeStart_t(void *layout, int32_t direction,
                                       int64_t stage, moecommMemRef2D *send,
                                       moecommMemRef2D *recv);
typedef void moecommRtExchangeF8_t(void *layout, int32_t direction,
                                   int64_t stage, moecommMemRef2D *send,
                                   moecommMemRef2D *sendScales,
                                   moecommMemRef2D *recv,
                                   moecommMemRef2D *recvScales);
typedef void *moecommRtExchangeStartF8_t(void *layout, int32_t direction,
                                         int64_t stage, moecommMemRef2D *send,
                                         moecommMemRef2D *sendScales,
                                         moecommMemRef2D *recv,
                                         moecommMemRef2D *recvScales);
moecommRtExchange_t _mlir_ciface_moecomm_rt_exchange_bf16,
    _mlir_ciface_moecomm_rt_exchange_f32;
moecommRtExchangeStart_t _mlir_ciface_moecomm_rt_exchange_start_bf16,
    _mlir_ciface_moecomm_rt_exchange_start_f32;
moecommRtExchangeF8_t _mlir_ciface_moecomm_rt_exchange_f8,
    _mlir_ciface_moecomm_rt_exchange_ue8m0,
    _mlir_ciface_moecomm_rt_exchange_mxfp8;
moecommRtExchangeStartF8_t _mlir_ciface_moecomm_rt_exchange_start_f8,
    _mlir_ciface_moecomm_rt_exchange_start_ue8m0,
    _mlir_ciface_moecomm_rt_exchange_start_mxfp8;
void moecomm_rt_wait(void *request);

/* Collective level (the runtime's one-shot calls). dispatch: x [T][H] ->
 * recv [R][H], wire a moecommDataType_t (f32, bf16 or an FP8 format);
 * combine: y [R][H] -> out [T][H]. */
typedef void moecommRtDispatch_t(void *layout, int32_t wire, moecommMemRef2D *x,
                                 moecommMemRef2D *recv);
typedef void moecommRtCombine_t(void *layout, int32_t weighted,
                                moecommMemRef2D *y, moecommMemRef2D *out);
moecommRtDispatch_t _mlir_ciface_moecomm_rt_dispatch_bf16,
    _mlir_ciface_moecomm_rt_dispatch_f32;
moecommRtCombine_t _mlir_ciface_moecomm_rt_combine_bf16,
    _mlir_ciface_moecomm_rt_combine_f32;

/* all_to_all: sendCounts [W] (i32 or i64), recvCounts [W] i64. The counts
 * call fills recvCounts and returns its sum (the rows to receive). Rows are
 * bf16, f32 or i64 (metadata such as per-expert counts, 8 bytes an
 * element in the traffic). */
typedef int64_t moecommRtAllToAllCounts_t(int64_t ranks, int64_t ranksPerNode,
                                          moecommMemRef1D *sendCounts,
                                          moecommMemRef1D *recvCounts);
typedef void moecommRtAllToAll_t(int64_t ranks, int64_t ranksPerNode,
                                 moecommMemRef2D *send,
                                 moecommMemRef1D *sendCounts,
                                 moecommMemRef2D *recv,
                                 moecommMemRef1D *recvCounts);
moecommRtAllToAllCounts_t _mlir_ciface_moecomm_rt_all_to_all_counts_i32,
    _mlir_ciface_moecomm_rt_all_to_all_counts_i64;
moecommRtAllToAll_t _mlir_ciface_moecomm_rt_all_to_all_bf16_i32,
    _mlir_ciface_moecomm_rt_all_to_all_bf16_i64,
    _mlir_ciface_moecomm_rt_all_to_all_f32_i32,
    _mlir_ciface_moecomm_rt_all_to_all_f32_i64,
    _mlir_ciface_moecomm_rt_all_to_all_i64_i32,
    _mlir_ciface_moecomm_rt_all_to_all_i64_i64;

/* A runtime check of compiled code (moecomm-import-ragged-all-to-all's
 * checks of JAX's offsets and sizes): unless `ok`, records
 * moecommInvalidArgument on this thread with the message "<where>: rank
 * <r>: <what>" (r: the bound communicator's rank; "<where>: <what>" when
 * none is bound), each "{}" in `what` replaced by the next of v0..v3. The
 * compiled code skips the work the check guards; the thread's next
 * collective call shares the error with the other ranks (see Errors above).
 * `where` and `what` are NUL-terminated. */
void moecomm_rt_check(int32_t ok, const char *where, const char *what,
                      int64_t v0, int64_t v1, int64_t v2, int64_t v3);

/* Buffers of cuda-target graphs (moecomm-device-buffers): every
 * memref.alloc becomes moecomm_rt_alloc of its bytes (a memref<?xi8>, 256-byte
 * aligned, viewed as the buffer), with `device` 1 for device memory, 0 for the
 * host metadata; memref.dealloc becomes moecomm_rt_free of the buffer's
 * address; memref.copy becomes moecomm_rt_copy_<T> and a linalg.fill with
 * zero moecomm_rt_fill_zero_<T> of ranked memrefs of any strides (passed
 * unranked: {rank, descriptor}), <T> one of bf16, f32, i32, i64, i8,
 * f8e4m3fn, f8e8m0fnu. All are stream-ordered on the bound device, except
 * copies and fills that touch only host metadata: those run at once on the
 * calling thread (a CUDA device cannot memset host memory). Memory outside
 * the buffers allocated on this thread is host memory (the graph's
 * constants); a view that starts in a buffer and runs past its end is
 * moecommInvalidArgument, and strides must be >= 0. Allocation and free work on
 * a stopped thread too (the graph's own code still touches its buffers); a
 * failed allocation is moecommSystemError "out of memory: ..." with a NULL
 * buffer, and one without a device bound records moecommInvalidArgument but
 * still returns host memory. */
typedef struct {
  int64_t rank;
  void *descriptor; /* {allocated, aligned, offset, sizes[rank], strides[rank]} */
} moecommUnrankedMemRef;
void _mlir_ciface_moecomm_rt_alloc(moecommMemRef1D *result, int64_t bytes,
                                   int32_t device);
void moecomm_rt_free(void *address);
typedef void moecommRtCopy_t(moecommUnrankedMemRef *src,
                             moecommUnrankedMemRef *dst);
typedef void moecommRtFillZero_t(moecommUnrankedMemRef *dst);
moecommRtCopy_t _mlir_ciface_moecomm_rt_copy_bf16,
    _mlir_ciface_moecomm_rt_copy_f32, _mlir_ciface_moecomm_rt_copy_i32,
    _mlir_ciface_moecomm_rt_copy_i64, _mlir_ciface_moecomm_rt_copy_i8,
    _mlir_ciface_moecomm_rt_copy_f8e4m3fn,
    _mlir_ciface_moecomm_rt_copy_f8e8m0fnu;
moecommRtFillZero_t _mlir_ciface_moecomm_rt_fill_zero_bf16,
    _mlir_ciface_moecomm_rt_fill_zero_f32,
    _mlir_ciface_moecomm_rt_fill_zero_i32,
    _mlir_ciface_moecomm_rt_fill_zero_i64,
    _mlir_ciface_moecomm_rt_fill_zero_i8,
    _mlir_ciface_moecomm_rt_fill_zero_f8e4m3fn,
    _mlir_ciface_moecomm_rt_fill_zero_f8e8m0fnu;

/* Expert GEMM (emitted by moecomm-matmul-to-blas for f32 linalg.matmul):
 * C [M][N] += A [M][K] x B, with B [K][N] (transposeB 0) or B [N][K]
 * (transposeB 1: C += A B^T), all f32, through OpenBLAS's cblas_sgemm
 * (row-major, leading dimensions from strides[0]). Each row must be
 * contiguous (strides[1] == 1) and the rows may be spaced by any leading
 * dimension >= the row length (rows of a larger buffer, a subview of one
 * expert's weights). The call runs on the calling thread: unless the
 * environment sets OPENBLAS_NUM_THREADS, the runtime sets OpenBLAS to one
 * thread (openblas_set_num_threads(1), once per process), so every rank
 * thread computes its own GEMMs and concurrent calls from rank threads run
 * in parallel (OpenBLAS is thread-safe; each call takes its own work
 * buffers). Mismatched shapes, a non-unit inner stride, a leading dimension
 * below the row length, a NULL descriptor, no data with elements, a negative
 * offset, or a dimension beyond 2^31 - 1 are moecommInvalidArgument. No
 * communicator needs to be bound. On a device-bound thread the operands must
 * be device buffers and the GEMM runs on the bound stream (cuBLAS's sgemm,
 * FP32 math, on a CUDA device; OpenBLAS on the host device). */
void _mlir_ciface_moecomm_rt_matmul_f32(int32_t transposeB, moecommMemRef2D *a,
                                        moecommMemRef2D *b,
                                        moecommMemRef2D *c);

#ifdef __cplusplus
}
#endif

#endif /* MOECOMM_MOECOMM_COMPILED_H */
