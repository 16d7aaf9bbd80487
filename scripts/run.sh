#!/usr/bin/env bash
# The main job from a fresh clone: installs what the tool needs, builds the libraries and the
# tool only (not the tests, examples or Python module), then finds the overlapping pairs of the
# default scene with every method (CPU and GPU) and checks that they all agree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tool
bash scripts/build.sh --tool
echo "run.sh: built the tool alone in build/ (its tests, examples and Python module are off" \
  "there; bash scripts/build.sh builds them)" >&2
./build/broadphase validate "$@"
