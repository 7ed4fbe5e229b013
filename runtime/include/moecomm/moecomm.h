/*===- moecomm.h - MoE expert-parallel communication runtime (C99 ABI) ----===*
 *
 * The runtime that moecomm's compiler lowers to, usable directly by any
 * framework. Modelled on NCCL's C API: communicator objects, explicit streams,
 * blocking calls plus start/wait pairs, error codes with a readable string.
 * Nothing here calls abort(): every failure is a moecommResult_t plus a
 * message from moecommCommGetLastError().
 *
 * Terms (DESIGN.md §2): W ranks, G ranks per node (node(r) = r / G,
 * local_rank(r) = r % G), E experts with rank r hosting the "local experts"
 * [r*E/W, (r+1)*E/W), T tokens on a rank (may be 0, may differ per rank),
 * H hidden size, K top-k. Rows are row-major and contiguous.
 *
 * Collective calls (marked "collective") must be issued by every rank of the
 * communicator in the same order. Input errors are agreed on collectively
 * before any payload moves, so every rank returns the same error code and
 * message and no rank hangs.
 *
 * Undefined behaviour, as in NCCL (the runtime cannot detect it cheaply):
 * using a communicator, layout or request after it was destroyed or waited
 * (a second moecommWait or *Destroy of the same handle); destroying a layout
 * before the requests that use it completed; a collective that some rank of
 * the communicator never issues (the others wait for it); changing or freeing
 * a buffer between a start call and its wait. Enum values out of range, NULL
 * pointers, negative counts and sizes whose byte count overflows are errors
 * (InvalidArgument), not undefined.
 *===----------------------------------------------------------------------===*/
#ifndef MOECOMM_MOECOMM_H
#define MOECOMM_MOECOMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOECOMM_VERSION_MAJOR 0
#define MOECOMM_VERSION_MINOR 1

/** Elements per scale block of moecommFloat8E4M3 and moecommFloat8E4M3UE8M0:
 *  one scale per 128 contiguous hidden elements of a row (DeepSeek-V3's 1x128
 *  blocks); the last block of a row may be partial, so a row has
 *  ceil(H / 128) scales. */
#define MOECOMM_FP8_BLOCK 128
/** Elements per scale block of moecommMxfp8 (OCP Microscaling v1.0's block
 *  size k = 32); a row has ceil(H / 32) scales, the last block possibly
 *  partial. */
#define MOECOMM_MXFP8_BLOCK 32

typedef enum {
  moecommSuccess = 0,
  /** Bad input: expert id out of range, duplicate id in a top-k row, E % W != 0,
   *  wrong row counts, null pointers, unsupported dtype combination. The message
   *  names the rank, token and slot where they apply. */
  moecommInvalidArgument = 1,
  /** Ranks disagree: all_to_all counts that are not a transpose, different
   *  K / E / H / dtype on different ranks, collectives issued out of order. */
  moecommMismatch = 2,
  /** The transport failed (MPI, OS, CUDA or NCCL error). */
  moecommSystemError = 3,
  /** The backend or feature is not available (not built, or no GPU present). */
  moecommUnsupported = 4,
  /** A bug in moecomm; the message says where. */
  moecommInternalError = 5,
  moecommNumResults = 6,
  /* Every enum of this header has a MinEnum and a MaxEnum enumerator (not
   * values to pass): together they make the enum's range all of int, so any
   * int a caller passes, negative or huge, is a value the runtime can check
   * and reject (InvalidArgument). Without them C++ would make a value outside
   * the enumerators' bit range (e.g. -1) undefined behaviour. */
  moecommResultMinEnum = -0x7fffffff - 1,
  moecommResultMaxEnum = 0x7fffffff
} moecommResult_t;

