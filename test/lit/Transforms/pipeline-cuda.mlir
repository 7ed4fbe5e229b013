// moecomm-pipeline target=cuda: the same runtime calls as target=host, on
// buffers the runtime places on the bound device (moecomm-device-buffers):
// rows on the device (moecomm_rt_alloc ..., 1), the per-expert counts the
// host reads on the host (..., 0), each buffer freed after its last use,
// an exchange's buffers after its wait. The result translates to LLVM IR
// that calls the C interface of moecomm_compiled.h.
// RUN: moecomm-opt %s "--moecomm-pipeline=target=cuda strategy=flat" --mlir-print-ir-after=moecomm-device-buffers -o %t.mlir 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LLVM < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=IR

// CHECK-LABEL: func.func @moe_layer(
// CHECK-NOT: memref.alloc
// CHECK: %[[L:.*]] = call @moecomm_rt_layout_i32(
// tokens_per_expert: 2 x i64 on the host.
// (the printer names constants by value: %c0_i32* is 0 : i32)
// recv_weights, unused: device.
// CHECK: call @moecomm_rt_alloc(%{{.*}}, %c1_i32{{[_0-9]*}}) : (i64, i32) -> memref<?xi8>
// CHECK: %[[TPE:.*]] = call @moecomm_rt_alloc(%{{.*}}, %c0_i32{{[_0-9]*}}) : (i64, i32) -> memref<?xi8>
// CHECK: %[[TPEV:.*]] = memref.view %[[TPE]][%{{.*}}][] : memref<?xi8> to memref<2xi64>
// CHECK: call @moecomm_rt_tokens_per_expert(%[[L]],
// Dispatch: pack into device rows, exchange, free the sent rows after the
// wait, unpack, free the received rows.
// CHECK: %[[SEND:.*]] = call @moecomm_rt_alloc(%{{.*}}, %c1_i32{{[_0-9]*}}) : (i64, i32) -> memref<?xi8>
// CHECK: %[[SENDV:.*]] = memref.view %[[SEND]]
// CHECK: call @moecomm_rt_gather_bf16_bf16(%[[L]],
// CHECK: %[[RECV:.*]] = call @moecomm_rt_alloc(%{{.*}}, %c1_i32{{[_0-9]*}}) : (i64, i32) -> memref<?xi8>
// CHECK: %[[RECVV:.*]] = memref.view %[[RECV]]
// CHECK: %[[REQ:.*]] = call @moecomm_rt_exchange_start_bf16(%[[L]],
// CHECK-NOT: moecomm_rt_free
// CHECK: call @moecomm_rt_wait(%[[REQ]])
// CHECK: %[[A:.*]] = memref.extract_aligned_pointer_as_index %[[SENDV]]
// CHECK: call @moecomm_rt_free(
// CHECK: call @moecomm_rt_gather_bf16_bf16(%[[L]],
// CHECK: %[[B:.*]] = memref.extract_aligned_pointer_as_index %[[RECVV]]
// CHECK: call @moecomm_rt_free(
// CHECK: call @moecomm_rt_exchange_start_bf16(%[[L]],
// CHECK: call @moecomm_rt_layout_release(%[[L]])
// CHECK: return %{{.*}}, %{{.*}} : memref<?x64xbf16>, memref<?xi64>

// LLVM-DAG: llvm.func @_mlir_ciface_moecomm_rt_alloc(!llvm.ptr, i64, i32)
// LLVM-DAG: llvm.func @moecomm_rt_free(!llvm.ptr)

// IR-LABEL: define private { ptr, ptr, i64, [1 x i64], [1 x i64] } @moecomm_rt_alloc(i64 %0, i32 %1)
// IR: call void @_mlir_ciface_moecomm_rt_alloc(ptr
// IR: declare void @_mlir_ciface_moecomm_rt_alloc(ptr, i64, i32)
func.func @moe_layer(%x: tensor<?x64xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> (tensor<?x64xbf16>, tensor<?xi64>) {
  %recv, %rw, %tpe, %h = moecomm.dispatch %x, %idx, %w topology<ranks = 2, ranks_per_node = 2, experts = 4> : tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>
  %out = moecomm.combine %recv, %h weighted : tensor<?x64xbf16>, !moecomm.handle<ranks = 2, ranks_per_node = 2, experts = 4> -> tensor<?x64xbf16>
  %counts = tensor.cast %tpe : tensor<2xi64> to tensor<?xi64>
  return %out, %counts : tensor<?x64xbf16>, tensor<?xi64>
}
