//===- MoECommBase.td - moecomm dialect, enums, attributes -*- tablegen -*-===//
//
// The dialect definition and the attributes shared by its ops: the expert-
// parallel topology, the wire dtype, the strategy, exchange scopes and
// directions.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_DIALECT_MOECOMM_BASE_TD
#define MOECOMM_DIALECT_MOECOMM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaceBase.td"

def MoEComm_Dialect : Dialect {
  let name = "moecomm";
  let cppNamespace = "::mlir::moecomm";
  let summary = "Mixture-of-Experts expert-parallel communication";
  let description = [{
    The `moecomm` dialect expresses the two data-dependent all-to-alls of an
    expert-parallel (EP) Mixture-of-Experts layer and the staged form they are
    compiled into.

    * **Collective level** (what a framework emits): `moecomm.dispatch` sends
      every token's hidden row `x[T,H]` to the ranks hosting its top-k experts
      and returns the received rows expert-major; `moecomm.combine` sends
      expert outputs back to each token's home rank and sums them, weighted by
      the routing weights or not; `moecomm.all_to_all` is a ragged all-to-all
      of rows with per-destination counts.
    * **Staged level** (after `moecomm-split-hierarchical`): `moecomm.layout`
      computes the routing metadata once; `moecomm.permute`, `moecomm.pack`,
      `moecomm.unpack` gather rows into or out of exchange order;
      `moecomm.quantize`/`moecomm.dequantize` convert to FP8 e4m3 with 1x128
      block scales; `moecomm.exchange` (and its `exchange_start` /
      `exchange_wait` form) moves rows within a scope (`global`, `intra_node`
      to the ranks of the node, `inter_node` to the peers with the same local
      rank on other nodes).

    Topology terms: W ranks, G ranks per node (node(r) = r / G), E experts of
    which rank r hosts `[r*E/W, (r+1)*E/W)`. Token ids in `topk_idx` equal to
    -1 are masked slots. The hierarchical scheme (one inter-node copy per
    (token, destination node) to the peer rank, then an intra-node fan-out)
    follows DeepEP and NVIDIA's Hybrid-EP; see the pass documentation.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def MoEComm_WireDtype : I32EnumAttr<"WireDtype",
    "element format of rows on the wire", [
      I32EnumAttrCase<"f32", 0>,
      I32EnumAttrCase<"bf16", 1>,
      I32EnumAttrCase<"fp8_e4m3", 2>,
      I32EnumAttrCase<"fp8_e4m3_ue8m0", 3>,
      I32EnumAttrCase<"mxfp8", 4>
    ]> {
  let cppNamespace = "::mlir::moecomm";
  let genSpecializedAttr = 0;
}
def MoEComm_WireDtypeAttr : EnumAttr<MoEComm_Dialect, MoEComm_WireDtype, "wire"> {
  let summary = "wire dtype: f32, bf16, or an FP8 e4m3 format: fp8_e4m3 (one "
                "f32 scale per 128 elements), fp8_e4m3_ue8m0 (one power-of-two "
                "E8M0 byte scale per 128), mxfp8 (OCP MXFP8: one E8M0 scale per 32)";
  let assemblyFormat = "`<` $value `>`";
}

def MoEComm_Strategy : I32EnumAttr<"Strategy",
    "how dispatch/combine rows travel between ranks", [
      I32EnumAttrCase<"per_expert", 0>,
      I32EnumAttrCase<"flat", 1>,
      I32EnumAttrCase<"hierarchical", 2>,
      I32EnumAttrCase<"automatic", 3, "auto">
    ]> {
  let cppNamespace = "::mlir::moecomm";
  let genSpecializedAttr = 0;
}
def MoEComm_StrategyAttr : EnumAttr<MoEComm_Dialect, MoEComm_Strategy, "strategy"> {
  let summary = "per_expert (one copy per (token, expert), Megatron's all-to-all), "
                "flat (one copy per (token, rank)), hierarchical (one inter-node "
                "copy per (token, node), then intra-node fan-out), auto (cost model)";
  let assemblyFormat = "`<` $value `>`";
}

def MoEComm_Scope : I32EnumAttr<"Scope", "ranks an exchange talks to", [
      I32EnumAttrCase<"global", 0>,
      I32EnumAttrCase<"intra_node", 1>,
      I32EnumAttrCase<"inter_node", 2>
    ]> {
  let cppNamespace = "::mlir::moecomm";
  let genSpecializedAttr = 0;
}
def MoEComm_ScopeAttr : EnumAttr<MoEComm_Dialect, MoEComm_Scope, "scope"> {
  let summary = "global (all W ranks), intra_node (the G ranks of the node), "
                "inter_node (the W/G peers with the same local rank)";
  let assemblyFormat = "`<` $value `>`";
}

def MoEComm_Direction : I32EnumAttr<"Direction", "dispatch or combine", [
      I32EnumAttrCase<"dispatch", 0>,
      I32EnumAttrCase<"combine", 1>
    ]> {
  let cppNamespace = "::mlir::moecomm";
  let genSpecializedAttr = 0;
}
def MoEComm_DirectionAttr : EnumAttr<MoEComm_Dialect, MoEComm_Direction, "direction"> {
  let summary = "which half of an MoE layer's communication a staged op belongs to";
  let assemblyFormat = "`<` $value `>`";
}

def MoEComm_ReplicaChoice : I32EnumAttr<"ReplicaChoice",
    "how the layout picks one replica of a replicated expert", [
      I32EnumAttrCase<"locality", 0>,
      I32EnumAttrCase<"load_only", 1>
    ]> {
  let cppNamespace = "::mlir::moecomm";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// An integer parameter of a topology (ranks, ranks_per_node, experts).
// AsmParser reads `true` as the 1-bit integer 1, which FieldParser<int64_t>
// sign-extends to -1; parseCount rejects booleans instead.
class MoEComm_CountParameter<string default = "">
    : AttrOrTypeParameter<"int64_t", ""> {
  let parser = "::mlir::moecomm::parseCount($_parser)";
  let defaultValue = default;
}

// A topology's expert placement, written and printed as `array<i64: ...>`
// (the generic attribute parser would take a bare `[...]`).
def MoEComm_PlacementParameter
    : OptionalParameter<"::mlir::DenseI64ArrayAttr"> {
  let parser = "::mlir::moecomm::parsePlacement($_parser)";
  let printer = "$_printer.printAttribute($_self)";
}

def MoEComm_TopologyAttr : AttrDef<MoEComm_Dialect, "Topology"> {
  let mnemonic = "topology";
  let summary = "expert-parallel topology: ranks W, ranks per node G, experts "
                "E, and optionally an expert placement over S slots";
  let description = [{
    The expert-parallel group of a collective: `ranks` (W >= 1) ranks,
    `ranks_per_node` (G >= 1, W % G == 0) of them per node (an NVLink domain),
    and, for dispatch/combine, `experts` (E >= 1, E % W == 0 without an
    expert placement): rank r hosts experts `[r*E/W, (r+1)*E/W)`. `experts`
    is omitted for a plain `all_to_all`.

    In an op's custom form it follows the op's `topology` keyword, without
    the `#moecomm.` prefix; elsewhere (the generic op form, a function
    attribute) it is written in full:

    ```mlir
    %recv, %w, %tpe, %h = moecomm.dispatch %x, %idx, %wts
        topology<ranks = 16, ranks_per_node = 8, experts = 256>
        : tensor<?x7168xbf16>, tensor<?x8xi32>, tensor<?x8xf32>
    #moecomm.topology<ranks = 16, ranks_per_node = 8, experts = 256>
    ```

    **Expert placement** (replicated experts; DeepSeek's EPLB, "Expert
    Parallelism Load Balancer", github.com/deepseek-ai/EPLB, whose `phy2log`
    map this is): `slots = S` physical expert slots and `placement =
    array<i64: ...>`, S logical expert ids, slot s holding a copy of logical
    expert `placement[s]`; rank r hosts slots `[r*S/W, (r+1)*S/W)`. A hot
    expert with several slots is replicated, and the layout picks one replica
    per (token, expert) at run time by `replica_choice`: `locality` (the
    default, omitted when printed: prefer the token's own node, then a node
    it already sends to, then the least-loaded replica) or `load_only` (the
    least-loaded replica, EPLB's balancing alone); both are deterministic and
    the same on every rank and backend (moecomm/Model/Placement.h).
    `experts` stays the logical count E, the range of `topk_idx`; it need not
    be a multiple of W, but S must be (the placement's rules:
    `::moecomm::checkPlacement` -- S >= E, S % W == 0, every slot's expert in
    [0, E), every expert in at least one slot). `slots` must equal the
    placement's length; one without the other, or `replica_choice` without a
    placement, is an error. A placement is written for one W (EPLB balances
    the load per rank of that W).

    With a placement everything per local expert is per local slot: a
    dispatch's `recv` is slot-major and its `tokens_per_expert` and a
    handle's `expert_offsets` have S/W (+ 1) entries (`getLocalExperts`).

    ```mlir
    // 4 logical experts on 2 ranks, 0 and 1 replicated: rank 0 hosts slots
    // 0-2 (experts 0, 1, 2), rank 1 slots 3-5 (experts 3, 0, 1).
    #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4, slots = 6,
                      placement = array<i64: 0, 1, 2, 3, 0, 1>>
    ```
  }];
  let parameters = (ins MoEComm_CountParameter<>:$ranks,
                        MoEComm_CountParameter<>:$ranks_per_node,
                        MoEComm_CountParameter<"0">:$experts,
                        MoEComm_CountParameter<"0">:$slots,
                        MoEComm_PlacementParameter:$placement,
                        DefaultValuedParameter<
                            "::mlir::moecomm::ReplicaChoice",
                            "::mlir::moecomm::ReplicaChoice::locality">:$replica_choice);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$ranks, "int64_t":$ranks_per_node,
                     CArg<"int64_t", "0">:$experts), [{
      return $_get($_ctxt, ranks, ranks_per_node, experts, /*slots=*/0,
                   ::mlir::DenseI64ArrayAttr(), ReplicaChoice::locality);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Number of nodes, W / G.
    int64_t getNumNodes() const { return getRanks() / getRanksPerNode(); }
    /// Expert slots: S with a placement, else E (0 when `experts` is absent).
    int64_t getNumSlots() const {
      return getPlacement() ? getSlots() : getExperts();
    }
    /// Expert slots hosted by each rank: S / W with a placement, else E / W
    /// (0 when `experts` is absent).
    int64_t getLocalExperts() const { return getNumSlots() / getRanks(); }
  }];
}

//===----------------------------------------------------------------------===//
// Resources
//===----------------------------------------------------------------------===//

// Collectives must be issued in the same order on every rank: they read and
// write this resource, so transformations keep their relative order while
// pure row computations may move around them.
def MoEComm_CollectiveResource : Resource<"::mlir::moecomm::CollectiveResource">;

#endif // MOECOMM_DIALECT_MOECOMM_BASE_TD
