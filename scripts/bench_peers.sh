#!/usr/bin/env bash
# Builds the peer benchmark bench/peers/peers_bench.cu (ToruNiina/lbvh and CUB's
# DeviceRadixSort, see bench/peers/README.md) with nvcc into .remote/peers_bench, for an
# NVIDIA H200 (sm_90 SASS plus compute_90 PTX, static cudart). Needs the CUDA toolkit (nvcc,
# its CCCL headers) but no GPU. The lbvh source is not part of this repository: it is read
# from the git-ignored folder .peers/lbvh (a `git archive` of github.com/ToruNiina/lbvh),
# whose commit is in .peers/lbvh.rev.
#
#   bash scripts/bench_peers.sh            # here, beside scripts/remote_prepare.sh; then, on the
#   .remote/peers_bench 1000000 10        # remote NVIDIA machine, in the copy of .remote/
#
# NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc) selects the compiler. The C++
# runtime is linked statically too (-static-libstdc++), so the binary needs only glibc and
# the NVIDIA driver's libcuda on the remote NVIDIA machine.
#
# The lbvh commit of 2020 no longer compiles against CUDA 13's CCCL 3.0 as it is, so this
# script patches the copy in .peers/lbvh (never anything in the repository), idempotently:
#   1. lbvh/bvh.cuh calls thrust::unique_copy without including <thrust/unique.h>, which
#      older Thrust pulled in through <thrust/sort.h>: the include is added.
#   2. CCCL 3.0 rejects an extended __device__ lambda whose return type host code must
#      deduce (thrust::reduce and thrust::transform do): the three such lambdas in
#      construct() get trailing return types (-> aabb_type, -> unsigned long long int,
#      -> node_type). Their bodies are unchanged, so what the library computes is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

peer=.peers/lbvh
if [ ! -f "$peer/lbvh.cuh" ] || [ ! -f "$peer/lbvh/bvh.cuh" ]; then
  echo "bench_peers: $peer is missing (or has no lbvh.cuh / lbvh/bvh.cuh)." >&2
  echo "  Export github.com/ToruNiina/lbvh there, e.g.:" >&2
  echo "    mkdir -p $peer && git --git-dir=<lbvh clone>/.git archive HEAD | tar -x -C $peer" >&2
  echo "    git --git-dir=<lbvh clone>/.git rev-parse HEAD > .peers/lbvh.rev" >&2
  exit 2
fi
rev=unknown
[ -f .peers/lbvh.rev ] && rev=$(tr -d ' \n' < .peers/lbvh.rev)

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc; else nvcc=/usr/local/cuda/bin/nvcc; fi
fi
[ -x "$(command -v "$nvcc")" ] || { echo "bench_peers: nvcc not found ($nvcc)" >&2; exit 2; }

# --- compatibility patches of the lbvh copy (see the header comment) ---------------------
bvh=$peer/lbvh/bvh.cuh
grep -q '#include <thrust/unique.h>' "$bvh" ||
  sed -i 's|^#include <thrust/sort.h>$|#include <thrust/sort.h>\n#include <thrust/unique.h>|' "$bvh"
sed -i \
  -e 's|^\(\s*\[\] __device__ (const aabb_type& lhs, const aabb_type& rhs)\) {$|\1 -> aabb_type {|' \
  -e 's|^\(\s*\[\] __device__ (const unsigned int m, const unsigned int idx)\)$|\1 -> unsigned long long int|' \
  -e 's|^\(\s*\[\] __device__ (const index_type idx)\)$|\1 -> node_type|' \
  "$bvh"
# Check that every patch is in place (a different lbvh commit may need other fixes).
for want in '#include <thrust/unique.h>' \
            'const aabb_type& rhs) -> aabb_type {' \
            'const unsigned int idx) -> unsigned long long int' \
            '(const index_type idx) -> node_type'; do
  grep -qF -- "$want" "$bvh" || { echo "bench_peers: patching $bvh failed at: $want" >&2; exit 2; }
done

# --- build --------------------------------------------------------------------------------
mkdir -p .remote
out=.remote/peers_bench
echo "bench_peers: building $out (lbvh $rev) with $("$nvcc" --version | grep -o 'release [0-9.]*' || echo 'nvcc ?')"
"$nvcc" -std=c++20 -O3 --extended-lambda \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  --cudart static \
  -Xcompiler -Wno-deprecated-declarations \
  -Xcompiler -static-libstdc++ -Xcompiler -static-libgcc \
  -isystem "$peer" \
  -DPEERS_LBVH_REV="\"$rev\"" \
  bench/peers/peers_bench.cu -o "$out"
ls -l "$out"
