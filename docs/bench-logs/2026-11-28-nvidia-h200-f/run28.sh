# 2026-11-28: issue 35's adversarial scenes (adv.sh: current vs the unrolled climb), then
# issue 36's Bullet world with gpu_lbvh on the GPU.
set -uo pipefail
bash .devcarry/adv.sh
export LD_LIBRARY_PATH=$PWD/.devcarry/lib VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export BROADPHASE_PIPELINE_CACHE=/tmp/bp-pipelines
chmod +x .devcarry/bullet_world
nvidia-smi --query-gpu=name,driver_version --format=csv
echo "== bullet 10000"; timeout 120 .devcarry/bullet_world 10000 60 dbvt,axis_sweep,dynamic_aabb_tree,sweep_and_prune,lbvh,gpu_lbvh 2>&1 | tee $OUT/bullet_10k.txt
echo "== bullet 100000"; timeout 200 .devcarry/bullet_world 100000 20 dbvt,sweep_and_prune,lbvh,gpu_lbvh 2>&1 | tee $OUT/bullet_100k.txt
