#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz (CMake preset "fuzz", build-fuzz/)
# and runs each for a bounded time on a seed corpus made from the project's
# own inputs. Not part of CI (a fuzz run finds new inputs, so it is no
# regression test); every finding becomes a unit or lit test when fixed.
#
# Usage: scripts/fuzz.sh [seconds per target, default 300] [target...]
# Output: build-fuzz/fuzz/<target>/{corpus,seeds,findings,log.txt,triage.txt}; the last
# lines print executions, coverage and findings per target. Exit status 1
# when any target left a finding (crash-*, leak-*, timeout-*, oom-*).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
shift || true
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: seconds must be a number, got '$seconds'" >&2; exit 2;; esac

scripts/build.sh fuzz
bin=build-fuzz/bin
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$bin"/fuzz_*; do [ -x "$t" ] && targets+=("$(basename "$t")"); done
fi

# seeds TARGET DIR: the project's own inputs for TARGET, one file each.
seeds() {
  python3 - "$1" "$2" <<'PY'
import glob, os, sys
target, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
def put(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
if target == "fuzz_opt":
    # First byte: which pipeline of fuzz_opt.cpp's kPipelines (taken modulo
    # its length, so 0..n-1 name each once); then one module. n is counted
    # from the source: an entry's last line ends with '",'.
    block = open("test/fuzz/fuzz_opt.cpp").read().split("kPipelines[] = {", 1)[1].split("};", 1)[0]
    npipelines = sum(1 for line in block.splitlines() if line.rstrip().endswith('",'))
    files = sorted(glob.glob("examples/*.mlir") + glob.glob("test/lit/**/*.mlir", recursive=True))
    for i, path in enumerate(files):
        text = open(path, "rb").read()
        for j, part in enumerate(text.split(b"// -----")):
            for pipeline in range(npipelines):
                put(f"{i}-{j}-{pipeline}", bytes([pipeline]) + part)
else:
    # Kept seeds (test/fuzz/seeds/<target without fuzz_>: regressions and
    # edge cases), plus the routing files the project ships and tests.
    files = sorted(glob.glob(f"test/fuzz/seeds/{target[len('fuzz_'):]}/*"))
    if target == "fuzz_routing":
        files += sorted(glob.glob("examples/routing/*.json") +
                        glob.glob("test/lit/**/*.json", recursive=True))
    for i, path in enumerate(files):
        put(f"{i}", open(path, "rb").read())
PY
}

status=0
summary=()
for t in "${targets[@]}"; do
  dir=build-fuzz/fuzz/$t
  mkdir -p "$dir/corpus" "$dir/findings"
  rm -rf "$dir/seeds"
  seeds "$t" "$dir/seeds"
  echo "fuzz.sh: $t for ${seconds}s ($(ls "$dir/seeds" | wc -l) seeds)"
  # -fork=1 with -ignore_*: a finding is saved and fuzzing goes on, so one
  # run reports every kind it meets. -timeout: one input may take at most
  # 30 s; the outer timeout bounds the run even if libFuzzer itself stalls.
  # Per target: fuzz_routing's inputs stay small (64 kB), so a block of over
  # 256 MB is a size taken from the input unchecked (a finding).
  extra=()
  case "$t" in
    fuzz_routing) extra=(-max_len=65536 -malloc_limit_mb=256) ;;
  esac
  rc=0
  ASAN_OPTIONS=detect_leaks=1 timeout --kill-after=30 $((seconds + 120)) \
    "$bin/$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 "${extra[@]}" \
    -artifact_prefix="$dir/findings/" \
    "$dir/corpus" "$dir/seeds" >"$dir/log.txt" 2>&1 || rc=$?
  # Fork mode's progress lines: "#RUNS: cov: EDGES ft: ... corp: ...".
  last=$(grep -E '^#[0-9]+: cov: [0-9]+' "$dir/log.txt" | tail -1 || true)
  runs=$(echo "$last" | sed -E 's/^#([0-9]+):.*/\1/')
  cov=$(echo "$last" | sed -E 's/.* cov: ([0-9]+).*/\1/')
  found=$(find "$dir/findings" -type f | wc -l)
  summary+=("$t: exit $rc, $runs executions, coverage $cov edges, $found findings in $dir/findings")
  # Triage: each finding re-run alone, grouped by its first report line
  # (a target's own message, or the sanitizer's SUMMARY) and the first
  # frame in moecomm's sources.
  for f in "$dir"/findings/*; do
    [ -f "$f" ] || continue
    out=$("$bin/$t" "$f" 2>&1 || true)
    what=$(echo "$out" | grep -m1 -E "^$t: |SUMMARY: |ERROR: " | cut -c1-160 || true)
    where=$(echo "$out" | grep -m1 -E ' in .* /[^ ]*/(dialect|passes|runtime|tools)/' | sed -E 's/.* in ([^ ]*) .*\/((dialect|passes|runtime|tools)\/[^ ]*)/\1 \2/' | cut -c1-160 || true)
    echo "$what | $where"
  done | sort | uniq -c | sort -rn >"$dir/triage.txt"
  while read -r line; do summary+=("  $line"); done <"$dir/triage.txt"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then status=1; fi
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
exit $status
