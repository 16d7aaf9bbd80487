#!/usr/bin/env bash
# Sets up, builds and runs every test (GPU tests run on whatever Vulkan device is found:
# lavapipe on a machine without a GPU), with the Khronos validation layer on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
