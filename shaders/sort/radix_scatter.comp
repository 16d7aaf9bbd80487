// LSD radix sort (reduce-then-scan path), the scatter of one tile, ranked in shared memory
// without subgroup operations: any device (radix_scatter.glsl, radix_rank.glsl).
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "sort/radix_scatter.glsl"
