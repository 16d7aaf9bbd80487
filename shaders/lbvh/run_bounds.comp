// Adaptive codes, step 2 of 3 (CPU twin: lbvh::refine_codes), launched only when code_runs.comp
// found a run of kRefineRun or more equal first codes (indirect, or gated and then returning at
// once on refine word 0): every position's run start s (run_first) into run_start[p], and the
// centroid bounds of every long run. Within a workgroup the positions of one run are
// contiguous: a segmented suffix reduction in shared memory (Hillis-Steele steps that stop at
// the run's end) leaves at the first position of each run's stretch the min and max of its
// centroids, and that invocation merges them into the run's bounds with one atomicMin /
// atomicMax per axis on order-preserving uints (seeded by code_runs.comp with the run head's
// centroid). Short runs' bounds are not stored: refine_codes.comp takes them from their few
// boxes.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};  // sorted first codes, one uint each
layout(std430, binding = 1) writeonly buffer RunStart {
    uint run_start[];
};
layout(std430, binding = 2) readonly buffer Ids {
    uint ids[];
};
layout(std430, binding = 3) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 4) buffer RunBounds {
    uint run_bounds[];
};  // per long run's start s: ordered lo xyz at 6s, hi xyz at 6s + 3
layout(std430, binding = 5) readonly buffer Refine {
    uint refine;
};

#include "lbvh/code_runs.glsl"

shared uint s_run[kWorkgroupSize];
shared uvec3 s_lo[kWorkgroupSize];
shared uvec3 s_hi[kWorkgroupSize];

void main() {
    if (refine == 0u) return;  // the same word for every invocation: uniform
    uint p = linear_thread();
    uint t = gl_LocalInvocationID.x;
    uint n = pc.count;
    uint run = 0xffffffffu;
    bool merge = false;
    uvec3 lo = uvec3(0xffffffffu), hi = uvec3(0u);
    if (p < n) {
        run = run_first(p);
        run_start[p] = run;
        merge = long_run(run, n);
        lo = ordered_centroid(boxes[ids[p]]);
        hi = lo;
    }
    s_run[t] = run;
    s_lo[t] = lo;
    s_hi[t] = hi;
    barrier();
    for (uint offset = 1u; offset < kWorkgroupSize; offset <<= 1u) {
        uint u = t + offset;
        bool same = u < kWorkgroupSize && s_run[u] == run;
        uvec3 other_lo = same ? s_lo[u] : lo;
        uvec3 other_hi = same ? s_hi[u] : hi;
        barrier();
        lo = min(lo, other_lo);
        hi = max(hi, other_hi);
        s_lo[t] = lo;
        s_hi[t] = hi;
        barrier();
    }
    // The first position of each long run's stretch in this workgroup merges the stretch.
    bool first = merge && (t == 0u || s_run[t - 1u] != run);
    if (!first) return;
    for (uint a = 0u; a < 3u; ++a) {
        atomicMin(run_bounds[6u * run + a], lo[a]);
        atomicMax(run_bounds[6u * run + 3u + a], hi[a]);
    }
}
