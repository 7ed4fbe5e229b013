// moecomm-import-ragged-all-to-all refuses what it cannot convert with XLA's
// semantics: one error naming the attribute or operand, nothing converted.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-import-ragged-all-to-all

func.func @version(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: api_version must be 4 : i32 (the typed-FFI form JAX emits), got 2 : i32}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 2 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @no_version(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: api_version is missing (JAX emits 4 : i32)}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @no_config(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: backend_config is missing (it gives replica_groups)}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @string_config(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: backend_config must be a dictionary {replica_groups = dense<[[0, ..., W-1]]> : tensor<1xWxi64>}, got "replica_groups"}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = "replica_groups"} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @other_config(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: backend_config entry 'split' (1 : i64) is not supported}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split = 1 : i64}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @no_groups(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: backend_config has no replica_groups}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {channel_id = 1 : i64}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @groups_not_dense(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: backend_config's replica_groups must be dense integer elements, got [[0, 1, 2, 3]]}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = [[0, 1, 2, 3]]}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @two_groups(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: replica_groups must be one group of all ranks in order, dense<[[0, 1, ..., W-1]]> : tensor<1xWxi64> (the expert-parallel group), got dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @permuted_group(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: replica_groups must be one group of all ranks in order, dense<[[0, 1, ..., W-1]]> : tensor<1xWxi64> (the expert-parallel group), got dense<[[1, 0, 2, 3]]> : tensor<1x4xi64>}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[1, 0, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @other_attr(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: attribute 'operand_layouts' ([dense<[1, 0]> : tensor<2xindex>]) is not supported}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>]} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @called(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: attribute 'called_computations' ([@f]) is not supported}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}, called_computations = [@f]} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @five_operands(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: expected 6 operands (operand, output, input_offsets, send_sizes, output_offsets, recv_sizes) and 1 result, got 5 and 1}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @rank3(%x: tensor<8x4x4xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: operand must be a 2-D tensor of bf16 or f32 rows (what moecomm.all_to_all moves), got 'tensor<8x4x4xbf16>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x4x4xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @f16_output(%x: tensor<8x16xbf16>, %o: tensor<6x16xf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xf16> {
  // expected-error @+1 {{ragged_all_to_all: output must be a 2-D tensor of bf16 or f32 rows (what moecomm.all_to_all moves), got 'tensor<6x16xf16>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xf16>
  return %r : tensor<6x16xf16>
}

// -----

func.func @mixed_rows(%x: tensor<8x16xbf16>, %o: tensor<6x8xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x8xbf16> {
  // expected-error @+1 {{ragged_all_to_all: operand 'tensor<8x16xbf16>' and output 'tensor<6x8xbf16>' must have the same element type and the same static row width}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x8xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x8xbf16>
  return %r : tensor<6x8xbf16>
}

// -----

func.func @result_type(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: the result type 'tensor<?x16xbf16>' must be the output's, 'tensor<6x16xbf16>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  return %r : tensor<?x16xbf16>
}

// -----

func.func @offset_dtype(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi16>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: input_offsets must be tensor<4xi32> or tensor<4xi64> (one entry per rank of the group), got 'tensor<4xi16>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @sizes_not_w(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<8xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: recv_sizes must be tensor<4xi32> or tensor<4xi64> (one entry per rank of the group), got 'tensor<8xi64>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<8xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}


// -----

// At a module's top level (a graph region) an operand may be the call's own
// result: the conversion would emit cyclic IR.
%x = arith.constant dense<1.0> : tensor<8x16xbf16>
%a = arith.constant dense<0> : tensor<4xi64>
// expected-error @+1 {{ragged_all_to_all: the call must be in a function body (a region with SSA dominance), not in 'builtin.module''s graph region, where an operand may be its own result}}
%r = "stablehlo.custom_call"(%x, %r, %a, %a, %a, %a) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>

// -----

func.func @signed_offsets(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xsi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: input_offsets must be tensor<4xi32> or tensor<4xi64> (one entry per rank of the group), got 'tensor<4xsi64>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xsi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @unsigned_sizes(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xui32>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: send_sizes must be tensor<4xi32> or tensor<4xi64> (one entry per rank of the group), got 'tensor<4xui32>'}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xui32>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @zero_width(%x: tensor<8x0xbf16>, %o: tensor<6x0xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x0xbf16> {
  // expected-error @+1 {{ragged_all_to_all: rows of width 0 ('tensor<8x0xbf16>') are not supported: moecomm.all_to_all moves rows of at least one element}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x0xbf16>, tensor<6x0xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x0xbf16>
  return %r : tensor<6x0xbf16>
}

// -----

func.func @last_op(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) {
  // expected-error @+1 {{ragged_all_to_all: the call must not end its block (it is no terminator)}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
}

// -----

func.func @successor(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: the call must have no regions and no successors, got 0 and 1}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d)[^bb1] {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
^bb1:
  return %o : tensor<6x16xbf16>
}

// -----

func.func @region(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: the call must have no regions and no successors, got 1 and 0}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) ({
  ^bb0:
    %z = arith.constant 0 : i32
  }) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @too_many_ranks(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: replica_groups' group of 1048577 ranks: ranks must be in [1, 1048576], got 1048577}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<0> : tensor<1x1048577xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @property_and_attribute(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: 'api_version' is both a property (4 : i32) and an attribute (2 : i32)}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) <{api_version = 4 : i32}> {call_target_name = "ragged_all_to_all", api_version = 2 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @target_twice(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: 'call_target_name' is both a property ("ragged_all_to_all") and an attribute ("other")}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) <{call_target_name = "ragged_all_to_all"}> {call_target_name = "other", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @integer_properties(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: properties must be a dictionary, got 1 : i32}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) <1 : i32> {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @encoding(%x: tensor<8x16xbf16, "enc">, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: operand's type 'tensor<8x16xbf16, "enc">' has an encoding ("enc"): only tensors without one are supported}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16, "enc">, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

func.func @version_i64(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: api_version must be 4 : i32 (the typed-FFI form JAX emits), got 4 : i64}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i64, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}

// -----

// moecomm-pipeline bufferizes only the top-level module's functions.
module {
  module @inner {
    func.func @nested(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>) -> tensor<6x16xbf16> {
      // expected-error @+1 {{ragged_all_to_all: the call is in a nested module @inner: moecomm-pipeline compiles only the functions of the top-level module}}
      %r = "stablehlo.custom_call"(%x, %o, %a, %a, %a, %a) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
      return %r : tensor<6x16xbf16>
    }
  }
}

// -----

func.func @unsigned_groups(%x: tensor<8x16xbf16>, %o: tensor<6x16xbf16>, %a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi64>, %d: tensor<4xi64>) -> tensor<6x16xbf16> {
  // expected-error @+1 {{ragged_all_to_all: replica_groups must be one group of all ranks in order, dense<[[0, 1, ..., W-1]]> : tensor<1xWxi64> (the expert-parallel group), got dense<[[0, 1, 2, 3]]> : tensor<1x4xui64>}}
  %r = "stablehlo.custom_call"(%x, %o, %a, %b, %c, %d) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xui64>}} : (tensor<8x16xbf16>, tensor<6x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<6x16xbf16>
  return %r : tensor<6x16xbf16>
}
