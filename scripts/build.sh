#!/usr/bin/env bash
# Installs the dependencies (if missing), configures with the given CMake preset
# (default: "default") and builds. Usage: scripts/build.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
