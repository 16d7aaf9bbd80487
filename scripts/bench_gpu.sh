#!/usr/bin/env bash
# Runs every GPU benchmark of docs/performance.md on the Vulkan device found (the first
# discrete GPU, or BROADPHASE_DEVICE), from an existing build, and writes one log per command
# into OUT_DIR (default bench-logs/). With --tests it first runs the GPU test suite there
# (needs the Khronos validation layer on that machine). On a remote NVIDIA machine,
# scripts/remote_run.sh runs it in the copy that scripts/remote_prepare.sh made.
#
#   bash scripts/bench_gpu.sh [--tests] [--quick] [--essential] [OUT_DIR]
#
# --essential runs a short list, most wanted first, that fits a run of a few minutes: the
# figures of the current-figures table that the latest changes move (the cull's exact order,
# ray casts and region queries, the build and all pairs, a moving scene's frames, the adaptive
# codes' refinement on the adversarial scenes with the sort alone beside it, `--no-refine`, and
# a process's wall on a scene that needs the refinement against uniform), and with
# BENCH_BASELINE the same on the older build, for a before / after on the device.
# --quick runs the same commands on small scenes (a check of the script itself, e.g. on
# lavapipe). Sizes: 1M and 10M boxes, 1M rays, as the issues and the targets of
# docs/performance.md ask. BENCH_BASELINE=PATH (an older build's broadphase binary) also times
# the build, pairs and cull stages with it, on the same device in the same run, for a before /
# after of a change that has no switch (docs/performance.md, "The sort reshaped for GPUs").
set -uo pipefail
cd "$(dirname "$0")/.."
tests=0
quick=0
essential=0
out=bench-logs
for a in "$@"; do
  case "$a" in
    --tests) tests=1 ;;
    --quick) quick=1 ;;
    --essential) essential=1 ;;
    *) out="$a" ;;
  esac
done
tool=build/broadphase
[ -x "$tool" ] || { echo "bench_gpu: $tool not built (bash scripts/build.sh)" >&2; exit 2; }
mkdir -p "$out"
if [ "$quick" = 1 ]; then
  m1=uniform:20000; m10=uniform:50000; m100=uniform:100000; rays=20000; repeat=2; frames=3
else
  m1=uniform:1000000; m10=uniform:10000000; m100=uniform:100000000; rays=1000000; repeat=10
  frames=10
fi

failed=0
# Each command is stopped after BENCH_TIMEOUT seconds (default 120), so that one hang (a
# driver that never signals a fence, say) costs minutes, not the whole run.
run() {  # run NAME COMMAND...: logs to $out/NAME.txt, keeps going on failure
  local name=$1
  shift
  echo "== $name: $*"
  if timeout "${BENCH_TIMEOUT:-120}" "$@" >"$out/$name.txt" 2>&1; then
    tail -n 25 "$out/$name.txt"
  else
    echo "   FAILED (exit $?), see $out/$name.txt"
    tail -n 5 "$out/$name.txt"
    failed=1
  fi
}

run devices "$tool" devices
if [ "$tests" = 1 ]; then
  run gpu_tests env BROADPHASE_VALIDATION=1 build/tests/broadphase_gpu_tests