typedef enum {
  moecommFloat32 = 0,
  moecommBfloat16 = 1,
  /** FP8 e4m3 "fn" (finite, max 448) with 1x128 f32 block scales:
   *  H + 4 * ceil(H / 128) bytes per row. */
  moecommFloat8E4M3 = 2,
  moecommInt32 = 3,
  moecommInt64 = 4,
  /** FP8 e4m3fn with 1x128 block scales rounded up to a power of two and
   *  stored as one E8M0 byte each (DeepSeek-V3's UE8M0 scales):
   *  H + ceil(H / 128) bytes per row. */
  moecommFloat8E4M3UE8M0 = 5,
  /** OCP MXFP8: e4m3fn elements with one E8M0 scale byte per 32 elements:
   *  H + ceil(H / 32) bytes per row. */
  moecommMxfp8 = 6,
  moecommDataTypeMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommDataTypeMaxEnum = 0x7fffffff
} moecommDataType_t;

/** How dispatch/combine rows travel (DESIGN.md §2). All strategies give
 *  identical dispatch bits; combine sums may differ in the last bit (see
 *  docs/runtime.md for the bound). */
typedef enum {
  /** One copy per (token, expert): Megatron's all-to-all dispatcher. */
  moecommPerExpert = 0,
  /** One copy per (token, destination rank). */
  moecommFlat = 1,
  /** One inter-node copy per (token, destination node) to the peer rank, then
   *  an intra-node fan-out (DeepEP / Hybrid-EP). */
  moecommHierarchical = 2,
  /** Chosen per layout by the cost model from the actual routing. */
  moecommAuto = 3,
  moecommStrategyMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommStrategyMaxEnum = 0x7fffffff
} moecommStrategy_t;

/** How a layout with an expert placement (replicated experts) picks one
 *  physical replica for each (token, logical expert); moecomm/Model/
 *  Placement.h states the rule exactly. */
typedef enum {
  /** Fewest inter-node copies first: a replica on the token's own node, then
   *  on a node the token already sends to, then on the node holding replicas
   *  of most of its remaining experts; the least-loaded replica within each
   *  tier. moecomm's own choice (no EP library has one). */
  moecommReplicaLocality = 0,
  /** The least-loaded replica, nodes ignored: EPLB's load-only balancing
   *  (DeepSeek's redundant experts), the baseline. */
  moecommReplicaLoadOnly = 1,
  moecommReplicaChoiceMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommReplicaChoiceMaxEnum = 0x7fffffff
} moecommReplicaChoice_t;

/** The ranks an exchange stage talks to. */
typedef enum {
  /** All W ranks. */
  moecommScopeGlobal = 0,
  /** The G ranks of this rank's node. */
  moecommScopeIntraNode = 1,
  /** The W/G peers: ranks with this rank's local_rank, one per node. */
  moecommScopeInterNode = 2,
  moecommScopeMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommScopeMaxEnum = 0x7fffffff
} moecommScope_t;

typedef enum {
  moecommDirectionDispatch = 0,
  moecommDirectionCombine = 1,
  /** Raw ragged all_to_all (traffic accounting only). */
  moecommDirectionAllToAll = 2,
  moecommDirectionMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommDirectionMaxEnum = 0x7fffffff
} moecommDirection_t;

typedef enum {
  moecommBackendThreads = 0,
  moecommBackendMpi = 1,
  moecommBackendNccl = 2,
  moecommBackendMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommBackendMaxEnum = 0x7fffffff
} moecommBackend_t;

typedef enum {
  moecommLinkIntraNode = 0,
  moecommLinkInterNode = 1,
  moecommLinkClassMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommLinkClassMaxEnum = 0x7fffffff
} moecommLinkClass_t;

typedef struct moecommComm *moecommComm_t;
typedef struct moecommLayout *moecommLayout_t;
typedef struct moecommRequest *moecommRequest_t;
typedef struct moecommThreadGroup *moecommThreadGroup_t;
/** cudaStream_t for the nccl backend; NULL on the CPU backends. */
typedef void *moecommStream_t;

