// Morton codes of box centroids (30-bit: 10 bits per axis; 63-bit: 21 bits per axis, stored
// as two uints, low word first), or 30-bit Hilbert indices (J. Skilling, "Programming the
// Hilbert curve", AIP Conf. Proc. 707, 2004: AxesToTranspose, then the transposed bits read
// as a Morton code), and the identity permutation as sort values.
// CPU twin: lbvh::Quantizer, lbvh::morton30, lbvh::morton63, lbvh::hilbert30 (bit-identical:
// only correctly rounded operations; the reciprocal is refined to the correctly rounded one).
#version 450
#include "lbvh/codes.glsl"

#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 1) readonly buffer Bounds {
    GpuBounds bounds;
};
layout(std430, binding = 2) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 3) writeonly buffer Values {
    uint values[];
};

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    values[i] = i;
    if (box_empty(boxes[i].lo, boxes[i].hi)) {
        if (pc.key_word == kCodeMorton63) {
            keys[2u * i] = 0xffffffffu;
            keys[2u * i + 1u] = 0xffffffffu;
        } else {
            keys[i] = kEmptyCode30;
        }
        return;
    }
    uint bits = pc.key_word == kCodeMorton63 ? 21u : 10u;
    vec3 lo = vec3(ordered_to_float(bounds.lo.x), ordered_to_float(bounds.lo.y),
                   ordered_to_float(bounds.lo.z));
    vec3 hi = vec3(ordered_to_float(bounds.hi.x), ordered_to_float(bounds.hi.y),
                   ordered_to_float(bounds.hi.z));
    precise vec3 c = (boxes[i].lo.xyz + boxes[i].hi.xyz) * 0.5;
    float scale = common_scale(lo, hi, bits);
    uint qx = quantize(c.x, lo.x, scale, bits);
    uint qy = quantize(c.y, lo.y, scale, bits);
    uint qz = quantize(c.z, lo.z, scale, bits);
    if (pc.key_word == kCodeMorton63) {
        uvec2 x = expand_bits_21(qx), y = expand_bits_21(qy), z = expand_bits_21(qz);
        // code = x << 2 | y << 1 | z over 64 bits
        uvec2 code;
        code.x = (x.x << 2) | (y.x << 1) | z.x;
        code.y = (x.y << 2) | (x.x >> 30) | (y.y << 1) | (y.x >> 31) | z.y;
        keys[2u * i] = code.x;
        keys[2u * i + 1u] = code.y;
    } else if (pc.key_word == kCodeHilbert30) {
        keys[i] = hilbert30(qx, qy, qz);
    } else {
        keys[i] = morton30(qx, qy, qz);
    }
}
