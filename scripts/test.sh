#!/usr/bin/env bash
# Runs every test on a fresh Debian 12 machine: installs the dependencies,
# builds the default preset and runs ctest (lit + FileCheck, GoogleTest,
# MPI runs, the installed-package consumer, docs freshness), then builds the
# runtime with ASan + UBSan (preset "sanitize") and runs its tests there.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh default
ctest --preset default -j2
scripts/build.sh sanitize
ctest --preset sanitize -j2
echo "test.sh: all tests passed"
