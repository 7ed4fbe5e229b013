#!/usr/bin/env bash
# moecomm-bench and its peers measured on the emulated cluster
# (docs/emulated-cluster.md) over link rates and topologies, as root:
#
#   bench/emulated-sweep.sh [--topologies 2x2,4x2] [--rates 0.25gbit,...]
#                           [--tokens 512] [--iterations 3] [--out DIR]
#                           [--build DIR]
#
# Per topology NxG it writes one routing (moecomm-run --save-routing:
# DeepSeek-V3 shapes, uniform routing, seed 1, --tokens per rank), then per
# rate, holding `flock /run/moecomm-emulated.lock` from `up` to `down`:
# brings the cluster up at that rate, runs moecomm-bench --backend mpi
# --routing F --link-rate R (per_expert, flat, hierarchical; bf16 and fp8;
# MPI_Alltoallv of the per-expert rows in the same run) and the PyTorch peer
# (bench/peers/torch_dispatcher.py) on the same file, and takes the cluster
# down (also on failure or Ctrl-C). Finally bench/emulated-sweep-plot.py
# merges everything into DIR/sweep.csv and draws DIR/*.png with gnuplot.
# Raw outputs: DIR/NxG/deepseek-v3.json, DIR/NxG/RATE/{bench.json,bench.csv,
# bench.txt,peer.json}.
# Exit status: 0 done, 2 bad usage (one line), 77 no network namespaces
# here, otherwise the failing step's status.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
topologies=2x2
rates=0.25gbit,0.5gbit,1gbit,2gbit,4gbit
tokens=512
iterations=3
out=$here/build/emulated-sweep
build=$here/build
lock=/run/moecomm-emulated.lock
python=${PYTHON:-/usr/bin/python3} # Debian's, where python3-torch lives
cluster=$here/scripts/emulated-cluster

die() { printf 'emulated-sweep: %s\n' "$*" >&2; exit 2; }

# One (topology, rate) on the cluster: NODES RPN RATE ROUTING DIR ITERATIONS
# BUILD. Runs as `$0 __measure ...` under the lock (see below), so that the
# lock is held from `up` to `down` and the trap takes the cluster down on any
# exit of this process.
measure() {
  local nodes=$1 rpn=$2 rate=$3 routing=$4 dir=$5
  iterations=$6 build=$7
  # moecomm-bench measures a cell whose estimated memory fits this machine's
  # (its default bound, 4 GiB, would leave 4 x 2 at 512 tokens counted only).
  local memory_mib
  memory_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
  trap '"$cluster" down' EXIT
  "$cluster" up "$nodes" "$rpn" --rate "$rate"
  "$cluster" run --timeout 1800 -- "$build/bin/moecomm-bench" --backend mpi \
    --routing "$routing" --link-rate "$rate" \
    --strategies per_expert,flat,hierarchical --dtypes bf16,fp8 \
    --iterations "$iterations" --warmup 1 --measure-max-mib "$memory_mib" \
    --json "$dir/bench.json" --csv "$dir/bench.csv" > "$dir/bench.txt"
  local master
  master=$(awk 'NR == 1 {print $1}' /run/moecomm-emulated-cluster/hostfile)
  "$cluster" run --timeout 1800 -- "$python" "$here/bench/peers/torch_dispatcher.py" \
    --routing "$routing" --master-addr "$master" --port 29517 \
    --iterations "$iterations" --warmup 1 --json "$dir/peer.json" > /dev/null
}

if [ "${1:-}" = __measure ]; then
  shift
  measure "$@"
  exit 0
fi

while [ $# -gt 0 ]; do
  case $1 in
    --topologies) topologies=${2:?}; shift 2 ;;
    --rates) rates=${2:?}; shift 2 ;;
    --tokens) tokens=${2:?}; shift 2 ;;
    --iterations) iterations=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $tokens =~ ^[1-9][0-9]*$ ]] || die "--tokens must be a positive integer, got '$tokens'"
[[ $iterations =~ ^[1-9][0-9]*$ ]] || die "--iterations must be a positive integer, got '$iterations'"
IFS=, read -ra topo_list <<< "$topologies"
IFS=, read -ra rate_list <<< "$rates"
for t in "${topo_list[@]}"; do
  [[ $t =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || die "bad --topologies entry '$t' (expected NxG, e.g. 2x2)"
  [ "${t%x*}" -ge 2 ] || die "--topologies entry '$t' has one node: no inter-node link to measure"
done
for r in "${rate_list[@]}"; do
  [[ $r =~ ^([0-9]+|[0-9]*\.[0-9]+)([kmg]bit|bit)$ ]] || die "bad --rates entry '$r' (expected tc's syntax, e.g. 250mbit, 1gbit)"
done
for tool in moecomm-bench moecomm-run; do
  [ -x "$build/bin/$tool" ] || die "$build/bin/$tool is missing; build first (cmake --build --preset default)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

for t in "${topo_list[@]}"; do
  nodes=${t%x*} rpn=${t#*x}
  mkdir -p "$out/$t"
  routing=$out/$t/deepseek-v3.json # the file's stem names moecomm-bench's group
  "$build/bin/moecomm-run" --direct --config deepseek-v3 --ranks $((nodes * rpn)) \
    --ranks-per-node "$rpn" --tokens "$tokens" --routing-dist uniform --seed 1 \
    --save-routing "$routing" --quiet
  for r in "${rate_list[@]}"; do
    echo "emulated-sweep: $t at $r"
    mkdir -p "$out/$t/$r"
    flock "$lock" "$0" __measure "$nodes" "$rpn" "$r" "$routing" "$out/$t/$r" \
      "$iterations" "$build"
  done
done
"$python" "$here/bench/emulated-sweep-plot.py" "$out"
