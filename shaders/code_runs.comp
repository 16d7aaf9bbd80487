// Adaptive codes, step 1 of 3 (CPU twin: lbvh::refine_codes). Runs of equal first codes in
// the sorted keys: invocation p finds the start s of its run (galloping backwards, then
// bisecting: O(log(p - s)) reads) and writes it to run_start[p]. The run's first position
// (p == s) seeds the run's centroid bounds with its own centroid, and when the run holds
// kRefineRun boxes or more (the key kRefineRun - 1 places on is still equal: the keys are
// sorted) it raises the refine word to the box count. The refine word, filled with 0 before,
// is then n when the keys are to be refined and 0 otherwise: run_bounds.comp and
// refine_codes.comp test it, and the second sort takes it as its element count.
#version 450
#include "common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};  // sorted first codes, one uint each
layout(std430, binding = 1) readonly buffer Ids {
    uint ids[];
};  // box id per sorted position
layout(std430, binding = 2) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 3) writeonly buffer RunStart {
    uint run_start[];
};
layout(std430, binding = 4) writeonly buffer RunBounds {
    uint run_bounds[];
};  // per run start s: ordered lo xyz at 6s, hi xyz at 6s + 3
layout(std430, binding = 5) buffer Refine {
    uint refine;
};

// First position in [0, p] whose key equals keys[p].
uint run_first(uint p) {
    uint key = keys[p];
    uint hi = p;  // keys[hi] == key throughout
    uint step = 1u;
    while (hi > 0u) {
        uint probe = hi > step ? hi - step : 0u;
        if (keys[probe] != key) {
            uint lo = probe;  // keys[lo] != key: the first equal key is in (lo, hi]
            while (hi - lo > 1u) {
                uint mid = lo + (hi - lo) / 2u;
                if (keys[mid] == key)
                    hi = mid;
                else
                    lo = mid;
            }
            return hi;
        }
        hi = probe;
        step *= 2u;
    }
    return 0u;
}

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n) return;
    uint s = run_first(p);
    run_start[p] = s;
    if (p != s) return;
    GpuBox b = boxes[ids[p]];
    precise vec3 c = (b.lo.xyz + b.hi.xyz) * 0.5;
    uvec3 o = uvec3(float_to_ordered(c.x), float_to_ordered(c.y), float_to_ordered(c.z));
    for (uint a = 0u; a < 3u; ++a) {
        run_bounds[6u * s + a] = o[a];
        run_bounds[6u * s + 3u + a] = o[a];
    }
    uint last = s + kRefineRun - 1u;
    // The empty slots' run (sorted last) is never refined.
    if (last < n && keys[last] == keys[s] && keys[s] != kEmptyCode30) atomicMax(refine, n);
}
