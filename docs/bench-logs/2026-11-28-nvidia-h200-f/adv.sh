set -uo pipefail
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=$icd BROADPHASE_PIPELINE_CACHE=/tmp/bp-pipelines
chmod +x .devcarry/broadphase .devcarry/broadphase_prev
L=$OUT/logs; mkdir -p $L
r() { n=$1; shift; echo "== $n: $*"; timeout 100 "$@" > $L/$n.txt 2>&1; echo "rc $?"; grep -E "hierarchy|build total|gpu total|^pairs:" $L/$n.txt; }
for s in level degenerate multiscale clustered; do
  for m in 1000000 10000000; do
    r "${s}_$m" .devcarry/broadphase bench --scene "$s:$m" --repeat 5
    r "prev_${s}_$m" .devcarry/broadphase_prev bench --scene "$s:$m" --repeat 5
  done
done
tar -czf $OUT/logs.tar.gz -C $OUT logs; rm -rf $L
