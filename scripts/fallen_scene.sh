#!/usr/bin/env bash
# Writes a scene of N boxes that came to rest on a floor (scene text, docs/cli.md): a floor
# slab, and boxes of side 1 to 1.4 (the bounds of a unit box turned a little) lying 1.3 apart
# in a square grid on it, sunk up to 0.002 into it (each touches the floor, some touch their
# neighbours), as the Bullet pile of bench/bullet_world.cpp leaves them once settled (--world
# settle), and a few (one per 20,000, at least one) that went over the floor's edge and are
# still falling, 1e4 below. The centroid bounds are then 1e4 high and the pile's cells about 10
# wide: runs of about 60 boxes share a 30-bit Morton code, so gpu_lbvh refines its codes, as on
# the scene `fallen` of issue 45. Deterministic (a Park-Miller generator in awk, exact in
# doubles).
#
#   bash scripts/fallen_scene.sh N OUT_FILE
set -euo pipefail
n=${1:?N}
out=${2:?OUT_FILE}
awk -v n="$n" 'BEGIN {
  x = 42
  side = int(sqrt(n - 1)); if (side * side < n - 1) side++
  half = 0.65 * side + 2
  printf "# %d boxes at rest on a floor (scripts/fallen_scene.sh)\n", n
  printf "%.9g %.9g %.9g %.9g %.9g %.9g\n", -half, -1, -half, half, 0, half
  falling = int((n - 1) / 20000); if (falling < 1) falling = 1
  for (i = 0; i < n - 1; ++i) {
    x = (x * 16807) % 2147483647; tilt = 0.4 * x / 2147483647
    x = (x * 16807) % 2147483647; lift = -0.002 * x / 2147483647
    s = 1 + tilt
    cx = 1.3 * (i % side) - 0.65 * side
    cz = 1.3 * int(i / side) - 0.65 * side
    y = lift
    if (i % int((n - 1) / falling) == 0 && int(i / int((n - 1) / falling)) < falling) y = -1e4 - 10 * i / n
    printf "%.9g %.9g %.9g %.9g %.9g %.9g\n", cx - s / 2, y, cz - s / 2, cx + s / 2, y + s, cz + s / 2
  }
}' >"$out"
