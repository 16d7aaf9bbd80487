# Sourced on the remote NVIDIA machine, in the copy made by scripts/remote_prepare.sh (the
# repository's scripts/ beside .gl/ and .remote/), by scripts/remote_run.sh and
# scripts/remote_compare.sh, and by hand before scripts/bench_engines.sh:
#   source scripts/remote_env.sh; BENCH_GPU=1 bash scripts/bench_engines.sh OUT_DIR
# Finds NVIDIA's Vulkan driver (NVIDIA_ICD, else its usual places) and points the loader at it;
# where the machine lacks a library the binaries load (the Vulkan loader, the GL dispatch
# libraries, the validation layer; Bullet's for the engine benches), unpacks the packages of
# .gl into / (that needs root; REMOTE_UNPACK=1 forces it); puts the copied binaries where
# scripts/bench_gpu.sh and bench_engines.sh look. Without an NVIDIA driver (a check of the
# scripts on lavapipe) nothing is unpacked.
icd=${NVIDIA_ICD:-}
for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
  /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
  [ -z "$icd" ] && [ -f "$f" ] && icd=$f
done
if [ -n "$icd" ]; then
  unpack=${REMOTE_UNPACK:-0}
  libs=(libvulkan.so.1 libGLX.so.0 libEGL.so.1)
  [ -f .remote/bullet_world ] && libs+=(libBulletDynamics.so.3 libfcl.so.0)
  for l in "${libs[@]}"; do
    ldconfig -p | grep -qF "$l" || unpack=1
  done
  [ -f /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ] || unpack=1
  if [ "$unpack" = 1 ]; then
    for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
    ldconfig
  fi
  export VK_DRIVER_FILES=$icd
fi
export BROADPHASE_PIPELINE_CACHE=/tmp/broadphase-pipelines
mkdir -p build/tests
cp .remote/broadphase build/broadphase
[ -f .remote/broadphase_gpu_tests ] && cp .remote/broadphase_gpu_tests build/tests/
chmod +x build/broadphase build/tests/broadphase_gpu_tests 2>/dev/null
[ -f .remote/bullet_world ] && export BENCH_BIN=.remote && chmod +x .remote/bullet_world .remote/fcl_collide 2>/dev/null
true