/** A block of rows: data is [rows][hidden] elements of `type`, contiguous.
 *  The FP8 types (moecommFloat8E4M3, moecommFloat8E4M3UE8M0, moecommMxfp8;
 *  data is one e4m3fn code per element) carry block scales that travel with
 *  their rows: `scales` is [rows][ceil(hidden / block)] scales, block =
 *  MOECOMM_FP8_BLOCK or MOECOMM_MXFP8_BLOCK, each an f32 for
 *  moecommFloat8E4M3 and one E8M0 byte (uint8_t: the scale is
 *  2^(byte - 127); 255, NaN, is never produced) for the other two. A row's
 *  element k is decode(code) * scale[k / block]. Otherwise `scales` is
 *  ignored. */
typedef struct {
  void *data;
  void *scales;
  int64_t rows;
  int64_t hidden;
  moecommDataType_t type;
} moecommRows_t;

/** Bytes and messages this rank sent, by direction x scope x link class.
 *  `bytes` counts payload only (row elements plus FP8 scales); copies to self
 *  are local and not counted. Layout metadata (counts, expert ids, weights) is
 *  counted separately. All counts are exact. */
typedef struct {
  uint64_t bytes[3][3][2];       /* [moecommDirection_t][moecommScope_t][moecommLinkClass_t] */
  uint64_t messages[3][3][2];    /* non-empty point-to-point sends */
  uint64_t metadataBytes[2];     /* [moecommLinkClass_t] */
  uint64_t metadataMessages[2];  /* [moecommLinkClass_t] */
} moecommTraffic_t;

/** The alpha-beta link model used by moecommAuto (DESIGN.md §7):
 *  a stage costs max over links of (alpha * messages + bytes / beta). */
typedef struct {
  double intraAlphaSec;          /* seconds per message on the intra-node link */
  double intraBetaBytesPerSec;   /* bytes/s per rank per direction */
  double interAlphaSec;
  double interBetaBytesPerSec;
} moecommLinkModel_t;

/*--- Errors ---------------------------------------------------------------*/

/** A static, human-readable name of a result code. Never NULL. */
const char *moecommGetErrorString(moecommResult_t result);

/** The message of the last failed call on `comm` ("" if none). Valid until the
 *  next call on `comm`. Never NULL, also for comm == NULL (then it returns the
 *  last creation error of this thread). */
const char *moecommCommGetLastError(moecommComm_t comm);

/*--- Communicators --------------------------------------------------------*/

/** Creates the shared state for `nranks` threads of this process acting as
 *  ranks (backend `threads`), `ranksPerNode` per node. Errors:
 *  InvalidArgument when nranks < 1, ranksPerNode < 1 or nranks % ranksPerNode. */
moecommResult_t moecommThreadGroupCreate(int nranks, int ranksPerNode,
                                         moecommThreadGroup_t *group);
/** Destroys the group; every communicator made from it must be destroyed first. */
moecommResult_t moecommThreadGroupDestroy(moecommThreadGroup_t group);

/** Called once by each of the group's threads with its own rank in [0, nranks).
 *  Collective: returns when all ranks have joined. */
moecommResult_t moecommCommInitThreadRank(moecommComm_t *comm,
                                          moecommThreadGroup_t group, int rank);

/** Destroys a communicator (local). Outstanding requests must be waited first. */
moecommResult_t moecommCommDestroy(moecommComm_t comm);

moecommResult_t moecommCommRank(moecommComm_t comm, int *rank);
moecommResult_t moecommCommSize(moecommComm_t comm, int *nranks);
moecommResult_t moecommCommRanksPerNode(moecommComm_t comm, int *ranksPerNode);
moecommResult_t moecommCommBackend(moecommComm_t comm, moecommBackend_t *backend);

/** Sets the link model moecommAuto uses (local; set the same on every rank).
 *  Default: the H200 DGX preset (NVLink 450 GB/s, inter-node 50 GB/s). */
moecommResult_t moecommCommSetLinkModel(moecommComm_t comm,
                                        const moecommLinkModel_t *model);

