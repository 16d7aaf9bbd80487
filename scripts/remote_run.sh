#!/usr/bin/env bash
# Benchmarking on a remote NVIDIA machine, step 2 of 2, there: in the copy of scripts/, .gl/
# and .remote/ made by scripts/remote_prepare.sh, sets the machine up (scripts/remote_env.sh)
# and runs scripts/bench_gpu.sh --essential (with --tests the GPU test suite under the
# validation layer first; with --full every figure instead; --quick checks the scripts on small
# scenes, e.g. here on lavapipe), timing .remote/broadphase_base beside the current build when
# it was made. The summary goes to the standard output and OUT_DIR/summary.txt, the log of
# each command into one archive, OUT_DIR/bench-logs.tar.gz: copy OUT_DIR back and unpack the
# logs under docs/bench-logs/<date>-<device>-<run>/ (docs/bench-logs/README.md).
#
#   bash scripts/remote_run.sh [--tests] [--full] [--quick] OUT_DIR
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
[ -n "$out" ] || { echo "remote_run: give an output folder" >&2; exit 2; }
[ -x .remote/broadphase ] || { echo "remote_run: no .remote/broadphase (run scripts/remote_prepare.sh where you build, and copy .remote/ here)" >&2; exit 2; }
mkdir -p "$out"
source scripts/remote_env.sh
[ -x .remote/broadphase_base ] && export BENCH_BASELINE=.remote/broadphase_base
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
logs=$(mktemp -d)
bash scripts/bench_gpu.sh "${essential[@]}" "${args[@]}" "$logs" 2>&1 | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
tar -czf "$out/bench-logs.tar.gz" -C "$logs" .
exit "$status"
