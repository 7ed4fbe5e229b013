// One case per verifier message of the staged-level ops.
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics

func.func @f(%i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.layout' op needs a concrete strategy (per_expert, flat or hierarchical); auto is resolved by moecomm-split-hierarchical}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<auto> : tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.layout' op capacity must be > 0 rows, got -1}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> capacity(-1) : tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.layout' op align must be a power of two in [1, 65536] rows, got 131072}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> align(131072) : tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moecomm.layout' op needs the expert count: topology has no `experts`}}
  %0:3 = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf8E4M3FN>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op rows are f8E4M3FN and need their block scales}}
  %0 = moecomm.permute %x, %h dispatch output : tensor<?x8xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %s: tensor<?x1xf32>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op scales are only allowed with f8E4M3FN rows, rows are 'bf16'}}
  %0:2 = moecomm.permute %x scales(%s : tensor<?x1xf32>), %h dispatch output : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x300xf8E4M3FN>, %s: tensor<?x2xf32>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op scales must have ceil(300/128) = 3 columns, got [?,2]}}
  %0:2 = moecomm.permute %x scales(%s : tensor<?x2xf32>), %h dispatch output : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<4x300xf8E4M3FN>, %s: tensor<5x3xf32>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op scales have 5 rows but rows have 4}}
  %0:2 = moecomm.permute %x scales(%s : tensor<5x3xf32>), %h dispatch output : tensor<4x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x?xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op rows must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %0 = moecomm.permute %x, %h dispatch output : tensor<?x?xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x128xf8E4M3FN>, %s: tensor<?x1xf32>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op combine rows must be bf16 or f32, got 'f8E4M3FN'}}
  %0:2 = moecomm.permute %x scales(%s : tensor<?x1xf32>), %h combine output : tensor<?x128xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op `weighted` applies to combine only}}
  %0 = moecomm.permute %x, %h dispatch output weighted : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op stage must be >= 0, got -1}}
  %0 = moecomm.permute %x, %h dispatch stage -1 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %h, %rw, %tpe = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<flat> : tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{'moecomm.permute' op stage 1 out of range: flat on 8 ranks x 4 per node has 1 exchange stage(s)}}
  %0 = moecomm.permute %x, %h dispatch stage 1 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = flat>
  return
}

// -----

func.func @f(%x: tensor<?xbf16>) {
  // expected-error @+1 {{'moecomm.quantize' op input must be 2-D rows [N, H], got rank 1}}
  %0:2 = moecomm.quantize %x : tensor<?xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x?xbf16>) {
  // expected-error @+1 {{'moecomm.quantize' op input must have a static hidden size in [1, 2147483647], got 'tensor<?x?xbf16>'}}
  %0:2 = moecomm.quantize %x : tensor<?x?xbf16>
  return
}

// -----

func.func @f(%q: tensor<?x8xbf16>, %s: tensor<?x1xf32>) {
  // expected-error @+1 {{'moecomm.dequantize' op input must be f8E4M3FN rows, got 'bf16'}}
  %0 = moecomm.dequantize %q, %s : tensor<?x8xbf16>, tensor<?x1xf32> -> tensor<?x8xbf16>
  return
}

// -----

func.func @f(%q: tensor<?x8xf8E4M3FN>, %s: tensor<?x1xf32>) {
  // expected-error @+1 {{'moecomm.dequantize' op result shape [?,16] must match the input's [?,8]}}
  %0 = moecomm.dequantize %q, %s : tensor<?x8xf8E4M3FN>, tensor<?x1xf32> -> tensor<?x16xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op result hidden size 16 must match the input's 8}}
  %0 = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op cannot pack 'bf16' rows into 'f32' rows; only dispatch may quantize bf16/f32 to f8E4M3FN}}
  %0 = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op cannot pack 'bf16' rows into 'f8E4M3FN' rows; only dispatch may quantize bf16/f32 to f8E4M3FN}}
  %0:2 = moecomm.pack %x, %h combine stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf8E4M3FN>, tensor<?x1xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op result rows are f8E4M3FN and need their block scales}}
  %0 = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf8E4M3FN>
  return
}

// -----

func.func @f(%x: tensor<?x8xf8E4M3FN>, %s: tensor<?x1xf32>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.unpack' op result #0 must be 2-D tensor of rows of bfloat16 type or 32-bit float values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0 = moecomm.unpack %x scales(%s : tensor<?x1xf32>), %h dispatch : tensor<?x8xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf8E4M3FN>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.unpack' op result hidden size 4 must match the input's 8}}
  %0 = moecomm.unpack %x, %h dispatch : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x4xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.unpack' op cannot unpack 'bf16' rows into 'f32' rows}}
  %0 = moecomm.unpack %x, %h combine : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  %h, %rw, %tpe = moecomm.layout %i, %w topology<ranks = 8, ranks_per_node = 4, experts = 16> strategy<hierarchical> : tensor<?x2xi32>, tensor<?x2xf32>
  // expected-error @+1 {{'moecomm.exchange' op stage 0 of dispatch is inter_node for hierarchical on 8 ranks x 4 per node, not intra_node}}
  %0 = moecomm.exchange %x, %h dispatch stage 0 scope<intra_node> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = hierarchical>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.exchange_start' op request must have exactly one use (its moecomm.exchange_wait), got 0}}
  %req, %r = moecomm.exchange_start %x, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> !moecomm.request {
  // expected-error @+1 {{'moecomm.exchange_start' op request must be used by a moecomm.exchange_wait}}
  %req, %r = moecomm.exchange_start %x, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return %req : !moecomm.request
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{'moecomm.exchange_start' op receive buffers may only be used by the matching moecomm.exchange_wait until it completes}}
  %req, %r = moecomm.exchange_start %x, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %o = moecomm.exchange_wait %req, %r : tensor<?x8xbf16>
  return %r : tensor<?x8xbf16>
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %y: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) -> tensor<?x8xbf16> {
  %req, %r = moecomm.exchange_start %x, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  // expected-error @+1 {{'moecomm.exchange_wait' op receive buffers must be the ones produced by the moecomm.exchange_start of this request}}
  %o = moecomm.exchange_wait %req, %y : tensor<?x8xbf16>
  return %o : tensor<?x8xbf16>
}

