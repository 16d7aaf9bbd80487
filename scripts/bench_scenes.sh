#!/usr/bin/env bash
# Issue 9's table: every method on every standard scene at one size (default 100,000 boxes),
# each method's time against its own on `uniform`, in one run, from an existing build:
#   - CPU structures: `broadphase bench cpu` (build + self-pairs, one core; every method's
#     pairs compared with brute force's, exit 1 on a difference);
#   - gpu_lbvh: `broadphase bench` (GPU build + all pairs from timestamp queries, median of 3)
#     and `broadphase validate` against sweep_and_prune (itself checked against brute force
#     by the first step).
# Writes cpu.md, gpu_SCENE.txt, validate_SCENE.txt and ratios.md into OUT_DIR.
#
#   bash scripts/bench_scenes.sh [N] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
out=${2:-bench-logs/scenes}
tool=build/broadphase
[ -x "$tool" ] || { echo "bench_scenes: $tool not built (bash scripts/build.sh)" >&2; exit 2; }
mkdir -p "$out"
scenes=(uniform clustered xline yline mixed_sizes degenerate level multiscale)
"$tool" bench cpu --sizes "$n" --max-seconds 1000 --out-dir "$out" --table "$out/cpu.md"
for s in "${scenes[@]}"; do
  "$tool" bench --scene "$s:$n" --repeat 3 >"$out/gpu_$s.txt"
  "$tool" validate --scene "$s:$n" --methods gpu_lbvh --reference sweep_and_prune \
    >"$out/validate_$s.txt"
done
# Ratios to uniform: the CPU table's rows, then gpu_lbvh's "gpu total".
{
  header=$(sed -n 1p "$out/cpu.md")
  echo "$header gpu_lbvh |"
  echo "$(sed -n 2p "$out/cpu.md")---|"
  for s in "${scenes[@]}"; do
    gpu=$(awk '/gpu total/ {print $3}' "$out/gpu_$s.txt")
    gpu_uniform=$(awk '/gpu total/ {print $3}' "$out/gpu_uniform.txt")
    awk -F'|' -v s="$s" -v g="$gpu" -v gu="$gpu_uniform" '
      NR == 1 { next }
      $2 ~ /^ uniform / { for (k = 5; k < NF; ++k) u[k] = $k }
      $2 ~ ("^ " s " ") { row = $0 }
      END {
        split(row, f, "|")
        line = "|" f[2] "|" f[3] "|" f[4] "|"
        for (k = 5; k < length(f); ++k) {
          if (f[k] ~ /—/ || u[k] + 0 == 0) { line = line " — |"; continue }
          line = line sprintf(" %.4f (%.2fx) |", f[k], f[k] / u[k])
        }
        line = line sprintf(" %.1f ms (%.2fx) |", g, g / gu)
        print line
      }' "$out/cpu.md"
  done
} >"$out/ratios.md"
cat "$out/ratios.md"
