// Frustum cull of a built LBVH: shaders/lbvh_cull.glsl without occlusion.
#version 450
#include "lbvh_cull.glsl"
