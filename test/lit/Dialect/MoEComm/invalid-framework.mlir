// One case per verifier message of the framework-level ops
// (permute_tokens, unpermute_tokens, sort_chunks, unsort_chunks).
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics

func.func @f(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>) {
  // expected-error @+1 {{moecomm.permute_tokens: experts must be in [1, 2147483647], got 0}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(0) : tensor<?x16xbf16>, tensor<?x4xi32>
  return
}

// -----

func.func @f(%x: tensor<?x?xbf16>, %idx: tensor<?x4xi32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op x must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x?xbf16>, tensor<?x4xi32>
  return
}

// -----

func.func @f(%x: tensor<?x16xbf16>, %idx: tensor<?xi32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op topk_idx must be 2-D [T, K], got rank 1}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?xi32>
  return
}

// -----

func.func @f(%x: tensor<?x16xbf16>, %idx: tensor<?x9xi32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op topk must be static, >= 1 and at most 8 (the experts and the limit), got topk_idx [?,9]}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xbf16>, tensor<?x9xi32>
  return
}

// -----

func.func @f(%x: tensor<3x16xbf16>, %idx: tensor<4x2xi32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op x has 3 tokens but topk_idx has 4}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(8) : tensor<3x16xbf16>, tensor<4x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x16xi64>, %idx: tensor<?x2xi32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op operand #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float values, but got 'tensor<?x16xi64>'}}
  %r:3 = moecomm.permute_tokens %x, %idx experts(8) : tensor<?x16xi64>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%rows: tensor<?x?xf32>, %slots: tensor<?x2xi64>) {
  // expected-error @+1 {{'moecomm.unpermute_tokens' op rows must have a static hidden size in [1, 2147483647], got 'tensor<?x?xf32>'}}
  %o = moecomm.unpermute_tokens %rows, %slots : tensor<?x?xf32>, tensor<?x2xi64>
  return
}

// -----

func.func @f(%rows: tensor<?x16xf32>, %slots: tensor<?x?xi64>) {
  // expected-error @+1 {{'moecomm.unpermute_tokens' op slot_rows must be 2-D [T, K] with a static K >= 1, got [?,?]}}
  %o = moecomm.unpermute_tokens %rows, %slots : tensor<?x16xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @f(%x: tensor<3x16xbf16>, %idx: tensor<3x2xi32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op weights must be [T, K] like topk_idx [3,2], got [3,4]}}
  %r:3 = moecomm.permute_tokens %x, %idx weights(%w : tensor<3x4xf32>) experts(8) : tensor<3x16xbf16>, tensor<3x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?xf32>) {
  // expected-error @+1 {{'moecomm.permute_tokens' op weights must be [T, K] like topk_idx [?,2], got [?]}}
  %r:3 = moecomm.permute_tokens %x, %idx weights(%w : tensor<?xf32>) experts(8) : tensor<?x16xbf16>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%rows: tensor<?x16xf32>, %slots: tensor<3x2xi64>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{'moecomm.unpermute_tokens' op weights must be [T, K] like slot_rows [3,2], got [4,2]}}
  %o = moecomm.unpermute_tokens %rows, %slots weights(%w : tensor<4x2xf32>) : tensor<?x16xf32>, tensor<3x2xi64>
  return
}

// -----

func.func @f(%in: tensor<?x?xbf16>, %c: tensor<4x2xi64>) {
  // expected-error @+1 {{'moecomm.sort_chunks' op in must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %o:2 = moecomm.sort_chunks %in, %c : tensor<?x?xbf16>, tensor<4x2xi64>
  return
}

// -----

func.func @f(%in: tensor<?x16xbf16>, %c: tensor<4x?xi64>) {
  // expected-error @+1 {{'moecomm.unsort_chunks' op counts must be 2-D [W, L] (rows from each source rank to each local expert) with a static L >= 1, got [4,?]}}
  %o = moecomm.unsort_chunks %in, %c : tensor<?x16xbf16>, tensor<4x?xi64>
  return
}
