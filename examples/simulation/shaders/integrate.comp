// The example simulation's own kernel (not the library's): moves every box by its velocity
// for one time step and reflects it off the walls of the unit cube, in place. It stands for a
// physics author's integrator that leaves the boxes in a GPU buffer for broadphase.
#version 450
#include "broadphase/gpu/layout/common.h"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer Boxes {
    GpuBox boxes[];
};
layout(std430, set = 0, binding = 1) buffer Velocities {
    vec4 velocities[];
};
layout(push_constant) uniform Step {
    uint count;
    float dt;
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= count) return;
    vec3 lo = boxes[i].lo.xyz, hi = boxes[i].hi.xyz, v = velocities[i].xyz;
    vec3 half_size = 0.5 * (hi - lo);
    vec3 c = 0.5 * (lo + hi) + v * dt;
    // Reflect the centre off the walls at 0 and 1.
    bvec3 below = lessThan(c, vec3(0.0)), above = greaterThan(c, vec3(1.0));
    c = mix(c, -c, below);
    c = mix(c, 2.0 - c, above);
    v = mix(v, -v, bvec3(below.x || above.x, below.y || above.y, below.z || above.z));
    boxes[i].lo = vec4(c - half_size, 0.0);
    boxes[i].hi = vec4(c + half_size, 0.0);
    velocities[i] = vec4(v, 0.0);
}
