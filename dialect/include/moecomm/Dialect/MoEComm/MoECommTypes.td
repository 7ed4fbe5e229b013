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

    ```mlir
    !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256>
    !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256, strategy = hierarchical>
    ```
  }];
  let parameters = (ins MoEComm_CountParameter<>:$ranks,
                        MoEComm_CountParameter<>:$ranks_per_node,
                        MoEComm_CountParameter<>:$experts,
                        OptionalParameter<"std::optional<::mlir::moecomm::Strategy>">:$strategy);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "TopologyAttr":$topology), [{
      return $_get(topology.getContext(), topology.getRanks(),
                   topology.getRanksPerNode(), topology.getExperts(),
                   std::nullopt);
    }]>,
    TypeBuilderWithInferredContext<(ins "TopologyAttr":$topology,
                                        "std::optional<Strategy>":$strategy), [{
      return $_get(topology.getContext(), topology.getRanks(),
                   topology.getRanksPerNode(), topology.getExperts(), strategy);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The topology this handle was computed for.
    TopologyAttr getTopology() const;
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
