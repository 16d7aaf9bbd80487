#!/usr/bin/env bash
# There, on a lent NVIDIA machine, in one device call carrying .gl and .devcarry (made here by
# scripts/device_prepare.sh): unpacks the Vulkan loader and layers, points the loader at
# NVIDIA's driver, puts the carried binaries where scripts/bench_gpu.sh looks, and runs its
# --essential figures (with --tests the GPU test suite under validation first; with --full every
# figure instead), timing .devcarry/broadphase_base too when it was built. The device tool
# brings back at most 8 files, so the per-command logs come back as one archive,
# OUT_DIR/bench-logs.tar.gz, beside the summary on the standard output.
#
#   bash scripts/device_run.sh [--tests] [--full] [--quick] OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
essential=(--essential)
args=()
out=""
for a in "$@"; do
  case "$a" in
    --tests | --quick) args+=("$a") ;;
    --full) essential=() ;;
    *) out="$a" ;;
  esac
done
[ -n "$out" ] || { echo "device_run: give an output folder (\$OUT)" >&2; exit 2; }
[ -x .devcarry/broadphase ] || { echo "device_run: no .devcarry/broadphase (run scripts/device_prepare.sh here, carry .devcarry)" >&2; exit 2; }
source scripts/device_env.sh
[ -x .devcarry/broadphase_base ] && export BENCH_BASELINE=.devcarry/broadphase_base
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
logs=$(mktemp -d)
bash scripts/bench_gpu.sh "${essential[@]}" "${args[@]}" "$logs" 2>&1 | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
tar -czf "$out/bench-logs.tar.gz" -C "$logs" .
exit "$status"
