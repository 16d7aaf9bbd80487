#!/usr/bin/env bash
# Benchmarking on a remote NVIDIA machine, step 2 of 2, there: in the copy of scripts/, .gl/
# and .remote/ made by scripts/remote_prepare.sh, sets the machine up (scripts/remote_env.sh)
# and runs scripts/bench_gpu.sh --essential (with --tests the GPU test suite under the
# validation layer first; with --full every figure instead; --quick checks the scripts on small
# scenes, e.g. here on lavapipe), timing .remote/broadphase_base beside the current build when
# it was made; then, when scripts/bench_peers.sh built .remote/peers_bench, the peers
# (ToruNiina/lbvh and CUB) on the same card at 1M and 10M boxes (peers.txt); with --engines
# (scripts/remote_prepare.sh --engines) the engine benches too (engines/, BENCH_GPU=1
# scripts/bench_engines.sh). The summary goes to the standard output and OUT_DIR/summary.txt,
# the log of each command into one archive, OUT_DIR/bench-logs.tar.gz: copy OUT_DIR back and
# unpack the logs under docs/bench-logs/<date>-<device>-<run>/ (docs/bench-logs/README.md).
#
#   bash scripts/remote_run.sh [--tests] [--full] [--quick] [--engines] OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
essential=(--essential)
args=()
out=""
engines=0
quick=0
for a in "$@"; do
  case "$a" in
    --tests) args+=("$a") ;;
    --quick) args+=("$a"); quick=1 ;;
    --engines) engines=1 ;;
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
if [ -x .remote/peers_bench ]; then
  # The peers on the same card, the same boxes (bench/peers/README.md); 10M without the check
  # of every pair against a CPU sweep.
  if [ "$quick" = 1 ]; then sizes=("20000 2"); else sizes=("1000000 10" "10000000 10 nocheck"); fi
  for s in "${sizes[@]}"; do
    echo "== peers: .remote/peers_bench $s"
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-120}" .remote/peers_bench $s || echo "   FAILED (exit $?)"
  done >"$logs/peers.txt" 2>&1
  tee -a "$out/summary.txt" <"$logs/peers.txt"
  grep -q "^   FAILED" "$logs/peers.txt" && status=1
else
  echo "remote_run: no .remote/peers_bench (scripts/bench_peers.sh builds it): no peers" |
    tee -a "$out/summary.txt"
fi
if [ "$engines" = 1 ]; then
  BENCH_GPU=1 bash scripts/bench_engines.sh "$logs/engines" 2>&1 | tee -a "$out/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
tar -czf "$out/bench-logs.tar.gz" -C "$logs" .
exit "$status"
