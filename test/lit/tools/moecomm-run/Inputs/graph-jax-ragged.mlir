// A JAX-style MoE layer (MaxText's sparse path, Megatron's all-to-all
// dispatcher), written as JAX exports it: token rows sorted by expert,
// group sizes and offsets, jax.lax.ragged_all_to_all as
// "stablehlo.custom_call" @ragged_all_to_all (generic form) to the experts'
// ranks and back, unsort, weighted sum over top-k. W = 4 ranks, E = 8
// experts (L = 2 per rank), K = 4, H = 16, bf16 rows, identity experts.
// Every entry takes moecomm-run's graph contract (docs/moecomm-run.md,
// "Graphs") and returns the rows each rank's experts received in moecomm's
// dispatch order, so moecomm-run's oracle checks every row, weight and
// count, and the combine bit for bit. moecomm-import-ragged-all-to-all
// converts the custom calls (import-ragged-all-to-all.test).
//
// The group sizes travel in a dense all-to-all of one row per peer (what
// jax.lax.all_to_all / all_gather of the sizes does in JAX; those are not
// imported, so it is written as moecomm.all_to_all): the sender of a ragged
// all-to-all must know where its rows land in each receiver's output.
//
// Entries (arguments of @ragged_moe):
// - @moe_layer: segments in rank order, contiguous, every row exchanged.
// - @moe_layer_rules: each XLA operand rule made visible to the oracle:
//   send segments in reverse rank order with 2 sentinel rows before each
//   (input offsets with gaps, out of order), received segments likewise
//   (output offsets with gaps), and the rows a rank routes to itself not
//   exchanged (send_sizes / recv_sizes 0) but written into the outputs
//   before the exchanges, so they reach the result only if the exchange
//   keeps the output rows nobody writes.
// - @bad_recv_sizes: recv_sizes[0] one more than rank 0 sends (a clear
//   failure of the import's runtime check).
// - @bad_input_offsets: input_offsets[3] past the operand's rows (likewise).
// - @bad_output_offsets: output_offsets[0] past rank 0's output rows: only
//   rank 0's check fails, after the exchange, and the other ranks stop at
//   their next exchange instead of waiting for it.
// The entries have C interfaces for an ahead-of-time library (moecomm-run
// --aot; test/python/test_compile.py compiles one with moecomm.compile).
func.func @moe_layer(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %c0_i64 = arith.constant 0 : i64
  %r:4 = call @ragged_moe(%x, %idx, %w, %c0, %false, %c0_i64, %c0_i64, %c0_i64) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>, index, i1, i64, i64, i64) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

func.func @moe_layer_rules(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %c2 = arith.constant 2 : index
  %true = arith.constant true
  %c0_i64 = arith.constant 0 : i64
  %r:4 = call @ragged_moe(%x, %idx, %w, %c2, %true, %c0_i64, %c0_i64, %c0_i64) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>, index, i1, i64, i64, i64) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

func.func @bad_recv_sizes(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %r:4 = call @ragged_moe(%x, %idx, %w, %c0, %false, %c1_i64, %c0_i64, %c0_i64) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>, index, i1, i64, i64, i64) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

func.func @bad_input_offsets(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %c0_i64 = arith.constant 0 : i64
  %big = arith.constant 1000000 : i64
  %r:4 = call @ragged_moe(%x, %idx, %w, %c0, %false, %c0_i64, %big, %c0_i64) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>, index, i1, i64, i64, i64) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

func.func @bad_output_offsets(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %c0_i64 = arith.constant 0 : i64
  %big = arith.constant 1000000 : i64
  %r:4 = call @ragged_moe(%x, %idx, %w, %c0, %false, %c0_i64, %c0_i64, %big) : (tensor<?x16xbf16>, tensor<?x4xi32>, tensor<?x4xf32>, index, i1, i64, i64, i64) -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}

