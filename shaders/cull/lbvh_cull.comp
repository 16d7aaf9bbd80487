// Frustum cull of a built LBVH: shaders/cull/lbvh_cull.glsl without occlusion.
#version 450
#include "cull/lbvh_cull.glsl"
