#!/usr/bin/env bash
# Here, before a session's call to a lent NVIDIA machine (docs/performance.md, "How to measure
# on a lent machine"): fetches the Vulkan loader, the Khronos validation layer and the GL
# dispatch libraries NVIDIA's Vulkan driver loads through into .gl/, builds (scripts/build.sh)
# and copies the tool and the GPU test binary into .devcarry/; with BASELINE=REV (a commit) it
# also builds that commit's tool into .devcarry/broadphase_base, which scripts/device_run.sh
# times beside the current one. Both folders are ignored (.git/info/exclude) and travel with
# the call's `carry`.
#
#   BASELINE=91f20f2 bash scripts/device_prepare.sh   # 91f20f2: the last unrolled climb
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)
for d in /.gl/ /.devcarry/; do
  grep -qxF "$d" "$exclude" 2>/dev/null || echo "$d" >>"$exclude"
done
if ! ls .gl/libvulkan1_*.deb .gl/vulkan-validationlayers_*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  apt-get "${o[@]}" update
  (cd .gl && apt-get "${o[@]}" download libvulkan1 vulkan-validationlayers libegl1 libglvnd0 \
    libopengl0 libgl1 libglx0 libgles2)
fi
bash scripts/build.sh
mkdir -p .devcarry
cp build/broadphase .devcarry/broadphase
cp build/tests/broadphase_gpu_tests .devcarry/broadphase_gpu_tests
if [ -z "${BASELINE:-}" ]; then
  rm -f .devcarry/broadphase_base .devcarry/broadphase_base.rev
else
  rev=$(git rev-parse --verify "$BASELINE^{commit}")
  if [ "$(cat .devcarry/broadphase_base.rev 2>/dev/null)" != "$rev" ] ||
    [ ! -x .devcarry/broadphase_base ]; then
    tree=$(mktemp -d)/base
    git worktree add --detach "$tree" "$rev" >/dev/null
    cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$tree/build" -j "$(nproc)" --target broadphase
    cp "$tree/build/broadphase" .devcarry/broadphase_base
    echo "$rev" >.devcarry/broadphase_base.rev
    git worktree remove --force "$tree"
  fi
fi
du -sh .gl .devcarry
echo "device_prepare: ready; call the device with carry [.gl, .devcarry] and"
echo "  bash scripts/device_run.sh [--tests] \$OUT"
