// Frustum and occlusion cull of a built LBVH: shaders/cull/lbvh_cull.glsl with CULL_OCCLUSION
// (gpu::Culler::record with a gpu::CullOcclusion).
#version 450
#define CULL_OCCLUSION
#include "cull/lbvh_cull.glsl"
