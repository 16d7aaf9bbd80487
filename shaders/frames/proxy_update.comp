// gpu::ProxyScene's batch: one frame's adds, removes, moves and filter changes of one kind of
// body (dynamic or static), uploaded once as records of four uvec4 (slot in x; box lo; box hi;
// ProxySlot) and scattered into the slots' boxes and ProxySlots. A removed body's record holds
// an empty box (layout/common.h, "Empty slots"). The host sends each slot at most once per batch.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Updates {
    uvec4 updates[];
};
layout(std430, binding = 1) writeonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 2) writeonly buffer Slots {
    uvec4 slots[];
};

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    uint r = 4u * (pc.offset + i);
    uint slot = updates[r].x;
    boxes[slot].lo = uintBitsToFloat(updates[r + 1u]);
    boxes[slot].hi = uintBitsToFloat(updates[r + 2u]);
    slots[slot] = updates[r + 3u];
}
