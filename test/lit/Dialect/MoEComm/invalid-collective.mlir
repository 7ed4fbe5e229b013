// One case per verifier message of the collective-level ops, attributes and
// types.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{ranks must be in [1, 1048576], got 0}}
func.func @f() attributes {t = #moecomm.topology<ranks = 0, ranks_per_node = 1>} { return }

// -----

// AsmParser reads `true` as an integer (-1 once sign-extended).
// expected-error @+2 {{expected integer value, got 'true'}}
// expected-error @+1 {{failed to parse MoEComm_TopologyAttr parameter 'ranks'}}
func.func @f() attributes {t = #moecomm.topology<ranks = true, ranks_per_node = 2>} { return }

// -----

// expected-error @+2 {{expected integer value, got 'false'}}
// expected-error @+1 {{failed to parse MoEComm_HandleType parameter 'experts'}}
func.func @f(%h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = false>) { return }

// -----

// expected-error @+1 {{ranks_per_node must be >= 1, got 0}}
func.func @f() attributes {t = #moecomm.topology<ranks = 4, ranks_per_node = 0>} { return }

// -----

// expected-error @+1 {{ranks (6) must be a multiple of ranks_per_node (4)}}
func.func @f() attributes {t = #moecomm.topology<ranks = 6, ranks_per_node = 4>} { return }

// -----

// expected-error @+1 {{experts must be in [1, 2147483647], got -8}}
func.func @f() attributes {t = #moecomm.topology<ranks = 4, ranks_per_node = 2, experts = -8>} { return }

// -----

// expected-error @+1 {{experts (10) must be divisible by ranks (4) so every rank hosts the same number of experts}}
func.func @f() attributes {t = #moecomm.topology<ranks = 4, ranks_per_node = 2, experts = 10>} { return }

// -----

// expected-error @+1 {{experts must be in [1, 2147483647], got 0}}
func.func @f(%h: !moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 0>) { return }

// -----

func.func @f(%x: tensor<?x?xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op x must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x?xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

// The ODS type constraint (the docs' operand table) is the rule: FP8 rows
// exist only on the wire, inside the staged level.
func.func @f(%x: tensor<?x8xf8E4M3FN>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op operand #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xf8E4M3FN>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op operand #0 must be 2-D tensor of rows}}
  %0:4 = "moecomm.dispatch"(%x, %i, %w) {topology = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4>} : (tensor<?xbf16>, tensor<?x2xi32>, tensor<?x2xf32>) -> (tensor<?xbf16>, tensor<?xf32>, tensor<2xi64>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>)
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op needs the expert count: topology has no `experts`}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk_idx must be 2-D [T, K], got rank 1}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2x1xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk_weights must be 2-D [T, K], got rank 3}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2x1xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x?xi32>, %w: tensor<?x?xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk must be static and >= 1, got topk_idx [?,?]}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x?xi32>, tensor<?x?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x0xi32>, %w: tensor<?x0xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk must be static and >= 1, got topk_idx [?,0]}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x0xi32>, tensor<?x0xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x5xi32>, %w: tensor<?x5xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk (5) exceeds the number of experts (4)}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x5xi32>, tensor<?x5xf32>
  return
}

// -----

// Compile time grows with a static K: it is bounded (4096), whatever E is.
func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x4097xi32>, %w: tensor<?x4097xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk (4097) exceeds the limit of 4096}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 2147483646> : tensor<?x8xbf16>, tensor<?x4097xi32>, tensor<?x4097xf32>
  return
}

// -----

func.func @f(%i: tensor<?x2147483646xi32>, %w: tensor<?x2147483646xf32>) {
  // expected-error @+1 {{'moecomm.layout' op topk (2147483646) exceeds the limit of 4096}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 2147483646> strategy<flat> : tensor<?x2147483646xi32>, tensor<?x2147483646xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xbf16>, %i: tensor<4x2xi32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk_weights must have topk_idx's 2 columns (a static K), got topk_weights [4,3]}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<4x8xbf16>, tensor<4x2xi32>, tensor<4x3xf32>
  return
}

// -----

// A dynamic K in the weights hides a column count the passes would read.
func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x?xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk_weights must have topk_idx's 2 columns (a static K), got topk_weights [?,?]}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x?xf32>
  return
}

// -----

func.func @f(%i: tensor<?x2xi32>, %w: tensor<?x?xf32>) {
  // expected-error @+1 {{'moecomm.layout' op topk_weights must have topk_idx's 2 columns (a static K), got topk_weights [?,?]}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> strategy<flat> : tensor<?x2xi32>, tensor<?x?xf32>
  return
}

// -----

// Token counts agree wherever they are static, also when topk_idx's is not.
func.func @f(%x: tensor<4x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<3x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op x has 4 tokens but topk_weights has 3}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<4x8xbf16>, tensor<?x2xi32>, tensor<3x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<5x2xi32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op topk_weights has 4 tokens but topk_idx has 5}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<5x2xi32>, tensor<4x2xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xbf16>, %i: tensor<5x2xi32>, %w: tensor<5x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op x has 4 tokens but topk_idx has 5}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<4x8xbf16>, tensor<5x2xi32>, tensor<5x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xf32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x2xf32>'}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xf32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xi32>) {
  // expected-error @+1 {{'moecomm.dispatch' op operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<?x2xi32>'}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op capacity must be > 0 rows, got 0}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> capacity(0) : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

