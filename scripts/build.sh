#!/usr/bin/env bash
# Configures and builds broadphase (Release, compiler warnings as errors) into build/.
#
#   bash scripts/build.sh          # everything: libraries, tool, tests, examples, Python module
#   bash scripts/build.sh --tool   # the libraries and build/broadphase only (scripts/run.sh)
#
# Each way states its options, so that one after the other in the same build/ works: --tool
# turns the tests, examples and Python module off, the full build restores their defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --tool ]; then
  parts=(-DBROADPHASE_BUILD_TESTS=OFF -DBROADPHASE_BUILD_EXAMPLES=OFF -DBROADPHASE_BUILD_PYTHON=OFF)
  targets=(--target broadphase)
else
  parts=(-U BROADPHASE_BUILD_TESTS -U BROADPHASE_BUILD_EXAMPLES -U BROADPHASE_BUILD_PYTHON)
  targets=()
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBROADPHASE_WERROR=ON "${parts[@]}" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