/** Over message passing (the mpi backend), dispatch and combine cut every
 *  block of a stage into chunks of about `bytes` bytes (at most 32 per
 *  stage, shared by its blocks), and each chunk flows into the next stage as soon as it arrives:
 *  a relay forwards (dispatch) or reduces and sends on (combine) the first
 *  rows while later ones still cross the inter-node link. Default 256 KiB
 *  (MOECOMM_DEFAULT_PIPELINE_CHUNK_BYTES). Smaller chunks start the next
 *  stage sooner and cost more messages. Local; it must be equal on every
 *  rank (each dispatch and combine checks: moecommMismatch). `bytes` in
 *  [1, 2^40], else moecommInvalidArgument. No effect on the threads backend
 *  (ranks share memory: rows are read in place) or on device backends. */
#define MOECOMM_DEFAULT_PIPELINE_CHUNK_BYTES (1 << 18)
moecommResult_t moecommCommSetPipelineChunkBytes(moecommComm_t comm,
                                                 int64_t bytes);

/** Traffic counters. `global` = 0: this rank's counters (local call);
 *  `global` = 1: the sum over all ranks (collective). */
moecommResult_t moecommCommGetTraffic(moecommComm_t comm, int global,
                                      moecommTraffic_t *traffic);
moecommResult_t moecommCommResetTraffic(moecommComm_t comm);

/*--- Trace (per-rank timeline of the runtime's work) ----------------------*/

/** What a trace event spans. */
typedef enum {
  /** moecommLayoutCreate: routing agreement and the plan. */
  moecommTraceKindLayout = 0,
  /** A stage's gather of rows into its send block (dispatch, or a combine
   *  stage that only gathers), and moecommPack of compiled code. */
  moecommTraceKindPack = 1,
  /** A combine stage's weighted sum of partial rows into its send block
   *  (the combine pack), and moecommPack that reduces. */
  moecommTraceKindReduce = 2,
  /** A pack that converts rows to FP8 (the first dispatch stage with an
   *  FP8 wire, or the W = 1 dispatch), and compiled code's FP8 casts. */
  moecommTraceKindQuantize = 3,
  /** One exchange stage: from its post until the wait for it returns (mpi
   *  dispatch and combine, pipelined: from the start of the stage's sends
   *  until its last chunk was received). */
  moecommTraceKindExchange = 4,
  /** The last step of dispatch / combine: rows into the caller's output
   *  (dispatch: a gather; combine: the weighted sum), and moecommUnpack. */
  moecommTraceKindUnpack = 5,
  /** moecommAllToAll / moecommAllToAllStart: from post to completion. */
  moecommTraceKindAllToAll = 6,
  /** moecommWait: the caller blocked on a request. */
  moecommTraceKindWait = 7,
  /** A whole moecommDispatch(Start): from the call until it completes. */
  moecommTraceKindDispatch = 8,
  /** A whole moecommCombine(Start): from the call until it completes. */
  moecommTraceKindCombine = 9,
  /** A call of the caller's thread into the runtime that can move rows or
   *  wait (layout creation, dispatch / combine / all_to_all / exchange and
   *  their starts, pack, unpack, moecommWait, barrier, all-reduce; not the
   *  local queries): from entry to return. Between two of them the caller
   *  computes, whatever its started collectives do meanwhile. */
  moecommTraceKindCall = 10,
  moecommTraceKindMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommTraceKindMaxEnum = 0x7fffffff
} moecommTraceKind_t;

/** The direction a trace event belongs to. */
typedef enum {
  moecommTraceDirNone = 0, /* layout, all_to_all, wait, compiled FP8 casts */
  moecommTraceDirDispatch = 1,
  moecommTraceDirCombine = 2,
  moecommTraceDirMinEnum = -0x7fffffff - 1, /* range: all of int */
  moecommTraceDirMaxEnum = 0x7fffffff
} moecommTraceDirection_t;

/** One span of a rank's work. Times are seconds on the process's
 *  std::chrono::steady_clock (time_since_epoch; monotonic, an arbitrary
 *  origin per boot, the same for every thread of the process and, on Linux,
 *  for every process of the machine: CLOCK_MONOTONIC). */
