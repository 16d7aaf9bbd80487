#!/usr/bin/env bash
# Runs the engine benches of docs/bullet.md and docs/fcl.md from an existing build (scripts/
# build.sh; or BENCH_BIN, a folder holding bullet_world and fcl_collide) and writes one log per
# command into OUT_DIR, the command on its first line: Bullet's btDbvtBroadphase and FCL's
# DynamicAABBTreeCollisionManager against our methods at 10k and 100k bodies, a pile that
# settles (per-interval rows) and a static level; FCL's frames both right after setup (10 and
# 20 frames) and over longer runs (60 and 200), where FCL's refitted tree has decayed. With BENCH_GPU=1 gpu_lbvh runs too (a Vulkan
# device; on a remote NVIDIA machine, in the copy that scripts/remote_prepare.sh --engines made,
# source scripts/remote_env.sh first: it sets BENCH_BIN to the copied benches).
#
#   bash scripts/bench_engines.sh [OUT_DIR]     # default bench-logs/engines
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-logs/engines}
bin=${BENCH_BIN:-build/adapters}
for b in bullet_world fcl_collide; do
  [ -x "$bin/$b" ] || { echo "bench_engines: $bin/$b not built (bash scripts/build.sh)" >&2; exit 2; }
done
mkdir -p "$out"
gpu=""
[ -n "${BENCH_GPU:-}" ] && gpu=",gpu_lbvh"
failed=0
run() {  # run NAME COMMAND...: its log (the command first), and the rows
  local name=$1
  shift
  echo "== $name: $*"
  { echo "\$ $*"; timeout "${BENCH_TIMEOUT:-400}" "$@"; } >"$out/$name.txt" 2>&1 || failed=1
  tail -n +2 "$out/$name.txt" | tail -n 12
}
run bullet_pile_10k "$bin/bullet_world" 10000 60 "dbvt,dynamic_aabb_tree,kd_tree,sweep_and_prune$gpu"
run bullet_pile_100k "$bin/bullet_world" 100000 40 "dbvt,dynamic_aabb_tree,kd_tree$gpu"
run bullet_settle_10k "$bin/bullet_world" 10000 600 "dbvt,dynamic_aabb_tree" --world settle \
  --report-every 60
run bullet_level_10k "$bin/bullet_world" 10000 60 "dbvt,dynamic_aabb_tree,kd_tree$gpu" --world level
run bullet_level_100k "$bin/bullet_world" 100000 40 "dbvt,dynamic_aabb_tree$gpu" --world level
run fcl_10k "$bin/fcl_collide" 10000 "fcl_dynamic_tree,dynamic_aabb_tree,kd_tree$gpu" --frames 20
run fcl_100k "$bin/fcl_collide" 100000 "fcl_dynamic_tree,dynamic_aabb_tree,kd_tree$gpu" --frames 10
run fcl_10k_long "$bin/fcl_collide" 10000 "fcl_dynamic_tree,dynamic_aabb_tree" --frames 200
run fcl_100k_long "$bin/fcl_collide" 100000 "fcl_dynamic_tree,dynamic_aabb_tree" --frames 60
run fcl_100k_moving10 "$bin/fcl_collide" 100000 "fcl_dynamic_tree,dynamic_aabb_tree" --frames 10 \
  --moving 10
echo "logs in $out/"
exit "$failed"
