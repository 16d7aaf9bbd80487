// LBVH refit in one pass into a tree's LbvhNode and LbvhWideNode arrays, each bound whole (the
// climb and its references: lbvh_refit.glsl).
#version 450
#include "lbvh_refit.glsl"
