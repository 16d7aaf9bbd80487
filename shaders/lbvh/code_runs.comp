// Adaptive codes, step 1 of 3 (CPU twin: lbvh::refine_codes): whether the sorted first codes
// hold a run of kRefineRun or more equal codes, found where one begins (p is a run's first
// position and the key kRefineRun - 1 places on is still equal: at most four reads per
// position, no write on a scene without a run of kRefineBoundsRun). Each such long run's first
// position seeds the run's centroid bounds with its own centroid (run_bounds.comp merges the
// others into them). A
// workgroup that found one raises the refine word, filled with 0 before, to the box count, and
// the indirect arguments of the refinement's later steps (filled with 0 before) to those of n
// elements: slot kArgsElements (run_bounds.comp, refine_codes.comp: n elements at
// kWorkgroupSize per workgroup) and kArgsSortTiles (the second sort's tiles), folded into
// x * y with x <= pc.offset (maxComputeWorkGroupCount[0]) as Kernel::dispatch folds them. So a
// scene without long runs launches none of those steps' workgroups, and the hierarchy reads the
// first codes (refine word 0); with one, every box is re-coded and sorted again. It also
// empties slot kArgsPairsGate (x = 0): a host helper's build that did not record the
// refinement's steps launches its all-pairs pass's first round from there, and builds again.
#version 450
#include "device/common.glsl"

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
layout(std430, binding = 3) writeonly buffer RunBounds {
    uint run_bounds[];
};  // per long run's start s: ordered lo xyz at 6s, hi xyz at 6s + 3
layout(std430, binding = 4) buffer Refine {
    uint refine;
};
layout(std430, binding = 5) buffer Args {
    uint args[];
};  // kArgsRefineSlots VkDispatchIndirectCommand

#include "lbvh/code_runs.glsl"

shared uint s_found;

void raise_slot(uint slot, uint groups) {
    uint x = min(groups, pc.offset);
    atomicMax(args[3u * slot], x);
    atomicMax(args[3u * slot + 1u], (groups + x - 1u) / x);
    atomicMax(args[3u * slot + 2u], 1u);
}

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (gl_LocalInvocationID.x == 0u) s_found = 0u;
    barrier();
    if (p < n && (p == 0u || keys[p - 1u] != keys[p]) && long_run(p, n)) {
        uvec3 o = ordered_centroid(boxes[ids[p]]);
        for (uint a = 0u; a < 3u; ++a) {
            run_bounds[6u * p + a] = o[a];
            run_bounds[6u * p + 3u + a] = o[a];
        }
        // Any of them: a benign race on one value.
        if (run_holds(p, n, kRefineRun)) s_found = 1u;
    }
    barrier();
    if (gl_LocalInvocationID.x != 0u || s_found == 0u) return;
    atomicMax(refine, n);
    atomicMin(args[3u * kArgsPairsGate], 0u);
    raise_slot(kArgsElements, (n + kWorkgroupSize - 1u) / kWorkgroupSize);
    raise_slot(kArgsSortTiles, (n + kSortTile - 1u) / kSortTile);
}
