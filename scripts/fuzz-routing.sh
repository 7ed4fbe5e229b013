#!/usr/bin/env bash
# Fuzzes the moecomm-routing-v1 parser of moecomm-run and moecomm-bench
# (test/fuzz/fuzz_routing.cpp) with libFuzzer for a bounded time; not run by
# CI. Builds build-fuzz/ (the default preset with MOECOMM_BUILD_FUZZERS=ON:
# the parser's library instrumented, ASan + UBSan) and keeps the corpus in
# build-fuzz/fuzz/routing-corpus, so later runs go on from it. Crashes land
# in build-fuzz/fuzz/routing-artifacts/ (replay: build-fuzz/bin/fuzz_routing
# FILE). Needs clang-22's libFuzzer (Debian: libclang-rt-22-dev).
#
#   scripts/fuzz-routing.sh [SECONDS (default 300)] [libFuzzer flags...]
set -euo pipefail
root="$(cd -- "$(dirname -- "$0")/.." && pwd)"
seconds="${1:-300}"
shift || true
build="$root/build-fuzz"
cmake --preset default -B "$build" -DMOECOMM_BUILD_FUZZERS=ON \
  -DCMAKE_INSTALL_PREFIX="$build/install" >/dev/null
cmake --build "$build" --target fuzz_routing
corpus="$build/fuzz/routing-corpus"
artifacts="$build/fuzz/routing-artifacts"
mkdir -p "$corpus" "$artifacts"
# Seeds: the shipped routing files, the lit tests' good and bad ones and a
# few edge cases (test/fuzz/seeds/routing); new inputs go to $corpus only.
# -malloc_limit_mb: an input of at most 64 kB never needs a 256 MB block; a
# bigger one is a size taken from the input unchecked (a crash).
exec "$build/bin/fuzz_routing" -max_total_time="$seconds" -max_len=65536 \
  -timeout=10 -malloc_limit_mb=256 -artifact_prefix="$artifacts/" "$@" \
  "$corpus" \
  "$root/test/fuzz/seeds/routing" "$root/examples/routing" \
  "$root/test/lit/tools/moecomm-run/Inputs"
