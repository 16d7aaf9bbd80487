#!/usr/bin/env bash
# Benchmarking on a remote NVIDIA machine, step 1 of 2, on this machine: build here, so that
# the remote machine needs no compiler, packages or network. Makes two folders to copy there
# beside scripts/ (docs/performance.md, "How to measure on a remote NVIDIA machine"):
#   .gl/      the Debian packages of the Vulkan loader, the Khronos validation layer and the GL
#             dispatch libraries NVIDIA's Vulkan driver loads through (without libglvnd0,
#             libglx0 and libegl1 the loader reports "Could not get 'vkCreateInstance' via
#             'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0"); with --engines also
#             Bullet's and FCL's runtime libraries;
#   .remote/  the tool (build/broadphase) and the GPU test binary, built by scripts/build.sh;
#             with --engines also the engine benches bullet_world and fcl_collide; with
#             BASELINE=REV the tool of an older commit (.remote/broadphase_base), which
#             scripts/remote_run.sh times beside the current one on the same device; with
#             --peers also the peers' benchmark (.remote/peers_bench, scripts/bench_peers.sh:
#             needs nvcc and the ignored .peers/lbvh), which remote_run.sh runs when present.
# Both folders are git-ignored. Then copy and run (step 2, scripts/remote_run.sh), e.g.:
#   rsync -a scripts .gl .remote HOST:broadphase/
#   ssh HOST 'cd broadphase && bash scripts/remote_run.sh --tests out' && rsync -a HOST:broadphase/out .
#
#   bash scripts/remote_prepare.sh [--engines] [--peers] [--no-build]   # --no-build: package build/ as it is
#   BASELINE=REV bash scripts/remote_prepare.sh               # REV: a commit to compare against
set -euo pipefail
cd "$(dirname "$0")/.."
engines=0
build=1
peers=0
for a in "$@"; do
  case "$a" in
    --engines) engines=1 ;;
    --peers) peers=1 ;;
    --no-build) build=0 ;;
    *) echo "remote_prepare: unknown option $a" >&2; exit 2 ;;
  esac
done
# Debian 12 (amd64) packages, fetched without installing them here.
packages=(libvulkan1 vulkan-validationlayers libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
[ "$engines" = 1 ] && packages+=(libbullet3.24 libfcl0.7 libccd2 liboctomap1.9)
missing=()
for p in "${packages[@]}"; do
  ls .gl/"${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  mkdir -p .gl /tmp/amd64/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  apt-get "${o[@]}" update
  (cd .gl && apt-get "${o[@]}" download "${missing[@]}")
fi
[ "$build" = 1 ] && bash scripts/build.sh
mkdir -p .remote
for f in build/broadphase build/tests/broadphase_gpu_tests; do
  [ -x "$f" ] || { echo "remote_prepare: $f not built (bash scripts/build.sh)" >&2; exit 2; }
  cp "$f" .remote/
done
if [ "$engines" = 1 ]; then
  for f in build/adapters/bullet_world build/adapters/fcl_collide; do
    [ -x "$f" ] || { echo "remote_prepare: $f not built (Bullet and FCL installed?)" >&2; exit 2; }
    cp "$f" .remote/
  done
fi
[ "$peers" = 1 ] && bash scripts/bench_peers.sh
if [ -z "${BASELINE:-}" ]; then
  rm -f .remote/broadphase_base .remote/broadphase_base.rev
else
  rev=$(git rev-parse --verify "$BASELINE^{commit}")
  if [ "$(cat .remote/broadphase_base.rev 2>/dev/null)" != "$rev" ] ||
    [ ! -x .remote/broadphase_base ]; then
    tree=$(mktemp -d)/base
    git worktree add --detach "$tree" "$rev" >/dev/null
    cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$tree/build" -j "$(nproc)" --target broadphase
    cp "$tree/build/broadphase" .remote/broadphase_base
    echo "$rev" >.remote/broadphase_base.rev
    git worktree remove --force "$tree"
  fi
fi
du -sh .gl .remote
echo "remote_prepare: ready; copy scripts/, .gl/ and .remote/ to the NVIDIA machine and run there"
echo "  bash scripts/remote_run.sh [--tests] OUT_DIR"
