#!/usr/bin/env bash
# moecomm's main job on a fresh Debian 12 machine: installs the dependencies,
# builds, and runs the DeepSeek-V3 MoE layer's training step (forward
# dispatch -> experts -> combine, then the backward communication on the same
# layout) compiled from examples/deepseek-v3.mlir by moecomm-pipeline, on 16
# ranks as 2 nodes x 8 (threads backend), with DeepSeek-V3's node-limited
# routing (top-4 of 8 expert groups). It runs once per strategy (and once with
# an FP8 wire), verifies every result against the single-process oracle and
# prints the inter-node bytes of hierarchical vs flat vs per_expert.
#
# MOECOMM_MAIN_TOKENS sets the tokens per rank (default 256: the four runs
# take about 17-25 s on 2 cores once built). The same run under MPI:
#   mpirun -np 16 --oversubscribe build/bin/moecomm-run examples/deepseek-v3.mlir \
#     --backend mpi --entry training_step --config deepseek-v3 --ranks-per-node 8 \
#     --routing-dist node-limited:4 --tokens 64 --strategy hierarchical
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh default

tokens="${MOECOMM_MAIN_TOKENS:-256}"
out=build/main-job
rm -rf "$out" && mkdir -p "$out"
run() { # strategy wire
  echo
  echo "=== DeepSeek-V3 training step, 16 ranks = 2 nodes x 8, strategy $1, wire $2 ==="
  build/bin/moecomm-run examples/deepseek-v3.mlir --entry training_step \
    --config deepseek-v3 --ranks 16 --ranks-per-node 8 \
    --routing-dist node-limited:4 --tokens "$tokens" --seed 7 \
    --strategy "$1" --wire-dtype "$2" --json "$out/$1-$2.json"
}
run hierarchical bf16
run flat bf16
run per_expert bf16
run hierarchical fp8

/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
runs = [("hierarchical", "bf16"), ("flat", "bf16"), ("per_expert", "bf16"), ("hierarchical", "fp8")]
docs = {r: json.load(open(os.path.join(out, f"{r[0]}-{r[1]}.json"))) for r in runs}
base = docs[("per_expert", "bf16")]
def inter(d):
    b = d["bytes_by_direction"]
    return b["dispatch"]["bytes"]["inter_node"] + b["combine"]["bytes"]["inter_node"]
def bound(d):
    return d["inter_node_lower_bound_bytes"] + d["combine_inter_node_lower_bound_bytes"]
print("\nSummary: inter-node bytes of one training step (forward + backward,")
print("dispatch + combine), summed over 16 ranks; exact counts from the runtime,")
print("in MB = 10^6 bytes")
print(f"{'strategy':<13}{'wire':<6}{'inter-node MB':>15}{'vs per_expert':>15}{'lower bound MB':>16}{'verified':>10}")
ok = True
for r in runs:
    d = docs[r]
    ok &= d["verified"]
    print(f"{r[0]:<13}{r[1]:<6}{inter(d)/1e6:>15.1f}{inter(d)/inter(base):>15.3f}{bound(d)/1e6:>16.1f}{'yes' if d['verified'] else 'NO':>10}")
print("(per run reports above; JSON in", out + ")")
sys.exit(0 if ok else 1)
PY
