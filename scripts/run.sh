#!/usr/bin/env bash
# The main job from a fresh clone: set up, build, then find the overlapping pairs of the
# default scene with every method (CPU and GPU) and check that they all agree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/broadphase validate "$@"