// The layer. %gap: sentinel rows before each segment, and segments in
// reverse rank order when > 0; %skip_self: the rows a rank routes to itself
// bypass the exchanges; %recv_error: added to the first exchange's
// recv_sizes[0]; %offset_error: added to its input_offsets[3];
// %out_offset_error: added to its output_offsets[0] (rank 0's check fails).
func.func private @ragged_moe(%x: tensor<?x16xbf16>, %idx: tensor<?x4xi32>, %w: tensor<?x4xf32>,
    %gap: index, %skip_self: i1, %recv_error: i64, %offset_error: i64,
    %out_offset_error: i64)
    -> (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cW = arith.constant 4 : index
  %cWm1 = arith.constant 3 : index
  %cE = arith.constant 8 : index
  %cL = arith.constant 2 : index
  %cK = arith.constant 4 : index
  %cH = arith.constant 16 : index
  %c0_i32 = arith.constant 0 : i32
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %cm1_i64 = arith.constant -1 : i64
  %zero_f32 = arith.constant 0.0 : f32
  %sentinel = arith.constant -448.0 : bf16
  %sentinel_f32 = arith.constant -448.0 : f32
  %ones = arith.constant dense<1> : tensor<4xi64>
  %T = tensor.dim %x, %c0 : tensor<?x16xbf16>
  %gap64 = arith.index_cast %gap : index to i64
  %reversed = arith.cmpi sgt, %gap, %c0 : index

  // 1. Rows per expert (a masked slot, id -1, sends nothing).
  %count0 = arith.constant dense<0> : tensor<8xi64>
  %count = scf.for %t = %c0 to %T step %c1 iter_args(%acc = %count0) -> (tensor<8xi64>) {
    %per_token = scf.for %k = %c0 to %cK step %c1 iter_args(%a = %acc) -> (tensor<8xi64>) {
      %e32 = tensor.extract %idx[%t, %k] : tensor<?x4xi32>
      %valid = arith.cmpi sge, %e32, %c0_i32 : i32
      %next = scf.if %valid -> (tensor<8xi64>) {
        %e = arith.index_cast %e32 : i32 to index
        %n = tensor.extract %a[%e] : tensor<8xi64>
        %n1 = arith.addi %n, %c1_i64 : i64
        %u = tensor.insert %n1 into %a[%e] : tensor<8xi64>
        scf.yield %u : tensor<8xi64>
      } else {
        scf.yield %a : tensor<8xi64>
      }
      scf.yield %next : tensor<8xi64>
    }
    scf.yield %per_token : tensor<8xi64>
  }

  // 2. Each expert's first row in the sorted buffer (exclusive prefix sum);
  // S = rows routed.
  %start0 = tensor.empty() : tensor<8xi64>
  %start:2 = scf.for %e = %c0 to %cE step %c1 iter_args(%s = %c0_i64, %st = %start0) -> (i64, tensor<8xi64>) {
    %st1 = tensor.insert %s into %st[%e] : tensor<8xi64>
    %n = tensor.extract %count[%e] : tensor<8xi64>
    %s1 = arith.addi %s, %n : i64
    scf.yield %s1, %st1 : i64, tensor<8xi64>
  }
  %S = arith.index_cast %start#0 : i64 to index

  // 3. Sort the token rows and weights by expert (token order within an
  // expert); pos[t, k] = the sorted row of slot (t, k), -1 when masked.
  %sorted0 = tensor.empty(%S) : tensor<?x16xbf16>
  %sortedW0 = tensor.empty(%S) : tensor<?x1xf32>
  %pos0 = tensor.empty(%T) : tensor<?x4xi64>
  %sort:4 = scf.for %t = %c0 to %T step %c1
      iter_args(%cur = %start#1, %rows = %sorted0, %ws = %sortedW0, %pos = %pos0)
      -> (tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>) {
    %per_token:4 = scf.for %k = %c0 to %cK step %c1
        iter_args(%cu = %cur, %r = %rows, %q = %ws, %ps = %pos)
        -> (tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>) {
      %e32 = tensor.extract %idx[%t, %k] : tensor<?x4xi32>
      %valid = arith.cmpi sge, %e32, %c0_i32 : i32
      %next:4 = scf.if %valid -> (tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>) {
        %e = arith.index_cast %e32 : i32 to index
        %p = tensor.extract %cu[%e] : tensor<8xi64>
        %p1 = arith.addi %p, %c1_i64 : i64
        %cu1 = tensor.insert %p1 into %cu[%e] : tensor<8xi64>
        %pi = arith.index_cast %p : i64 to index
        %row = tensor.extract_slice %x[%t, 0] [1, 16] [1, 1] : tensor<?x16xbf16> to tensor<1x16xbf16>
        %r1 = tensor.insert_slice %row into %r[%pi, 0] [1, 16] [1, 1] : tensor<1x16xbf16> into tensor<?x16xbf16>
        %wt = tensor.extract %w[%t, %k] : tensor<?x4xf32>
        %q1 = tensor.insert %wt into %q[%pi, %c0] : tensor<?x1xf32>
        %ps1 = tensor.insert %p into %ps[%t, %k] : tensor<?x4xi64>
        scf.yield %cu1, %r1, %q1, %ps1 : tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>
      } else {
        %ps1 = tensor.insert %cm1_i64 into %ps[%t, %k] : tensor<?x4xi64>
        scf.yield %cu, %r, %q, %ps1 : tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>
      }
      scf.yield %next#0, %next#1, %next#2, %next#3 : tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>
    }
    scf.yield %per_token#0, %per_token#1, %per_token#2, %per_token#3 : tensor<8xi64>, tensor<?x16xbf16>, tensor<?x1xf32>, tensor<?x4xi64>
  }

  // 4. Per destination rank j (experts [2j, 2j+2)): the rows c[j], their
  // offset in the send buffer (in rank order without gaps, or in reverse
  // rank order after %gap rows each), and the group sizes row that j gets:
  // [c[j], send offset, rows of expert 2j, rows of expert 2j+1, j].
  %sizes0 = tensor.empty() : tensor<4xi64>
  %inoff0 = tensor.empty() : tensor<4xi64>
  %groups0 = tensor.empty() : tensor<4x5xf32>
  %dest:4 = scf.for %q = %c0 to %cW step %c1 iter_args(%next_off = %c0_i64, %sz = %sizes0, %io = %inoff0, %gr = %groups0)
      -> (i64, tensor<4xi64>, tensor<4xi64>, tensor<4x5xf32>) {
    %back_q = arith.subi %cWm1, %q : index
    %j = arith.select %reversed, %back_q, %q : index
    %first = arith.muli %j, %cL : index
    %per_expert:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%sum = %c0_i64, %g = %gr) -> (i64, tensor<4x5xf32>) {
      %e = arith.addi %first, %l : index
      %n = tensor.extract %count[%e] : tensor<8xi64>
      %nf = arith.sitofp %n : i64 to f32
      %col = arith.addi %l, %c2 : index
      %g1 = tensor.insert %nf into %g[%j, %col] : tensor<4x5xf32>
      %sum1 = arith.addi %sum, %n : i64
      scf.yield %sum1, %g1 : i64, tensor<4x5xf32>
    }
    %o = arith.addi %next_off, %gap64 : i64
    %after = arith.addi %o, %per_expert#0 : i64
    %sz1 = tensor.insert %per_expert#0 into %sz[%j] : tensor<4xi64>
    %io1 = tensor.insert %o into %io[%j] : tensor<4xi64>
    %sf = arith.sitofp %per_expert#0 : i64 to f32
    %of = arith.sitofp %o : i64 to f32
    %jf = arith.index_cast %j : index to i64
    %jff = arith.sitofp %jf : i64 to f32
    %g2 = tensor.insert %sf into %per_expert#1[%j, %c0] : tensor<4x5xf32>
    %g3 = tensor.insert %of into %g2[%j, %c1] : tensor<4x5xf32>
    %g4 = tensor.insert %jff into %g3[%j, %c4] : tensor<4x5xf32>
    scf.yield %after, %sz1, %io1, %g4 : i64, tensor<4xi64>, tensor<4xi64>, tensor<4x5xf32>
  }
  %groups, %groups_counts = moecomm.all_to_all %dest#3, %ones topology<ranks = 4, ranks_per_node = 4> : tensor<4x5xf32>, tensor<4xi64>
  %me_f = tensor.extract %groups[%c0, %c4] : tensor<?x5xf32>
  %me64 = arith.fptosi %me_f : f32 to i64
  %me = arith.index_cast %me64 : i64 to index

  // 5. The send buffer: sentinel rows, then each destination's segment of
  // the sorted rows at its send offset.
  %Sp = arith.index_cast %dest#0 : i64 to index
  %spreadEmpty = tensor.empty(%Sp) : tensor<?x16xbf16>
  %spreadInit = linalg.fill ins(%sentinel : bf16) outs(%spreadEmpty : tensor<?x16xbf16>) -> tensor<?x16xbf16>
  %spreadWEmpty = tensor.empty(%Sp) : tensor<?x1xf32>
  %spreadWInit = linalg.fill ins(%sentinel_f32 : f32) outs(%spreadWEmpty : tensor<?x1xf32>) -> tensor<?x1xf32>
  %spread:2 = scf.for %j = %c0 to %cW step %c1 iter_args(%sp = %spreadInit, %spw = %spreadWInit) -> (tensor<?x16xbf16>, tensor<?x1xf32>) {
    %first = arith.muli %j, %cL : index
    %from64 = tensor.extract %start#1[%first] : tensor<8xi64>
    %from = arith.index_cast %from64 : i64 to index
    %n64 = tensor.extract %dest#1[%j] : tensor<4xi64>
    %n = arith.index_cast %n64 : i64 to index
    %to64 = tensor.extract %dest#2[%j] : tensor<4xi64>
    %to = arith.index_cast %to64 : i64 to index
    %blk = tensor.extract_slice %sort#1[%from, 0] [%n, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
    %sp1 = tensor.insert_slice %blk into %sp[%to, 0] [%n, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %wblk = tensor.extract_slice %sort#2[%from, 0] [%n, 1] [1, 1] : tensor<?x1xf32> to tensor<?x1xf32>
    %spw1 = tensor.insert_slice %wblk into %spw[%to, 0] [%n, 1] [1, 1] : tensor<?x1xf32> into tensor<?x1xf32>
    scf.yield %sp1, %spw1 : tensor<?x16xbf16>, tensor<?x1xf32>
  }

  // 6. As a receiver: the rows from source i, its send offset for this rank,
  // and where its rows go in this rank's output (in rank order without
  // gaps, or in reverse rank order after %gap rows each), which each source
  // learns in a second dense exchange. Rp = rows of the output.
  %recvSizes0 = tensor.empty() : tensor<4xi64>
  %from0 = tensor.empty() : tensor<4xi64>
  %seg0 = tensor.empty() : tensor<4xi64>
  %segRows0 = tensor.empty() : tensor<4x1xf32>
  %recv_info:5 = scf.for %q = %c0 to %cW step %c1
      iter_args(%tot = %c0_i64, %rs = %recvSizes0, %fr = %from0, %sg = %seg0, %sr = %segRows0)
      -> (i64, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4x1xf32>) {
    %back_q = arith.subi %cWm1, %q : index
    %i = arith.select %reversed, %back_q, %q : index
    %nf = tensor.extract %groups[%i, %c0] : tensor<?x5xf32>
    %of = tensor.extract %groups[%i, %c1] : tensor<?x5xf32>
    %n = arith.fptosi %nf : f32 to i64
    %o = arith.fptosi %of : f32 to i64
    %at = arith.addi %tot, %gap64 : i64
    %rs1 = tensor.insert %n into %rs[%i] : tensor<4xi64>
    %fr1 = tensor.insert %o into %fr[%i] : tensor<4xi64>
    %sg1 = tensor.insert %at into %sg[%i] : tensor<4xi64>
    %af = arith.sitofp %at : i64 to f32
    %sr1 = tensor.insert %af into %sr[%i, %c0] : tensor<4x1xf32>
    %tot1 = arith.addi %at, %n : i64
    scf.yield %tot1, %rs1, %fr1, %sg1, %sr1 : i64, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4x1xf32>
  }
  %Rp = arith.index_cast %recv_info#0 : i64 to index
  %where, %where_counts = moecomm.all_to_all %recv_info#4, %ones topology<ranks = 4, ranks_per_node = 4> : tensor<4x1xf32>, tensor<4xi64>
  %outoff0 = tensor.empty() : tensor<4xi64>
  %outoff = scf.for %j = %c0 to %cW step %c1 iter_args(%oo = %outoff0) -> (tensor<4xi64>) {
    %f = tensor.extract %where[%j, %c0] : tensor<?x1xf32>
    %v = arith.fptosi %f : f32 to i64
    %oo1 = tensor.insert %v into %oo[%j] : tensor<4xi64>
    scf.yield %oo1 : tensor<4xi64>
  }

  // 7. The sizes the exchanges are given: with %skip_self, 0 for this rank
  // itself; the errors of the failing entries.
  %given:2 = scf.for %j = %c0 to %cW step %c1 iter_args(%ss = %dest#1, %rr = %recv_info#1) -> (tensor<4xi64>, tensor<4xi64>) {
    %is_me = arith.cmpi eq, %j, %me : index
    %skip = arith.andi %is_me, %skip_self : i1
    %s = tensor.extract %ss[%j] : tensor<4xi64>
    %r = tensor.extract %rr[%j] : tensor<4xi64>
    %s1 = arith.select %skip, %c0_i64, %s : i64
    %r1 = arith.select %skip, %c0_i64, %r : i64
    %ss1 = tensor.insert %s1 into %ss[%j] : tensor<4xi64>
    %rr1 = tensor.insert %r1 into %rr[%j] : tensor<4xi64>
    scf.yield %ss1, %rr1 : tensor<4xi64>, tensor<4xi64>
  }
  %r0 = tensor.extract %given#1[%c0] : tensor<4xi64>
  %r0_bad = arith.addi %r0, %recv_error : i64
  %recvSizesBad = tensor.insert %r0_bad into %given#1[%c0] : tensor<4xi64>
  %o3 = tensor.extract %dest#2[%c3] : tensor<4xi64>
  %o3_bad = arith.addi %o3, %offset_error : i64
  %inOffBad = tensor.insert %o3_bad into %dest#2[%c3] : tensor<4xi64>
  %oo0 = tensor.extract %outoff[%c0] : tensor<4xi64>
  %oo0_bad = arith.addi %oo0, %out_offset_error : i64
  %outOffBad = tensor.insert %oo0_bad into %outoff[%c0] : tensor<4xi64>

  // 8. The rows and their weights to the experts' ranks, into outputs of
  // sentinel rows that already hold, with %skip_self, this rank's own rows.
  %my_first = arith.muli %me, %cL : index
  %my_from64 = tensor.extract %start#1[%my_first] : tensor<8xi64>
  %my_from = arith.index_cast %my_from64 : i64 to index
  %my_n64 = tensor.extract %dest#1[%me] : tensor<4xi64>
  %my_n = arith.index_cast %my_n64 : i64 to index
  %my_seg64 = tensor.extract %recv_info#3[%me] : tensor<4xi64>
  %my_seg = arith.index_cast %my_seg64 : i64 to index
  %my_rows = tensor.extract_slice %sort#1[%my_from, 0] [%my_n, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
  %my_weights = tensor.extract_slice %sort#2[%my_from, 0] [%my_n, 1] [1, 1] : tensor<?x1xf32> to tensor<?x1xf32>
  %recvEmpty = tensor.empty(%Rp) : tensor<?x16xbf16>
  %recvFill = linalg.fill ins(%sentinel : bf16) outs(%recvEmpty : tensor<?x16xbf16>) -> tensor<?x16xbf16>
  %recvWEmpty = tensor.empty(%Rp) : tensor<?x1xf32>
  %recvWFill = linalg.fill ins(%sentinel_f32 : f32) outs(%recvWEmpty : tensor<?x1xf32>) -> tensor<?x1xf32>
  %recvInit:2 = scf.if %skip_self -> (tensor<?x16xbf16>, tensor<?x1xf32>) {
    %a = tensor.insert_slice %my_rows into %recvFill[%my_seg, 0] [%my_n, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    %b = tensor.insert_slice %my_weights into %recvWFill[%my_seg, 0] [%my_n, 1] [1, 1] : tensor<?x1xf32> into tensor<?x1xf32>
    scf.yield %a, %b : tensor<?x16xbf16>, tensor<?x1xf32>
  } else {
    scf.yield %recvFill, %recvWFill : tensor<?x16xbf16>, tensor<?x1xf32>
  }
  %recv = "stablehlo.custom_call"(%spread#0, %recvInit#0, %inOffBad, %given#0, %outOffBad, %recvSizesBad) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>
  // The weights' exchange takes i32 offsets and sizes (JAX allows either).
  %inOff32 = arith.trunci %dest#2 : tensor<4xi64> to tensor<4xi32>
  %sendSizes32 = arith.trunci %given#0 : tensor<4xi64> to tensor<4xi32>
  %outOff32 = arith.trunci %outoff : tensor<4xi64> to tensor<4xi32>
  %recvSizes32 = arith.trunci %given#1 : tensor<4xi64> to tensor<4xi32>
  %recvW = "stablehlo.custom_call"(%spread#1, %recvInit#1, %inOff32, %sendSizes32, %outOff32, %recvSizes32) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x1xf32>, tensor<?x1xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<?x1xf32>

  // 9. Expert-major order (moecomm.dispatch's recv: by local expert, then
  // source rank, then source token): source i's segment holds its rows by
  // local expert, group sizes in columns 2 and 3 of its row.
  %R_recv = scf.for %i = %c0 to %cW step %c1 iter_args(%tot = %c0) -> (index) {
    %n64 = tensor.extract %recv_info#1[%i] : tensor<4xi64>
    %n = arith.index_cast %n64 : i64 to index
    %tot1 = arith.addi %tot, %n : index
    scf.yield %tot1 : index
  }
  %perm0 = tensor.empty(%R_recv) : tensor<?x16xbf16>
  %permW0 = tensor.empty(%R_recv) : tensor<?xf32>
  %tpe0 = tensor.empty() : tensor<2xi64>
  %expert_major:5 = scf.for %l = %c0 to %cL step %c1
      iter_args(%dst = %c0, %cur = %recv_info#3, %pr = %perm0, %pw = %permW0, %tpe = %tpe0)
      -> (index, tensor<4xi64>, tensor<?x16xbf16>, tensor<?xf32>, tensor<2xi64>) {
    %col = arith.addi %l, %c2 : index
    %per_source:4 = scf.for %i = %c0 to %cW step %c1
        iter_args(%d = %dst, %cu = %cur, %p = %pr, %q = %pw)
        -> (index, tensor<4xi64>, tensor<?x16xbf16>, tensor<?xf32>) {
      %nf = tensor.extract %groups[%i, %col] : tensor<?x5xf32>
      %n64 = arith.fptosi %nf : f32 to i64
      %n = arith.index_cast %n64 : i64 to index
      %src64 = tensor.extract %cu[%i] : tensor<4xi64>
      %src = arith.index_cast %src64 : i64 to index
      %blk = tensor.extract_slice %recv[%src, 0] [%n, 16] [1, 1] : tensor<?x16xbf16> to tensor<?x16xbf16>
      %p1 = tensor.insert_slice %blk into %p[%d, 0] [%n, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
      %wblk = tensor.extract_slice %recvW[%src, 0] [%n, 1] [1, 1] : tensor<?x1xf32> to tensor<?xf32>
      %q1 = tensor.insert_slice %wblk into %q[%d] [%n] [1] : tensor<?xf32> into tensor<?xf32>
      %next64 = arith.addi %src64, %n64 : i64
      %cu1 = tensor.insert %next64 into %cu[%i] : tensor<4xi64>
      %d1 = arith.addi %d, %n : index
      scf.yield %d1, %cu1, %p1, %q1 : index, tensor<4xi64>, tensor<?x16xbf16>, tensor<?xf32>
    }
    %rows = arith.subi %per_source#0, %dst : index
    %rows64 = arith.index_cast %rows : index to i64
    %tpe1 = tensor.insert %rows64 into %tpe[%l] : tensor<2xi64>
    scf.yield %per_source#0, %per_source#1, %per_source#2, %per_source#3, %tpe1 : index, tensor<4xi64>, tensor<?x16xbf16>, tensor<?xf32>, tensor<2xi64>
  }

  // 10. Identity experts: their outputs (the rows received) go back to each
  // source, into its send buffer's layout where it sent them from (with
  // %skip_self, this rank's own rows are there already).
  %backEmpty = tensor.empty(%Sp) : tensor<?x16xbf16>
  %backFill = linalg.fill ins(%sentinel : bf16) outs(%backEmpty : tensor<?x16xbf16>) -> tensor<?x16xbf16>
  %my_off64 = tensor.extract %dest#2[%me] : tensor<4xi64>
  %my_off = arith.index_cast %my_off64 : i64 to index
  %backInit = scf.if %skip_self -> (tensor<?x16xbf16>) {
    %a = tensor.insert_slice %my_rows into %backFill[%my_off, 0] [%my_n, 16] [1, 1] : tensor<?x16xbf16> into tensor<?x16xbf16>
    scf.yield %a : tensor<?x16xbf16>
  } else {
    scf.yield %backFill : tensor<?x16xbf16>
  }
  %back = "stablehlo.custom_call"(%recv, %backInit, %recv_info#3, %given#1, %recv_info#2, %given#0) {call_target_name = "ragged_all_to_all", api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}} : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x16xbf16>

  // 11. Unsort and weighted sum over top-k: in slot order, in f32, rounded
  // to bf16 once. Slot (t, k) of expert e is row pos - start[2d] + off[d]
  // of the send buffer's layout, d = e / 2.
  %out0 = tensor.empty(%T) : tensor<?x16xbf16>
  %out = scf.for %t = %c0 to %T step %c1 iter_args(%o = %out0) -> (tensor<?x16xbf16>) {
    %per_token = scf.for %h = %c0 to %cH step %c1 iter_args(%o2 = %o) -> (tensor<?x16xbf16>) {
      %sum = scf.for %k = %c0 to %cK step %c1 iter_args(%a = %zero_f32) -> (f32) {
        %p = tensor.extract %sort#3[%t, %k] : tensor<?x4xi64>
        %kept = arith.cmpi sge, %p, %c0_i64 : i64
        %a1 = scf.if %kept -> (f32) {
          %e32 = tensor.extract %idx[%t, %k] : tensor<?x4xi32>
          %e = arith.index_cast %e32 : i32 to index
          %d = arith.divui %e, %cL : index
          %first = arith.muli %d, %cL : index
          %s64 = tensor.extract %start#1[%first] : tensor<8xi64>
          %off64 = tensor.extract %dest#2[%d] : tensor<4xi64>
          %rel = arith.subi %p, %s64 : i64
          %at64 = arith.addi %rel, %off64 : i64
          %at = arith.index_cast %at64 : i64 to index
          %y = tensor.extract %back[%at, %h] : tensor<?x16xbf16>
          %yf = arith.extf %y : bf16 to f32
          %wt = tensor.extract %w[%t, %k] : tensor<?x4xf32>
          %prod = arith.mulf %wt, %yf : f32
          %s = arith.addf %a, %prod : f32
          scf.yield %s : f32
        } else {
          scf.yield %a : f32
        }
        scf.yield %a1 : f32
      }
      %b = arith.truncf %sum : f32 to bf16
      %o3b = tensor.insert %b into %o2[%t, %h] : tensor<?x16xbf16>
      scf.yield %o3b : tensor<?x16xbf16>
    }
    scf.yield %per_token : tensor<?x16xbf16>
  }
  %tokens_per_expert = tensor.cast %expert_major#4 : tensor<2xi64> to tensor<?xi64>
  return %out, %expert_major#2, %expert_major#3, %tokens_per_expert : tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xf32>, tensor<?xi64>
}
