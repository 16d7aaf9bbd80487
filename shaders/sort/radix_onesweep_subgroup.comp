// LSD radix sort (one-sweep path), one digit pass, the tile ranked with subgroup ballots where
// the workgroup's subgroups are full and of 8 invocations or more (else in shared memory):
// devices with subgroup ballot (radix_onesweep.glsl, radix_rank.glsl, DeviceInfo::sort_rank).
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_ballot : require
#define SORT_SUBGROUP_RANK 1
#include "sort/radix_onesweep.glsl"
