// Instanced cubes: one unit-cube mesh (8 corners, 36 indices) stretched over the instance's box,
// read from a storage buffer by gl_InstanceIndex (the firstInstance of each indirect command).
#version 450

layout(location = 0) in vec3 corner;  // a corner of the unit cube, each coordinate 0 or 1

struct InstanceBox {
    vec4 lo;
    vec4 hi;
};  // gpu_layout::GpuBox
layout(std430, set = 0, binding = 0) readonly buffer Boxes {
    InstanceBox boxes[];
};

layout(push_constant) uniform Push {
    mat4 view_projection;  // column-major, Vulkan clip space
}
push;

layout(location = 0) out vec3 local;  // position in the unit cube, for per-face shading
layout(location = 1) flat out uint instance;

void main() {
    InstanceBox box = boxes[gl_InstanceIndex];
    vec3 p = mix(box.lo.xyz, box.hi.xyz, corner);  // exact: corner is 0 or 1
    local = corner;
    instance = uint(gl_InstanceIndex);
    gl_Position = push.view_projection * vec4(p, 1.0);
}