// align(N): a power of two (1: no padding) up to the runtime's bound.
func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op align must be a power of two in [1, 65536] rows, got 48}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> align(48) : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.dispatch' op wire dtype bf16 does not match x's 'f32'; use x's dtype or fp8_e4m3}}
  %0:4 = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> wire<bf16> : tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+2 {{'moecomm.dispatch' op failed to infer returned types}}
  // expected-error @+1 {{'moecomm.dispatch' op inferred type(s) 'tensor<?x8xbf16>', 'tensor<?xf32>', 'tensor<2xi64>', '!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>' are incompatible with return type(s) of operation 'tensor<?x8xbf16>', 'tensor<?xf32>', 'tensor<4xi64>', '!moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>'}}
  %0:4 = "moecomm.dispatch"(%x, %i, %w) {topology = #moecomm.topology<ranks = 2, ranks_per_node = 1, experts = 4>} : (tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>) -> (tensor<?x8xbf16>, tensor<?xf32>, tensor<4xi64>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>)
  return
}

// -----

func.func @f(%y: tensor<?x?xbf16>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.combine' op y must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %0 = moecomm.combine %y, %h : tensor<?x?xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x?xbf16>
  return
}

// -----

func.func @f(%y: tensor<?x8xf8E4M3FN>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.combine' op operand #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0 = moecomm.combine %y, %h : tensor<?x8xf8E4M3FN>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x8xf8E4M3FN>
  return
}

// -----

func.func @f(%y: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.combine' op result dtype 'f32' must match y's 'bf16'}}
  %0 = moecomm.combine %y, %h : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%y: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.combine' op result hidden size 16 must match y's 8}}
  %0 = moecomm.combine %y, %h : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>, %y: tensor<?x16xbf16>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{'moecomm.combine' op y hidden size 16 differs from the dispatch's x hidden size 8}}
  %0 = moecomm.combine %y, %h : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<?x16xbf16>
  return
}

// -----

func.func @f(%x: tensor<3x8xbf16>, %i: tensor<3x2xi32>, %w: tensor<3x2xf32>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<3x8xbf16>, tensor<3x2xi32>, tensor<3x2xf32>
  // expected-error @+1 {{'moecomm.combine' op result has 4 rows but the dispatch has 3 tokens}}
  %0 = moecomm.combine %r, %h : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<4x8xbf16>
  return
}

// -----

// The dispatch's T may be static in its routing only.
func.func @f(%x: tensor<?x8xbf16>, %i: tensor<3x2xi32>, %w: tensor<?x2xf32>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<3x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{'moecomm.combine' op result has 4 rows but the dispatch has 3 tokens}}
  %0 = moecomm.combine %r, %h : tensor<?x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4> -> tensor<4x8xbf16>
  return
}

// -----

func.func @f(%s: tensor<?x8xf8E4M3FN>, %c: tensor<2xi64>) {
  // expected-error @+1 {{'moecomm.all_to_all' op operand #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float or 64-bit signless integer values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0:2 = moecomm.all_to_all %s, %c topology<ranks = 2, ranks_per_node = 1> : tensor<?x8xf8E4M3FN>, tensor<2xi64>
  return
}

// -----

func.func @f(%s: tensor<?x8xbf16>, %c: tensor<3xi64>) {
  // expected-error @+1 {{'moecomm.all_to_all' op send_counts must have one count per rank, shape [2] or [?], got [3]}}
  %0:2 = moecomm.all_to_all %s, %c topology<ranks = 2, ranks_per_node = 1> : tensor<?x8xbf16>, tensor<3xi64>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>, %g: tensor<?x16xbf16>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{'moecomm.cached_dispatch' op x hidden size 16 differs from the dispatch's x hidden size 8}}
  %0 = moecomm.cached_dispatch %g, %h : tensor<?x16xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}

// -----

func.func @f(%x: tensor<3x8xbf16>, %i: tensor<3x2xi32>, %w: tensor<3x2xf32>, %g: tensor<5x8xbf16>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<3x8xbf16>, tensor<3x2xi32>, tensor<3x2xf32>
  // expected-error @+1 {{'moecomm.cached_dispatch' op x has 5 rows but the dispatch has 3 tokens}}
  %0 = moecomm.cached_dispatch %g, %h : tensor<5x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<3x2xf32>, %g: tensor<5x8xbf16>) {
  %r, %rw, %tpe, %h = moecomm.dispatch %x, %i, %w topology<ranks = 2, ranks_per_node = 1, experts = 4> : tensor<?x8xbf16>, tensor<?x2xi32>, tensor<3x2xf32>
  // expected-error @+1 {{'moecomm.cached_dispatch' op x has 5 rows but the dispatch has 3 tokens}}
  %0 = moecomm.cached_dispatch %g, %h : tensor<5x8xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}

// -----

func.func @f(%g: tensor<?x8xf32>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.cached_dispatch' op wire dtype bf16 does not match x's 'f32'; use x's dtype or fp8_e4m3}}
  %0 = moecomm.cached_dispatch %g, %h wire<bf16> : tensor<?x8xf32>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}

// -----

func.func @f(%g: tensor<?x8xf8E4M3FN>, %h: !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>) {
  // expected-error @+1 {{'moecomm.cached_dispatch' op operand #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0 = moecomm.cached_dispatch %g, %h : tensor<?x8xf8E4M3FN>, !moecomm.handle<ranks = 2, ranks_per_node = 1, experts = 4>
  return
}
