// All pairs by LBVH traversal, one atomic per subgroup's reservations (lbvh_pairs.glsl): devices
// whose compute stage has subgroup ballot (DeviceInfo::subgroup_ballot).
#version 450
#extension GL_KHR_shader_subgroup_ballot : require
#define BP_SUBGROUP_APPEND 1
#include "lbvh/lbvh_pairs.glsl"