typedef struct {
  moecommTraceKind_t kind;
  moecommTraceDirection_t direction;
  /** The plan's stage index, or -1 for an event of no single stage. */
  int32_t stage;
  /** The ranks the event talks to (a stage's scope); global otherwise. */
  moecommScope_t scope;
  double startSec;
  double endSec; /* >= startSec */
  /** Payload bytes: the rows this rank sends (exchange, all_to_all, whole
   *  dispatch / combine: summed over stages) or writes (pack, reduce,
   *  quantize, unpack); 0 for layout and wait. */
  int64_t bytes;
} moecommTraceEvent_t;

/** The most events a communicator keeps between two moecommCommSetTrace
 *  calls; later events are dropped and counted (moecommCommGetTraceDropped).
 *  40 bytes each: at most 10.5 MB per communicator. */
#define MOECOMM_TRACE_MAX_EVENTS 262144

/** Starts (`enable` != 0) or stops (0) recording this rank's trace events
 *  (local). Either way the recorded events and the drop count are cleared;
 *  a span begun before the last start (a request started, the trace
 *  switched off and on, then waited) is not recorded.
 *  Off by default; off, each traced place costs one predictable branch.
 *  The host backends (threads, mpi) record every kind; nccl records only
 *  the host-side layout and wait spans (no device events). */
moecommResult_t moecommCommSetTrace(moecommComm_t comm, int enable);
/** Copies this rank's recorded events, in the order they ended, into
 *  `events` (min(capacity, *count) of them; `events` may be NULL when
 *  capacity is 0) and sets *count to the number recorded (local; count is
 *  always set). InvalidArgument when count is NULL, capacity < 0, or events
 *  is NULL with capacity > 0. */
moecommResult_t moecommCommGetTrace(moecommComm_t comm,
                                    moecommTraceEvent_t *events,
                                    int64_t capacity, int64_t *count);
/** The events dropped since the last moecommCommSetTrace because the
 *  buffer was full (local). InvalidArgument when dropped is NULL. */
moecommResult_t moecommCommGetTraceDropped(moecommComm_t comm,
                                           int64_t *dropped);
/** "layout", "pack", "reduce", "quantize", "exchange", "unpack",
 *  "all_to_all", "wait", "dispatch", "combine"; "unknown" otherwise. */
const char *moecommTraceKindName(moecommTraceKind_t kind);

/** Collective sum of `count` int64 values over all ranks, in place.
 *  InvalidArgument (on every rank, values unchanged) when count < 0, count >
 *  2^24, values is NULL with count > 0, or a sum overflows int64. */
moecommResult_t moecommAllReduceSum(moecommComm_t comm, int64_t *values,
                                    int64_t count);
/** Collective barrier. */
moecommResult_t moecommBarrier(moecommComm_t comm);

/*--- Layout (the dispatch handle) -----------------------------------------*/

typedef struct {
  int64_t numTokens;            /* T >= 0 on this rank */
  int32_t topk;                 /* K >= 1, same on all ranks */
  int64_t numExperts;           /* E >= 1, same on all ranks; E % W == 0
                                   unless numSlots != 0 (then logical) */
  moecommDataType_t idxType;    /* moecommInt32 or moecommInt64 */
  const void *topkIdx;          /* [T][K] expert ids; -1 = masked slot */
  const float *topkWeights;     /* [T][K] routing weights, or NULL = 1.0 */
  int64_t capacity;             /* max received rows per rank; 0 = none */
  moecommStrategy_t strategy;
  /* Hints for moecommAuto's cost model (bytes per row on the wire). */
  int64_t hidden;               /* H; 0 = 7168 */
  moecommDataType_t wireType;   /* bf16, f32 or an FP8 type */
  /* Expert segment alignment of dispatch's recv, in rows: a power of two in
   * [1, MOECOMM_MAX_ALIGN], same on all ranks; 0 = 1 (so a zero-initialised
   * desc keeps the unpadded layout). Every local expert's segment starts at
   * a multiple of `align` rows: its real rows (same order as align 1), then
   * zero padding rows up to the next multiple (grouped GEMMs' tile rows:
   * DeepEP / NCCL EP `expert_alignment`, Hybrid-EP `pad_multiple`). Padding
   * is made by the receiver: no byte or message more is sent. */
  int64_t align;
  /* Expert placement (replicated experts, DeepSeek EPLB's phy2log;
   * moecomm/Model/Placement.h): numSlots = 0 (a zero-initialised desc) is
   * none, slot e holding expert e. Otherwise S = numSlots physical expert
   * slots, S >= numExperts, S % W == 0, rank r holding slots
   * [r*S/W, (r+1)*S/W); slotExperts[S] gives each slot's logical expert in
   * [0, numExperts), every expert in at least one slot, same on all ranks.
   * topkIdx then holds logical ids, and the layout picks one slot per
   * (token, expert) by replicaChoice; recv, tokens_per_expert, expert
   * offsets, recv weights and sources are per local slot (S/W of them).
   * slotExperts may be host or (nccl backend) device memory; replicaChoice
   * is read only when numSlots != 0. */
  int64_t numSlots;
  const int64_t *slotExperts;
  moecommReplicaChoice_t replicaChoice;
} moecommLayoutDesc_t;

