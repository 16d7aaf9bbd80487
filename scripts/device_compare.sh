#!/usr/bin/env bash
# There, on a lent NVIDIA machine, in one device call carrying .gl and .devcarry: the GPU suite
# under validation (synchronization validation included), every kernel's cold first use, and
# the build, pairs, cull and moving-scene stages of .devcarry/broadphase beside an older build
# .devcarry/broadphase_prev (when present) in the same call, then 100M boxes. Logs come back
# as OUT_DIR/logs.tar.gz, a summary on the standard output. Run e of docs/performance.md
# (2026-11-27) is this script's output.
#
#   here:  bash scripts/device_prepare.sh; cp OLD_BUILD/broadphase .devcarry/broadphase_prev
#   there: bash scripts/device_compare.sh $OUT      (carry [".gl", ".devcarry"])
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?give an output folder (\$OUT)}
source scripts/device_env.sh
prev=.devcarry/broadphase_prev
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
r cull_exact build/broadphase bench --cull --scene uniform:1000000 --order exact --repeat 10
r frames_1m build/broadphase bench --frames 10 --scene uniform:1000000
[ -f "$prev" ] && r prev_frames_1m "$prev" bench --frames 10 --scene uniform:1000000
r pairs_100m build/broadphase bench --scene uniform:100000000 --repeat 2
tar -czf "$out/logs.tar.gz" -C "$out" logs
rm -rf "$logs"
