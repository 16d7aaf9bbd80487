#!/usr/bin/env bash
# Configures and builds broadphase (Release, compiler warnings as errors) into build/.
#
#   bash scripts/build.sh             # everything: libraries, tool, tests, examples, Python module
#   bash scripts/build.sh --tool      # the libraries and build/broadphase only (scripts/run.sh)
#   bash scripts/build.sh --no-tests  # the libraries, the tool, the Python module and the engine
#                                     # adapters, with the tests configured: the Release stage of
#                                     # scripts/test.sh, whose tests build what they use themselves
#
# Each way states its options, so that one after the other in the same build/ works: --tool
# turns the tests, examples and Python module off, the others restore their defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=(-U BROADPHASE_BUILD_TESTS -U BROADPHASE_BUILD_EXAMPLES -U BROADPHASE_BUILD_PYTHON)
targets=()
case "${1:-}" in
  --tool)
    parts=(-DBROADPHASE_BUILD_TESTS=OFF -DBROADPHASE_BUILD_EXAMPLES=OFF
           -DBROADPHASE_BUILD_PYTHON=OFF)
    targets=(--target broadphase)
    ;;
  --no-tests)
    targets=(--target broadphase)
    ;;
  "") ;;
  *) echo "build.sh: unknown option $1 (--tool, --no-tests)" >&2; exit 2 ;;
esac
# A unity build (CMake's batches of 8 sources): about half the compile time from scratch. For many small rebuilds of one file, a build folder of your own
# with -DCMAKE_UNITY_BUILD=OFF recompiles that file alone.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBROADPHASE_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
  "${parts[@]}" >/dev/null
# (the target list read whole first: grep -q would end the pipe early, a failure under pipefail)
if [ "${1:-}" = --no-tests ]; then
  listed=$(cmake --build build --target help)
  # what the Release stage's tests use ready-made: the Python module, the engine adapters
  # and the MPI component that consumer_package installs, the examples with their tests (the
  # docs' blocks run the examples too) and the MPI suite
  for t in broadphase_python broadphase_bullet broadphase_fcl broadphase_renderer \
           broadphase_renderer_tests broadphase_simulation broadphase_simulation_tests \
           broadphase_bullet_example broadphase_fcl_example broadphase_mpi broadphase_mpi_tests \
           broadphase_mpi_example; do
    if grep -q " $t\$" <<<"$listed"; then targets+=("$t"); fi
  done
fi
cmake --build build -j "$(nproc)" "${targets[@]}"
