// LBVH refit in one pass into two arrays of 16 B per node (lo, hi), the links read from a tree
// too large for one descriptor (its split variant); lbvh_assemble.comp then writes the bounds
// into the split tree (the climb and its references: lbvh_refit.glsl).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#define REFIT_SOA
#include "lbvh/lbvh_refit.glsl"