/** The largest expert segment alignment (rows): grouped GEMM tiles are at
 *  most a few hundred rows; the bound keeps the padded R (at most
 *  E/W * (align - 1) rows more) addressable. */
#define MOECOMM_MAX_ALIGN 65536

typedef struct {
  int64_t recvRows;             /* R: rows of dispatch's recv on this rank,
                                   padding rows of align > 1 included */
  int64_t localExperts;         /* E / W; with a placement S / W (slots) */
  int64_t dropped;              /* rows dropped by capacity at this rank */
  moecommStrategy_t strategy;   /* the strategy in effect (auto resolved) */
  int numStages;                /* exchange stages per direction (0 when W == 1) */
  int64_t numTokens;            /* T: this rank's tokens (rows of combine's out) */
} moecommLayoutInfo_t;

/** Collective. Validates the routing (ids in [-1, E), no duplicate id in a
 *  row, same K and E everywhere, E % W == 0), computes per-expert counts and
 *  capacity drops (deterministic: latest source rank, then latest token, is
 *  dropped first), exchanges the routing metadata and builds the plan of every
 *  stage of the chosen strategy. The layout is reused by the dispatch, its
 *  combine and their backward passes.
 *  With an expert placement (numSlots != 0) it also checks, in this order
 *  after the routing's type, strategy, wire type, hidden and align:
 *  numSlots >= 0, slotExperts not NULL, replicaChoice one of the enum's
 *  values, then the routing against the logical E (E % W not required),
 *  then the placement (S >= E, S % W == 0, ids in [0, E), every expert
 *  placed: "rank R: placement: ..."); every rank must pass the same
 *  placement and choice (else Mismatch naming the placement's field). The
 *  replica choice then rewrites the logical ids into slot ids
 *  (moecomm/Model/Placement.h) and everything above, capacity drops
 *  included, is done over the S slots. InvalidArgument for each fault. */
moecommResult_t moecommLayoutCreate(moecommComm_t comm,
                                    const moecommLayoutDesc_t *desc,
                                    moecommLayout_t *layout);
moecommResult_t moecommLayoutDestroy(moecommLayout_t layout);
moecommResult_t moecommLayoutGetInfo(moecommLayout_t layout,
                                     moecommLayoutInfo_t *info);
/** tokens_per_expert[E/W] (int64) of this rank's local experts, after drops:
 *  the real rows, padding not counted. With a placement: [S/W], per local
 *  slot (a replica's rows, not its logical expert's total). */
moecommResult_t moecommLayoutTokensPerExpert(moecommLayout_t layout,
                                             int64_t *tokensPerExpert);
/** offsets[E/W + 1] (int64): local expert e's segment of recv is rows
 *  [offsets[e], offsets[e+1]), its tokensPerExpert[e] real rows first, then
 *  padding; offsets[0] = 0, offsets[E/W] = R, each a multiple of the desc's
 *  align (what a grouped GEMM takes as its group offsets). Local.
 *  InvalidArgument when layout or offsets is NULL. */
