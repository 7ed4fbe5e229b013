#!/usr/bin/env bash
# Compile-time benchmark of moecomm-pipeline (issue 4): a training step of 61
# DeepSeek-V3-sized MoE layers (H=7168, 256 experts, top-8; forward dispatch
# -> combine, backward cached dispatch -> weight scaling -> combine, chained
# through the layers, FP8 dispatch) compiled by moecomm-pipeline for 64 ranks
# as 8 x 8 (the other options at their defaults: strategy auto, chunks 1)
# down to the LLVM dialect. Prints -mlir-timing's per-pass report and the
# ratio to the baseline measured in the same run: parsing, verifying and
# printing the same module without passes. Extra pipeline options (e.g.
# "chunks=2") can be given as the second argument.
#   bench/pipeline_compile_bench.sh [build-dir] [extra pipeline options]
set -euo pipefail
build="${1:-$(dirname "$0")/../build}"
extra="${2:-}"
opt="$build/bin/moecomm-opt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
module="$work/deepseek-v3-61-layers.mlir"

layers=61
rows="tensor<?x7168xbf16>"
idx="tensor<?x8xi32>"
wts="tensor<?x8xf32>"
handle="!moecomm.handle<ranks = 64, ranks_per_node = 8, experts = 256>"
{
  echo '#rows = affine_map<(d0, d1) -> (d0, d1)>'
  echo '#row = affine_map<(d0, d1) -> (d0)>'
  args="%x: $rows, %grad: $rows"
  for i in $(seq 1 $layers); do args="$args, %idx$i: $idx, %w$i: $wts"; done
  echo "func.func @training_step($args) -> ($rows, $rows) {"
  echo "  %c0 = arith.constant 0 : index"
  prev="%x"
  for i in $(seq 1 $layers); do
    echo "  %recv$i, %rw$i, %tpe$i, %h$i = moecomm.dispatch $prev, %idx$i, %w$i topology<ranks = 64, ranks_per_node = 8, experts = 256> wire<fp8_e4m3> : $rows, $idx, $wts"
    echo "  %out$i = moecomm.combine %recv$i, %h$i weighted : $rows, $handle -> $rows"
    prev="%out$i"
  done
  g="%grad"
  for i in $(seq $layers -1 1); do
    echo "  %gr$i = moecomm.cached_dispatch $g, %h$i wire<fp8_e4m3> : $rows, $handle"
    echo "  %n$i = tensor.dim %gr$i, %c0 : $rows"
    echo "  %e$i = tensor.empty(%n$i) : $rows"
    echo "  %gy$i = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = [\"parallel\", \"parallel\"]} ins(%gr$i, %rw$i : $rows, tensor<?xf32>) outs(%e$i : $rows) {"
    echo "  ^bb0(%a: bf16, %b: f32, %c: bf16):"
    echo "    %af = arith.extf %a : bf16 to f32"
    echo "    %p = arith.mulf %af, %b : f32"
    echo "    %t = arith.truncf %p : f32 to bf16"
    echo "    linalg.yield %t : bf16"
    echo "  } -> $rows"
    echo "  %gx$i = moecomm.combine %gy$i, %h$i : $rows, $handle -> $rows"
    g="%gx$i"
  done
  echo "  return $prev, $g : $rows, $rows"
  echo "}"
} > "$module"

now() { date +%s.%N; }
t0=$(now)
"$opt" "$module" -o /dev/null
t1=$(now)
"$opt" "$module" -o "$work/out.mlir" -mlir-timing \
  --moecomm-pipeline="ranks=64 ranks-per-node=8 $extra" \
  2> "$work/timing.txt"
t2=$(now)
cat "$work/timing.txt"
awk -v b="$t0" -v m="$t1" -v e="$t2" -v l="$layers" 'BEGIN {
  base = m - b; pipe = e - m
  printf "\n%d layers: moecomm-pipeline %.3f s wall (process), baseline parse+verify+print %.3f s; ratio %.2f\n", l, pipe, base, pipe / base
}'
grep -c "llvm.call @moecomm_rt_" "$work/out.mlir" | sed 's/^/runtime calls in the output: /'
