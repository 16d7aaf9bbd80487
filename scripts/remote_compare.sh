#!/usr/bin/env bash
# On a remote NVIDIA machine, in the copy made by scripts/remote_prepare.sh: a before / after
# of the current build against an older one on the same device. Runs the GPU suite under the
# validation layer (synchronization validation included), every kernel's cold first use, the
# build, pairs, cull and moving-scene stages of .remote/broadphase beside .remote/broadphase_prev
# (when present), then 100M boxes. The logs go into OUT_DIR/logs.tar.gz, a summary to the
# standard output.
#
#   here:  bash scripts/remote_prepare.sh; cp OLD_BUILD/broadphase .remote/broadphase_prev
#   there: bash scripts/remote_compare.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?give an output folder}
source scripts/remote_env.sh
prev=.remote/broadphase_prev
[ -f "$prev" ] && chmod +x "$prev"
logs=$out/logs
mkdir -p "$logs"
r() {  # r NAME COMMAND...: its log, and the lines of the stages that matter
  local name=$1
  shift
  echo "== $name: $*"
  timeout 120 "$@" >"$logs/$name.txt" 2>&1
  echo "rc $?"
  grep -E "hierarchy|all pairs|^  sort|pair sort|build total|gpu total|cull total|step\(\)|refit|PASSED|FAILED|ray cast|region queries|sum \(" "$logs/$name.txt" | head -14
}
r gpu_tests env BROADPHASE_VALIDATION=1 build/tests/broadphase_gpu_tests
r kernels build/broadphase devices --kernels
for m in 1000000 10000000; do
  r "pairs_$m" build/broadphase bench --scene "uniform:$m" --repeat 10
  [ -f "$prev" ] && r "prev_pairs_$m" "$prev" bench --scene "uniform:$m" --repeat 10
done
r cull_exact build/broadphase bench cull --scene uniform:1000000 --order exact --repeat 10
r frames_1m build/broadphase bench frames --frames 10 --scene uniform:1000000
[ -f "$prev" ] && r prev_frames_1m "$prev" bench --frames 10 --scene uniform:1000000
r pairs_100m build/broadphase bench --scene uniform:100000000 --repeat 2
tar -czf "$out/logs.tar.gz" -C "$out" logs
rm -rf "$logs"
