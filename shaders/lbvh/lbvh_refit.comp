// LBVH refit in one pass into a tree's LbvhNode and LbvhWideNode arrays, each bound whole (the
// climb and its references: lbvh_refit.glsl).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#include "lbvh/lbvh_refit.glsl"