fi
if [ "$essential" = 1 ]; then
  # Most wanted first:
  # 1. the cull's exact order (the order sort of the packed 64-bit keys alone) and the
  #    approximate one (the target is a cull with exact order in 0.2 ms at 1M);
  run cull_exact_1m "$tool" bench cull --scene "$m1" --order exact --repeat "$repeat"
  run cull_approx_1m "$tool" bench cull --scene "$m1" --order approx --repeat "$repeat"
  # 2. region queries and ray casts (their first round at 8 times the device's budget, round 0
  #    alone recorded), against first rounds of 64 and 256 (--query-budget);
  run rays_1m "$tool" bench rays --rays "$rays" --scene "$m1"
  run rays_10m "$tool" bench rays --rays "$rays" --scene "$m10"
  for b in 64 256; do
    run "rays_1m_query_budget_$b" "$tool" bench rays --rays "$rays" --scene "$m1" --query-budget "$b"
  done
  for s in clustered level; do
    run "rays_1m_$s" "$tool" bench rays --rays "$rays" --scene "${m1/uniform/$s}"
  done
  # 3. the build and all pairs (the refinement's steps recorded only when a scene needs them:
  #    level does, uniform does not);
  run pairs_1m "$tool" bench --scene "$m1" --repeat "$repeat"
  run pairs_10m "$tool" bench --scene "$m10" --repeat "$repeat"
  run pairs_1m_level "$tool" bench --scene "${m1/uniform/level}" --repeat "$repeat"
  #    clustered at 10M (two runs of 8 equal codes, under kRefineRun: not refined);
  run pairs_10m_clustered "$tool" bench --scene "${m10/uniform/clustered}" --repeat "$repeat"
  # 4. a moving scene's host step (its pairs pass in round 0 alone while no frame queues more);
  run frames_1m "$tool" bench frames --frames "$frames" --scene "$m1"
  run frames_10m "$tool" bench frames --frames "$frames" --scene "$m10"
  # 5. the adaptive codes (issue 45 item 4): the scenes whose codes are refined, at 1M and 10M
  #    (the second sort of run_start << 30 | second keys: its passes in the sort stage), the
  #    sort without the refinement's check (`--no-refine`, uniform), and whole processes of
  #    `pairs` (every cache warm after the first) on level, degenerate and a scene of boxes at
  #    rest on a floor (scripts/fallen_scene.sh) against uniform, 3 each.
  for s in level degenerate multiscale; do
    [ "$s" = level ] || run "pairs_1m_$s" "$tool" bench --scene "${m1/uniform/$s}" --repeat "$repeat"
    run "pairs_10m_$s" "$tool" bench --scene "${m10/uniform/$s}" --repeat "$repeat"
  done
  run pairs_1m_no_refine "$tool" bench --scene "$m1" --repeat "$repeat" --no-refine
  run pairs_10m_no_refine "$tool" bench --scene "$m10" --repeat "$repeat" --no-refine
  fallen=$(mktemp)
  bash scripts/fallen_scene.sh "${m1#uniform:}" "$fallen"
  for s in "$m1" "${m1/uniform/level}" "${m1/uniform/degenerate}" "$fallen"; do
    name=process_pairs_$(basename "${s/:/_}")
    [ "$s" = "$fallen" ] && name=process_pairs_fallen
    run "$name" bash -c 'TIMEFORMAT="%R s wall, %U s user"; for k in 1 2 3; do
      time "$1" pairs --method gpu_lbvh --scene "$2" >/dev/null; done' - "$tool" "$s"
  done
  rm -f "$fallen"
  # 6. with BENCH_BASELINE (an older build), the same on the old code (in the spellings before
  # `bench cull|frames|rays`, which both read).
  if [ -n "${BENCH_BASELINE:-}" ]; then
    run baseline_cull_exact_1m "$BENCH_BASELINE" bench --cull --scene "$m1" --order exact \
      --repeat "$repeat"
    run baseline_rays_1m "$BENCH_BASELINE" bench --rays "$rays" --scene "$m1"
    run baseline_rays_10m "$BENCH_BASELINE" bench --rays "$rays" --scene "$m10"
    run baseline_rays_1m_clustered "$BENCH_BASELINE" bench --rays "$rays" \
      --scene "${m1/uniform/clustered}"
    run baseline_frames_1m "$BENCH_BASELINE" bench --frames "$frames" --scene "$m1"
    run baseline_pairs_1m "$BENCH_BASELINE" bench --scene "$m1" --repeat "$repeat"
    run baseline_pairs_10m "$BENCH_BASELINE" bench --scene "$m10" --repeat "$repeat"
    run baseline_pairs_10m_clustered "$BENCH_BASELINE" bench --scene "${m10/uniform/clustered}" \
      --repeat "$repeat"
  fi
  echo "logs in $out/"
  exit "$failed"
fi
run pairs_1m "$tool" bench --scene "$m1" --repeat "$repeat"
run pairs_10m "$tool" bench --scene "$m10" --repeat "$repeat"
# The onesweep look-back reading 1 tile per round against the default window (8 tiles):
# BROADPHASE_SORT_WINDOW (DeviceInfo::sort_window); and the tiles ranked in shared memory
# against subgroup ballots (BROADPHASE_SORT_RANK, DeviceInfo::sort_subgroup_rank).
for rank in shared subgroup; do
  run "pairs_1m_rank_$rank" env BROADPHASE_SORT_RANK=$rank "$tool" bench --scene "$m1" \
    --repeat "$repeat" --sort-path onesweep
done
for w in 1 8; do
  run "pairs_1m_window$w" env BROADPHASE_SORT_WINDOW=$w "$tool" bench --scene "$m1" \
    --repeat "$repeat" --sort-path onesweep
  run "pairs_10m_window$w" env BROADPHASE_SORT_WINDOW=$w "$tool" bench --scene "$m10" \
    --repeat "$repeat" --sort-path onesweep
