// Adaptive codes, step 3 of 3 (CPU twin: lbvh::refine_codes), launched only when code_runs.comp
// found a run of kRefineRun or more equal first codes (indirect, or gated and then returning at
// once on refine word 0): the second sort's 64-bit keys (low word first) s << 30 | second, where
// s is the position's run start (ordering the runs as their first codes do: the sort moves
// boxes within their runs only, so the hierarchy reads the first code beside the sorted key),
// and `second` is the kind's 30-bit code (pc.key_word: kCodeMorton30 or kCodeHilbert30) of the
// box's centroid quantised at 10 bits per axis in its run's centroid bounds, exactly as the
// first code was quantised in the scene's (codes.glsl). A long run's bounds come from
// run_bounds.comp; a shorter run's (fewer than kRefineBoundsRun boxes) from its boxes here, with
// the same order-preserving min and max. With pc.flags 1 (the sort takes an odd number of
// passes, so its result lands in its other buffers) it also copies each position's id to
// `ids_out`, the sort's values input, so that the sorted ids end where the hierarchy reads them.
#version 450
#include "lbvh/codes.glsl"

#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};  // sorted first codes, one uint each
layout(std430, binding = 1) readonly buffer Ids {
    uint ids[];
};
layout(std430, binding = 2) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 3) readonly buffer RunStart {
    uint run_start[];
};
layout(std430, binding = 4) readonly buffer RunBounds {
    uint run_bounds[];
};
layout(std430, binding = 5) readonly buffer Refine {
    uint refine;
};
layout(std430, binding = 6) writeonly buffer Refined {
    uint refined[];
};  // 2 uints per position: low and high word of s << 30 | second
layout(std430, binding = 7) writeonly buffer IdsOut {
    uint ids_out[];
};

#include "lbvh/code_runs.glsl"

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n || refine == 0u) return;
    uint second = 0u;
    uint s = run_start[p];
    if (keys[p] != kEmptyCode30) {
        uvec3 olo, ohi;
        if (long_run(s, n)) {
            olo = uvec3(run_bounds[6u * s], run_bounds[6u * s + 1u], run_bounds[6u * s + 2u]);
            ohi = uvec3(run_bounds[6u * s + 3u], run_bounds[6u * s + 4u], run_bounds[6u * s + 5u]);
        } else {
            olo = uvec3(0xffffffffu);
            ohi = uvec3(0u);
            for (uint q = s; q < n && q < s + kRefineBoundsRun - 1u && keys[q] == keys[s]; ++q) {
                uvec3 o = ordered_centroid(boxes[ids[q]]);
                olo = min(olo, o);
                ohi = max(ohi, o);
            }
        }
        vec3 lo = vec3(ordered_to_float(olo.x), ordered_to_float(olo.y), ordered_to_float(olo.z));
        vec3 hi = vec3(ordered_to_float(ohi.x), ordered_to_float(ohi.y), ordered_to_float(ohi.z));
        GpuBox b = boxes[ids[p]];
        precise vec3 c = (b.lo.xyz + b.hi.xyz) * 0.5;
        float scale = common_scale(lo, hi, 10u);
        uint qx = quantize(c.x, lo.x, scale, 10u);
        uint qy = quantize(c.y, lo.y, scale, 10u);
        uint qz = quantize(c.z, lo.z, scale, 10u);
        second = pc.key_word == kCodeHilbert30 ? hilbert30(qx, qy, qz) : morton30(qx, qy, qz);
    }
    refined[2u * p] = s << kRefineSecondBits | second;
    refined[2u * p + 1u] = s >> (32u - kRefineSecondBits);
    if (pc.flags != 0u) ids_out[p] = ids[p];
}
