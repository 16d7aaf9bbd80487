// Instanced meshes: each instance's mesh (positions in the unit cube) stretched over its box,
// read from a storage buffer by gl_InstanceIndex (the firstInstance of each indirect command,
// the box id), and clamped into the box so that no vertex leaves it after rounding: a box the
// frustum cull rejects can never have produced a fragment.
#version 450

layout(location = 0) in vec3 unit_position;  // in [0,1]^3

struct InstanceBox {
    vec4 lo;
    vec4 hi;
};  // gpu_layout::GpuBox
layout(std430, set = 0, binding = 0) readonly buffer Boxes {
    InstanceBox boxes[];
};
layout(std430, set = 0, binding = 1) readonly buffer MeshIds {
    uint mesh_ids[];  // the mesh of each box id
};
layout(std430, set = 0, binding = 2) readonly buffer Tints {
    vec4 tints[];  // per mesh: rgb, and the weight of rgb over the instance's hashed colour
};

layout(push_constant) uniform Push {
    mat4 view_projection;  // column-major, Vulkan clip space
}
push;

layout(location = 0) out vec3 world;  // for the face normal (screen-space derivatives)
layout(location = 1) flat out uint instance;
layout(location = 2) flat out vec4 tint;

void main() {
    InstanceBox box = boxes[gl_InstanceIndex];
    // Exact at the unit cube's corners (0 or 1); clamped elsewhere.
    vec3 p = clamp(mix(box.lo.xyz, box.hi.xyz, unit_position), box.lo.xyz, box.hi.xyz);
    world = p;
    instance = uint(gl_InstanceIndex);
    tint = tints[mesh_ids[gl_InstanceIndex]];
    gl_Position = push.view_projection * vec4(p, 1.0);
}
