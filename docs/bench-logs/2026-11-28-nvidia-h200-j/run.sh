#!/usr/bin/env bash
# Run j (2026-11-28): as run i, with the hierarchy reading both key arrays through one binding
# (the refine word picks the first word and width once: no branch per key read), against the build of 75b3d1e (.devcarry/broadphase_base), on one lent NVIDIA machine:
#   bash docs/bench-logs/2026-11-28-nvidia-h200-j/run.sh $OUT   (carrying .gl and .devcarry)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source scripts/device_env.sh
out=$1
logs=$(mktemp -d)
run() {
  local name=$1
  shift
  echo "== $name: $*"
  timeout 100 "$@" >"$logs/$name.txt" 2>&1 || echo "   FAILED (exit $?)"
  grep -E "^  (scene bounds|codes|sort|hierarchy|all pairs|build total|cull|compact|order|emit|tree build)|^pairs|^adaptive|PASSED|FAILED" "$logs/$name.txt"
}
run gpu_tests env BROADPHASE_VALIDATION=1 GTEST_FILTER='LbvhTest.*:PipelineCache*:MovingScene*:BoundedTraversal*' \
  build/tests/broadphase_gpu_tests
for tool in build/broadphase .devcarry/broadphase_base; do
  tag=new
  [ "$tool" = build/broadphase ] || tag=base
  for s in uniform:1000000 uniform:10000000 level:1000000 level:10000000; do
    run "${tag}_${s/:/_}" "$tool" bench --scene "$s" --repeat 10
  done
  run "${tag}_cull_exact" "$tool" bench --cull --scene uniform:1000000 --order exact --repeat 10
done
# The split tree (lbvh_build_soa) of 100M boxes binds the key arrays the same way.
timeout 150 build/broadphase bench --scene uniform:100000000 --repeat 2 >"$logs/new_uniform_100m.txt" 2>&1
grep -E "^  (sort|hierarchy|all pairs|build total)|^pairs" "$logs/new_uniform_100m.txt"
tar -czf "$out/logs.tar.gz" -C "$logs" .
