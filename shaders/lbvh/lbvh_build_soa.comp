// LBVH hierarchy and bounds in one bottom-up pass into three arrays of 16 B per node (link, lo,
// hi), for a tree too large for one descriptor; lbvh_assemble.comp then writes the split tree
// (the climb and its references: lbvh_build.glsl).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#define BUILD_SOA
#include "lbvh/lbvh_build.glsl"