moecommResult_t moecommLayoutExpertOffsets(moecommLayout_t layout,
                                           int64_t *offsets);
/** recv_weights[R]: the routing weight of each received row, expert-major;
 *  0 for a padding row. */
moecommResult_t moecommLayoutRecvWeights(moecommLayout_t layout,
                                         float *recvWeights);
/** sources[R][2]: (source rank, source token) of each received row;
 *  (-1, -1) for a padding row (as the capacity plan's padding,
 *  moecomm_nccl.h). */
moecommResult_t moecommLayoutRecvSources(moecommLayout_t layout,
                                         int64_t *sources);
/** Scope and row counts of exchange stage `stage` in [0, numStages) of
 *  `direction`. Combine stages run in the reverse order of dispatch stages. */
moecommResult_t moecommLayoutStage(moecommLayout_t layout,
                                   moecommDirection_t direction, int stage,
                                   moecommScope_t *scope, int64_t *sendRows,
                                   int64_t *recvRows);

/*--- One-shot collectives -------------------------------------------------*/

/** Collective. x: [T][H] f32 or bf16. recv: [R][H] of x's type, expert-major
 *  (by local expert, then source rank, then source token; with align > 1
 *  each expert's segment ends in zero padding rows, see
 *  moecommLayoutExpertOffsets). wireType is x's type or an FP8 type
 *  (quantized once on the sending rank, dequantized on arrival). Identical
 *  bits for every strategy and backend. */
moecommResult_t moecommDispatch(moecommComm_t comm, moecommLayout_t layout,
                                const moecommRows_t *x,
                                moecommDataType_t wireType,
                                moecommRows_t *recv, moecommStream_t stream);

/** Collective. y: [R][H] in dispatch's row order; out: [T][H] of y's type.
 *  out[t] = sum over kept slots k of (weighted ? w[t,k] : 1) * y[row(t,k)],
 *  accumulated in f32; tokens with no kept slot get zeros. Padding rows of
 *  y (align > 1) are never read. */
moecommResult_t moecommCombine(moecommComm_t comm, moecommLayout_t layout,
                               const moecommRows_t *y, int weighted,
                               moecommRows_t *out, moecommStream_t stream);

/** Start/wait forms of the collectives above and of moecommExchange: the
 *  start call posts the operation and returns, and on the CPU backends the
 *  communicator's progress thread carries it on while the caller computes
 *  (docs/runtime.md, Threading); buffers must stay valid and
 *  unmodified until moecommWait returns. Requests complete in any order but
 *  must be started in the same order on every rank. A NULL `request` is the
 *  blocking form: the operation completes before the call returns (this is
 *  how the one-shot calls are built). */
moecommResult_t moecommDispatchStart(moecommComm_t comm, moecommLayout_t layout,
                                     const moecommRows_t *x,
                                     moecommDataType_t wireType,
                                     moecommRows_t *recv, moecommStream_t stream,
                                     moecommRequest_t *request);
moecommResult_t moecommCombineStart(moecommComm_t comm, moecommLayout_t layout,
                                    const moecommRows_t *y, int weighted,
                                    moecommRows_t *out, moecommStream_t stream,
                                    moecommRequest_t *request);
/** Completes and frees the request. */
moecommResult_t moecommWait(moecommRequest_t request);

/** Collective. Learns recvCounts[W] (rows from each source rank) from every
 *  rank's sendCounts[W]. */
moecommResult_t moecommAllToAllCounts(moecommComm_t comm,
                                      const int64_t *sendCounts,
                                      int64_t *recvCounts);
/** Collective ragged all_to_all. send holds sum(sendCounts) rows sorted by
 *  destination rank; recv receives sum(recvCounts) rows concatenated by source
 *  rank. recvCounts must be the transpose of every rank's sendCounts: this is
 *  checked collectively before any payload moves (Mismatch, no hang). */