done
if [ -n "${BENCH_BASELINE:-}" ]; then
  run baseline_pairs_1m "$BENCH_BASELINE" bench --scene "$m1" --repeat "$repeat"
  run baseline_pairs_10m "$BENCH_BASELINE" bench --scene "$m10" --repeat "$repeat"
  run baseline_cull_exact "$BENCH_BASELINE" bench --cull --scene "$m1" --order exact \
    --repeat "$repeat"
fi
run pairs_1m_json "$tool" bench --scene "$m1" --repeat "$repeat" --json
run pairs_10m_json "$tool" bench --scene "$m10" --repeat "$repeat" --json
# 100M boxes (issue 15 item 6): the tree's node arrays split over several descriptors
# (DeviceInfo::tree_parts; about 35 GB of device memory with the pairs).
run pairs_100m "$tool" bench --scene "$m100" --repeat 3
# The adversarial scenes: a box over half the scene (level), big boxes (degenerate), clusters
# far apart (multiscale); the traversal budget decides the first two (docs/performance.md).
for s in level degenerate multiscale; do
  run "pairs_1m_$s" "$tool" bench --scene "${m1/uniform/$s}" --repeat "$repeat"
done
run pairs_1m_hilbert "$tool" bench --scene "$m1" --repeat "$repeat" --code hilbert30
run pairs_1m_atomic "$tool" bench --scene "$m1" --repeat "$repeat" --pair-append atomic
run pairs_1m_subgroup "$tool" bench --scene "$m1" --repeat "$repeat" --pair-append subgroup
run pairs_1m_stack4 "$tool" bench --scene "$m1" --repeat "$repeat" --pair-stack 4
run pairs_1m_stack8 "$tool" bench --scene "$m1" --repeat "$repeat" --pair-stack 8
# Both radix sort paths, forced (SortPath): unrefined (uniform) and refined (level: the 64-bit
# second sort) codes, so that the sort stage's ms compare on the same device.
for path in onesweep reduce_then_scan; do
  run "pairs_1m_sort_$path" "$tool" bench --scene "$m1" --repeat "$repeat" --sort-path "$path"
  run "pairs_1m_level_sort_$path" "$tool" bench --scene "${m1/uniform/level}" --repeat "$repeat" \
    --sort-path "$path"
  run "cull_exact_sort_$path" "$tool" bench cull --scene "$m1" --order exact \
    --repeat "$repeat" --sort-path "$path"
done
run cull_exact "$tool" bench cull --scene "$m1" --order exact --repeat "$repeat"
run cull_approx "$tool" bench cull --scene "$m1" --order approx --repeat "$repeat"
# Issue 11's cull figures: 10M instances, four views in one traversal, and occlusion against
# the built-in wall image (512 x 512, a wall over the middle half at the median visible depth).
run cull_10m_exact "$tool" bench cull --scene "$m10" --order exact --repeat "$repeat"
run cull_1m_views4 "$tool" bench cull --scene "$m1" --views 4 --repeat "$repeat"
run cull_10m_views4 "$tool" bench cull --scene "$m10" --views 4 --repeat "$repeat"
for order in exact approx; do
  run "cull_1m_occlusion_$order" "$tool" bench cull --scene "$m1" --order "$order" \
    --occlusion walls --repeat "$repeat"
  run "cull_10m_occlusion_$order" "$tool" bench cull --scene "$m10" --order "$order" \
    --occlusion walls --repeat "$repeat"
done
run frames_1m "$tool" bench frames --frames "$frames" --scene "$m1" --back-to-back
run frames_1m_rebuild "$tool" bench frames --frames "$frames" --scene "$m1" --policy rebuild
run frames_10m "$tool" bench frames --frames "$frames" --scene "$m10" --back-to-back
run frames_1m_churn "$tool" bench frames --frames "$((2 * frames))" --scene "$m1" --churn 1
run rays_1m "$tool" bench rays --rays "$rays" --scene "$m1" --repeat "$repeat"
# The instruments as JSON (stages with dispatches, bytes, ms, bandwidth fraction).
run cull_1m_exact_json "$tool" bench cull --scene "$m1" --order exact --repeat "$repeat" --json
run rays_1m_json "$tool" bench rays --rays "$rays" --scene "$m1" --repeat "$repeat" --json
run frames_1m_json "$tool" bench frames --frames "$frames" --scene "$m1" --json
echo "logs in $out/"
exit "$failed"
