// LSD radix sort (one-sweep path), one digit pass, the tile ranked in shared memory without
// subgroup operations: any device (radix_onesweep.glsl, radix_rank.glsl).
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "sort/radix_onesweep.glsl"
