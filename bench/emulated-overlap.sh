#!/usr/bin/env bash
# How much communication the overlap schedule hides, measured on the emulated
# cluster (docs/emulated-cluster.md), as root:
#
#   bench/emulated-overlap.sh [--topology 2x1] [--rate 1gbit] [--tokens 64]
#                             [--experts 32] [--chunks 4] [--iterations 5]
#                             [--out DIR] [--build DIR]
#
# Writes two routings (moecomm-run --save-routing: DeepSeek-V3's hidden
# size and top-k, uniform routing, seed 1, --tokens per rank; --experts
# experts for the FFN layer and the model's 256 for the identity layer) and
# the FFN layer's graph, the example retargeted to --experts experts
# (moecomm-opt --moecomm-configure-collectives=experts=...: its FFN
# functions are written for a scaled count, 32, and their weights are
# arguments; fewer experts give each expert's GEMMs more rows per chunk),
# then, holding `flock /run/moecomm-emulated.lock` from `up` to `down`, brings
# the cluster up at --rate and runs, one process per rank (moecomm-run
# --backend mpi --strategy hierarchical --iterations N --trace), each of
#   ffn      DIR/ffn.mlir @ffn_layer: SwiGLU experts, their GEMMs in
#            OpenBLAS (compute to hide the exchanges behind);
#   identity examples/deepseek-v3.mlir @training_step: identity experts
#            (nothing to overlap: what chunking costs);
# with --chunks 1 and with --chunks C, and takes the cluster down (also on
# failure or Ctrl-C). Finally bench/emulated-overlap-report.py writes
# DIR/table.md: per layer the median and minimum iteration time of both
# runs (the first iteration is the warm-up and is left out) and
# chunks=C / chunks=1. Raw outputs: DIR/<layer>-c<chunks>.{json,trace.json,
# trace.png} (the timelines). The FFN runs spend most of their wall time in
# moecomm-run's reference (its experts in plain loops, before the timed
# iterations; each process computes its own tokens' rows), not in the
# measurement.
# Exit status: 0 done, 2 bad usage (one line), 77 no network namespaces
# here, otherwise the failing step's status.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
topology=2x1
rate=1gbit
tokens=64
experts=32
chunks=4
iterations=5
out=$here/build/emulated-overlap
build=$here/build
lock=/run/moecomm-emulated.lock
cluster=$here/scripts/emulated-cluster
graph=$here/examples/deepseek-v3.mlir
layers="ffn:ffn_layer identity:training_step"

die() { printf 'emulated-overlap: %s\n' "$*" >&2; exit 2; }

# Everything on the cluster: NODES RPN RATE OUT ITERATIONS CHUNKS BUILD
# (the routings are OUT/<layer>.routing.json). Runs as `$0 __measure ...`
# under the lock, so that the lock is held from `up` to `down` and the trap
# takes the cluster down on any exit.
measure() {
  local nodes=$1 rpn=$2 rate=$3 dir=$4 iterations=$5 chunks=$6 build=$7
  trap '"$cluster" down' EXIT
  "$cluster" up "$nodes" "$rpn" --rate "$rate"
  local layer name entry c g
  for layer in $layers; do
    name=${layer%%:*} entry=${layer#*:}
    g=$graph
    [ "$name" = ffn ] && g=$dir/ffn.mlir
    for c in 1 "$chunks"; do
      echo "emulated-overlap: $name (@$entry) with --chunks $c"
      "$cluster" run --timeout 1800 -- "$build/bin/moecomm-run" "$g" \
        --entry "$entry" --routing "$dir/$name.routing.json" --backend mpi \
        --strategy hierarchical --chunks "$c" --iterations "$iterations" \
        --trace "$dir/$name-c$c.trace.json" --json "$dir/$name-c$c.json" \
        --quiet
    done
  done
}

if [ "${1:-}" = __measure ]; then
  shift
  measure "$@"
  exit 0
fi

while [ $# -gt 0 ]; do
  case $1 in
    --topology) topology=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --tokens) tokens=${2:?}; shift 2 ;;
    --experts) experts=${2:?}; shift 2 ;;
    --chunks) chunks=${2:?}; shift 2 ;;
    --iterations) iterations=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $topology =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || die "bad --topology '$topology' (expected NxG, e.g. 2x1)"
[ "${topology%x*}" -ge 2 ] || die "--topology '$topology' has one node: no inter-node link to measure"
[[ $rate =~ ^([0-9]+|[0-9]*\.[0-9]+)([kmg]bit|bit)$ ]] || die "bad --rate '$rate' (expected tc's syntax, e.g. 250mbit, 1gbit)"
for n in tokens experts iterations; do
  [[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "--$n must be a positive integer, got '${!n}'"
done
[[ $chunks =~ ^[1-9][0-9]*$ ]] && [ "$chunks" -ge 2 ] ||
  die "--chunks must be an integer >= 2 (it is compared with 1), got '$chunks'"
# The first iteration is the warm-up: a median needs at least one more.
[ "$iterations" -ge 2 ] || die "--iterations must be at least 2 (the first is the warm-up), got '$iterations'"
for tool in moecomm-run moecomm-opt; do
  [ -x "$build/bin/$tool" ] || die "$build/bin/$tool is missing; build first (cmake --build --preset default)"
done
nodes=${topology%x*} rpn=${topology#*x}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! "$build/bin/moecomm-opt" "$graph" -o "$out/ffn.mlir" \
  --moecomm-configure-collectives="ranks=$((nodes * rpn)) ranks-per-node=$rpn experts=$experts" \
  2>"$out/ffn.retarget.err"; then
  die "--experts $experts: $(head -n 1 "$out/ffn.retarget.err")"
fi
for layer in ffn:"$experts" identity:256; do
  "$build/bin/moecomm-run" --direct --config deepseek-v3 --experts "${layer#*:}" \
    --ranks $((nodes * rpn)) --ranks-per-node "$rpn" --tokens "$tokens" \
    --routing-dist uniform --seed 1 --save-routing "$out/${layer%%:*}.routing.json" --quiet
done
flock "$lock" "$0" __measure "$nodes" "$rpn" "$rate" "$out" "$iterations" \
  "$chunks" "$build"
/usr/bin/python3 "$here/bench/emulated-overlap-report.py" "$out" "$chunks" \
  "$topology" "$rate"
