#!/usr/bin/env bash
# Sets up, builds and runs every test once (docs/testing.md):
# 1. scripts/sanitize.sh: the libraries, the tool and every test suite built with
#    AddressSanitizer and UndefinedBehaviorSanitizer (-O1, warnings as errors), and every ctest
#    entry of that build: the GPU suites on whatever Vulkan device is found (lavapipe on a
#    machine without a GPU) with the Khronos validation layer and its synchronization
#    validation on; then a bounded libFuzzer run of each parser and the adapters' concurrent
#    queries under ThreadSanitizer;
# 2. the Release build (scripts/build.sh --no-tests: -O2, warnings as errors) of the libraries,
#    the tool, the Python module and the examples, and the entries labelled `release`: the
#    Python module's tests, the consumer projects, the examples' tests, the docs' code blocks
#    and cli_pairs_agree.
#
#   bash scripts/test.sh            # both stages (CI: .ci/run)
#   bash scripts/test.sh --release  # every entry in the Release build instead, no sanitizers
#                                   # (quicker on a developer's machine; CI never does this)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${1:-}" = --release ]; then
  bash scripts/build.sh
  ctest --test-dir build --output-on-failure -j "$(nproc)"
  exit 0
fi
bash scripts/sanitize.sh
echo "test: Release stage in build"
bash scripts/build.sh --no-tests
ctest --test-dir build --output-on-failure -j "$(nproc)" -L release