moecommResult_t moecommAllToAll(moecommComm_t comm, const moecommRows_t *send,
                                const int64_t *sendCounts, moecommRows_t *recv,
                                const int64_t *recvCounts,
                                moecommStream_t stream);
moecommResult_t moecommAllToAllStart(moecommComm_t comm,
                                     const moecommRows_t *send,
                                     const int64_t *sendCounts,
                                     moecommRows_t *recv,
                                     const int64_t *recvCounts,
                                     moecommStream_t stream,
                                     moecommRequest_t *request);

/*--- FP8 (local) ----------------------------------------------------------*/

/** in: f32/bf16 rows; out: rows + scales of an FP8 type (out->type), same
 *  shape. Per block of the type's block size, amax = max |x| over the block
 *  (NaNs ignored) and q = e4m3(x / scale) rounded to nearest even and
 *  saturated to +-448 (NaN -> NaN code), where scale is
 *  - moecommFloat8E4M3: amax / 448 in f32;
 *  - moecommFloat8E4M3UE8M0: the smallest power of two 2^e with
 *    amax / 2^e <= 448 (DeepSeek-V3's 2^ceil(log2(amax / 448)));
 *  - moecommMxfp8: 2^(floor(log2(amax)) - 8) (OCP MX v1.0 §6.3, emax of
 *    e4m3 = 8; elements above 448 then saturate);
 *  1 for an all-zero block; E8M0 exponents are clamped to [-127, 127]
 *  (an infinite amax gives 2^127). InvalidArgument for other types. */
moecommResult_t moecommQuantizeFp8(const moecommRows_t *in, moecommRows_t *out);
/** in: FP8 rows + scales (any FP8 type); out: f32/bf16 rows,
 *  x = decode(q) * scale in f32 (then rounded to bf16). */
moecommResult_t moecommDequantizeFp8(const moecommRows_t *in,
                                     moecommRows_t *out);

/*--- Staged primitives (what the compiler's staged IR lowers to) ----------*
 * dispatch == for s in stages: pack(s) -> exchange(s); then unpack.
 * combine  == the same with direction = combine.
 * Stage 0's pack reads x (dispatch) or y (combine); stage s > 0 reads the recv
 * rows of stage s - 1; unpack reads the last stage's recv rows (x or y when
 * numStages == 0).                                                          */

/** Local. Gathers rows of `in` into the send order of `stage` (dispatch), or
 *  sums them per destination row in f32 (combine; `weighted` applies the
 *  routing weights where this strategy applies them). Dispatch types: same
 *  in/out type (gather), f32/bf16 -> FP8 (gather + quantize), FP8 -> FP8. */
moecommResult_t moecommPack(moecommComm_t comm, moecommLayout_t layout,
                            moecommDirection_t direction, int stage,
                            const moecommRows_t *in, int weighted,
                            moecommRows_t *out, moecommStream_t stream);
/** Collective within the stage's scope. Moves the send rows of `stage` to
 *  their destinations; recv holds them concatenated by source. */
moecommResult_t moecommExchange(moecommComm_t comm, moecommLayout_t layout,
                                moecommDirection_t direction, int stage,
                                const moecommRows_t *send, moecommRows_t *recv,
                                moecommStream_t stream);
moecommResult_t moecommExchangeStart(moecommComm_t comm, moecommLayout_t layout,
                                     moecommDirection_t direction, int stage,
                                     const moecommRows_t *send,
                                     moecommRows_t *recv, moecommStream_t stream,
                                     moecommRequest_t *request);
/** Local. Dispatch: gathers the last stage's rows into expert-major recv
 *  and writes its padding rows (zeros; FP8: zero codes, scale 1) (types:
 *  same, FP8 -> f32/bf16 dequantize, FP8 -> FP8). Combine: sums the
 *  partial rows into out[T][H] in f32. */
moecommResult_t moecommUnpack(moecommComm_t comm, moecommLayout_t layout,
                              moecommDirection_t direction,
                              const moecommRows_t *in, int weighted,
                              moecommRows_t *out, moecommStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* MOECOMM_MOECOMM_H */
