//===- MoECommTypes.td - moecomm types ---------------------*- tablegen -*-===//

#ifndef MOECOMM_DIALECT_MOECOMM_TYPES_TD
#define MOECOMM_DIALECT_MOECOMM_TYPES_TD

include "moecomm/Dialect/MoEComm/MoECommBase.td"

def MoEComm_HandleType : TypeDef<MoEComm_Dialect, "Handle"> {
  let mnemonic = "handle";
  let summary = "routing layout that ties a combine to its dispatch";
  let description = [{
    The routing metadata computed once per dispatch (received row counts,
    expert-major order, capacity drops, per-stage plans) and reused by its
    combine and by the backward pass. Produced by `moecomm.dispatch` or
    `moecomm.layout`; parameterized by the topology it was computed for, so a
    combine can only consume a handle of the same topology, and, once known,
    by the strategy its exchange stages were planned with (per_expert, flat
    or hierarchical). A dispatch with a concrete `strategy<S>` produces a
    handle of type `!moecomm.handle<..., strategy = S>`, which its consumers
    must spell; otherwise `moecomm-split-hierarchical` sets the strategy once
    it has chosen it, also on function arguments and results that carry the
    handle between a forward and a backward function.

    A topology with an expert placement gives a handle of its `slots` (S,
    omitted without one): what sizes the per-slot results its layout has
    (`expert_offsets`); the placement itself is the layout's, so a handle
    of another placement with as many slots is the same type.

    ```mlir
    !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>
    !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
    !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, slots = 288, strategy = hierarchical>
    ```
  }];
  let parameters = (ins MoEComm_CountParameter<>:$ranks,
                        MoEComm_CountParameter<>:$ranks_per_node,
                        MoEComm_CountParameter<>:$experts,
                        MoEComm_CountParameter<"0">:$slots,
                        OptionalParameter<"std::optional<::mlir::moecomm::Strategy>">:$strategy);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilder<(ins "int64_t":$ranks, "int64_t":$ranks_per_node,
                     "int64_t":$experts,
                     "std::optional<Strategy>":$strategy), [{
      return $_get($_ctxt, ranks, ranks_per_node, experts, /*slots=*/0,
                   strategy);
    }]>,
    TypeBuilderWithInferredContext<(ins "TopologyAttr":$topology), [{
      return $_get(topology.getContext(), topology.getRanks(),
                   topology.getRanksPerNode(), topology.getExperts(),
                   topology.getPlacement() ? topology.getSlots() : 0,
                   std::nullopt);
    }]>,
    TypeBuilderWithInferredContext<(ins "TopologyAttr":$topology,
                                        "std::optional<Strategy>":$strategy), [{
      return $_get(topology.getContext(), topology.getRanks(),
                   topology.getRanksPerNode(), topology.getExperts(),
                   topology.getPlacement() ? topology.getSlots() : 0, strategy);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Expert slots hosted by each rank: S / W with a placement (`slots`),
    /// else E / W -- the topology's getLocalExperts.
    int64_t getLocalExperts() const {
      return (getSlots() ? getSlots() : getExperts()) / getRanks();
    }
    /// This type with `strategy` set.
    HandleType withStrategy(Strategy strategy) const;
  }];
}

def MoEComm_RequestType : TypeDef<MoEComm_Dialect, "Request"> {
  let mnemonic = "request";
  let summary = "an exchange in flight";
  let description = [{
    Produced by `moecomm.exchange_start` and consumed by exactly one
    `moecomm.exchange_wait`. Between the two, the rows are in flight and
    independent computation can run (the overlap schedule).
  }];
}

#endif // MOECOMM_DIALECT_MOECOMM_TYPES_TD
