# Sourced by scripts/device_run.sh and scripts/device_compare.sh, there, on a lent NVIDIA
# machine (in the repository root, carrying .gl and .devcarry): unpacks the Vulkan loader and
# layers of .gl, points the loader at NVIDIA's driver, and puts the carried binaries where
# scripts/bench_gpu.sh looks. NVIDIA's driver is mounted under /usr/local/nvidia there;
# elsewhere (a check of the scripts on lavapipe) nothing is unpacked into /.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  export VK_DRIVER_FILES=$icd
fi
export BROADPHASE_PIPELINE_CACHE=/tmp/broadphase-pipelines
mkdir -p build/tests
cp .devcarry/broadphase build/broadphase
[ -f .devcarry/broadphase_gpu_tests ] && cp .devcarry/broadphase_gpu_tests build/tests/
chmod +x build/broadphase build/tests/broadphase_gpu_tests 2>/dev/null
true
