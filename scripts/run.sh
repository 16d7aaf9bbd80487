#!/usr/bin/env bash
# The main job from a fresh clone: installs what the tool needs, builds the libraries and the
# tool only (not the tests, examples or Python module), then finds the overlapping pairs of the
# default scene with every method (CPU and GPU) and checks that they all agree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tool
bash scripts/build.sh --tool
./build/broadphase validate "$@"