// -----

// expected-error @+1 {{a handle's strategy must be concrete (per_expert, flat or hierarchical), got auto}}
func.func @f(%h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16, strategy = auto>) { return }

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 1, experts = 16, strategy = hierarchical>) {
  // expected-error @+1 {{'moecomm.exchange' op stage 0 of combine is inter_node for hierarchical on 8 ranks x 1 per node, not global}}
  %0 = moecomm.exchange %x, %h combine stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 1, experts = 16, strategy = hierarchical>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>, %c: i1) -> tensor<?x8xbf16> {
  // expected-error @+1 {{'moecomm.exchange_start' op its moecomm.exchange_wait must be in the same block (a wait that may not run leaves every rank waiting)}}
  %req, %r = moecomm.exchange_start %x, %h dispatch stage 0 scope<global> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  %o = scf.if %c -> tensor<?x8xbf16> {
    %w = moecomm.exchange_wait %req, %r : tensor<?x8xbf16>
    scf.yield %w : tensor<?x8xbf16>
  } else {
    scf.yield %x : tensor<?x8xbf16>
  }
  return %o : tensor<?x8xbf16>
}

// -----

func.func @f(%req: !moecomm.request, %r: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{'moecomm.exchange_wait' op request must come from a moecomm.exchange_start in the same block}}
  %o = moecomm.exchange_wait %req, %r : tensor<?x8xbf16>
  return %o : tensor<?x8xbf16>
}

// -----

func.func @f(%x: tensor<?x9223372036854775807xbf16>) {
  // expected-error @+1 {{'moecomm.quantize' op input must have a static hidden size in [1, 2147483647], got 'tensor<?x9223372036854775807xbf16>'}}
  %0:2 = moecomm.quantize %x : tensor<?x9223372036854775807xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x300xbf16>) {
  // expected-error @+1 {{'moecomm.quantize' op wire<bf16> is not an FP8 format (fp8_e4m3, fp8_e4m3_ue8m0 or mxfp8)}}
  %q, %s = moecomm.quantize %x wire<bf16> : tensor<?x300xbf16>
  return
}

// -----

// mxfp8 scales are ceil(300/32) = 10 per row, not fp8_e4m3_ue8m0's 3.
func.func @f(%q: tensor<?x300xf8E4M3FN>, %s: tensor<?x3xf8E8M0FNU>) {
  // expected-error @+1 {{'moecomm.dequantize' op scales of wire<mxfp8> must be 'f8E8M0FNU' with 10 columns for 300 elements per row, got 'tensor<?x3xf8E8M0FNU>'}}
  %0 = moecomm.dequantize %q, %s wire<mxfp8> : tensor<?x300xf8E4M3FN>, tensor<?x3xf8E8M0FNU> -> tensor<?x300xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x300xf8E4M3FN>, %s: tensor<?x4xf8E8M0FNU>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.permute' op E8M0 scales must have ceil(300/128) = 3 (fp8_e4m3_ue8m0) or ceil(300/32) = 10 (mxfp8) columns, got [?,4]}}
  %0:2 = moecomm.permute %x scales(%s : tensor<?x4xf8E8M0FNU>), %h dispatch output : tensor<?x300xf8E4M3FN>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>
  return
}

// -----

func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op wire<mxfp8> is the format a pack quantizes to, but this pack does not quantize}}
  %0 = moecomm.pack %x, %h dispatch stage 0 wire<mxfp8> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xbf16>
  return
}

// -----

// A quantizing pack writes its format's scales: f32 ones are fp8_e4m3's.
func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op scales of wire<fp8_e4m3_ue8m0> must be 'f8E8M0FNU' with 1 columns for 8 elements per row, got 'tensor<?x1xf32>'}}
  %0:2 = moecomm.pack %x, %h dispatch stage 0 wire<fp8_e4m3_ue8m0> : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf8E4M3FN>, tensor<?x1xf32>
  return
}

// -----

// A pack without `wire` quantizes to fp8_e4m3, whose scales are f32.
func.func @f(%x: tensor<?x8xbf16>, %h: !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16>) {
  // expected-error @+1 {{'moecomm.pack' op scales of wire<fp8_e4m3> must be 'f32' with 1 columns for 8 elements per row, got 'tensor<?x1xf8E8M0FNU>'}}
  %0:2 = moecomm.pack %x, %h dispatch stage 0 : tensor<?x8xbf16>, !moecomm.handle<ranks = 8, ranks_per_node = 4, experts = 16> -> tensor<?x8xf8E4M3FN>, tensor<?x1xf8E8M0FNU>
  return
}
