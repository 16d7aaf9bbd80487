// All pairs by LBVH traversal, one atomic per step that found pairs: any device (lbvh_pairs.glsl).
#version 450
#include "lbvh/lbvh_pairs.glsl"
