// LBVH hierarchy and bounds in one bottom-up pass into a tree's LbvhNode and LbvhWideNode
// arrays, each bound whole (the climb and its references: lbvh_build.glsl).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#include "lbvh/lbvh_build.glsl"
