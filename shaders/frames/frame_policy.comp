// Refit-or-rebuild policy of a moving scene, decided on the GPU (one workgroup): sums the SAH
// partial sums of lbvh_sah.comp in a fixed order (invocation t adds partials t, t + 256, ...,
// then a shared-memory tree reduction), so the host never reads the cost between the refit
// and the rebuild.
//   kPolicyDecide: the refitted cost sum / root against the cost right after the last build,
//     base_sum / base_root (Kopta et al., "Fast, Effective BVH Updates for Animated Scenes",
//     I3D 2012): rebuild when sum * base_root > (ratio * base_sum) * root (products only,
//     correctly rounded, so that the CPU twin takes the same decision bit for bit), or when the
//     last build had no cost and this tree has one. Writes rebuilt and the ratio to the status,
//     and the dispatch arguments of the gated rebuild: the table `args_on` when rebuilding,
//     zeros (empty dispatches) otherwise. With kPolicyNoRebuild it only measures.
//     Work rule (the SAH sum is dominated by the few nodes over a world-wide box or a far
//     outlier, so a refit that scatters everything else barely moves it): the previous frame's
//     all-pairs traversal expanded V nodes for L = n + pairs; the first traversal after the
//     last build expanded V0 for L0. When V0 is not measured yet it becomes V, L; otherwise
//     rebuild when V * L0 > (work_ratio * V0) * L (float products, as above). Skipped when the
//     work ratio is 0 or the previous traversal did not finish (its flags are set).
//   kPolicyCommit: after a build, the cost becomes the new base and V0 is to be measured.
// CPU twin: lbvh::MovingTwin (sah_sum, rebuild_wanted).
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/frames.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Partials {
    float partials[];
};
layout(std430, binding = 1) buffer Status {
    FrameStatus status;
};
layout(std430, binding = 2) readonly buffer ArgsOn {
    uint args_on[];
};
layout(std430, binding = 3) writeonly buffer Args {
    uint args[];
};
layout(std430, binding = 4) readonly buffer Previous {
    TraversalStatus previous;  // the previous frame's all-pairs traversal
};

shared float s_sum[kWorkgroupSize];
shared bool s_rebuild;

void main() {
    uint t = gl_LocalInvocationID.x;
    precise float acc = 0.0;
    for (uint k = t; k < pc.tiles; k += kWorkgroupSize) acc += partials[k];
    s_sum[t] = acc;
    barrier();
    for (uint s = kWorkgroupSize / 2u; s > 0u; s >>= 1u) {
        if (t < s) s_sum[t] += s_sum[t + s];
        barrier();
    }
    precise float sum = s_sum[0];
    float root = partials[pc.tiles];
    if ((pc.flags & kPolicyCommit) != 0u) {
        if (t == 0u) {
            status.base_sum = sum;
            status.base_root = root;
            status.base_visits = 0.0;
            status.base_load = 0.0;
        }
        return;
    }
    if (t == 0u) {
        float base_sum = status.base_sum, base_root = status.base_root;
        float threshold = uintBitsToFloat(pc.offset);
        bool has_base = base_sum > 0.0 && base_root > 0.0;
        bool has_cost = sum > 0.0 && root > 0.0;
        precise float lhs = sum * base_root;
        precise float rhs = (threshold * base_sum) * root;
        bool rebuild = has_base ? (root > 0.0 && lhs > rhs) : has_cost;
        float ratio = has_base ? (root > 0.0 ? (sum / root) / (base_sum / base_root) : 0.0)
                               : (has_cost ? uintBitsToFloat(0x7f800000u) : 1.0);
        precise float visits = float(previous.visits_hi) * 4294967296.0 + float(previous.visits_lo);
        precise float load = float(pc.shift) + float(previous.count);
        float work_threshold = uintBitsToFloat(pc.capacity);
        float work_ratio = 1.0;
        if (previous.flags == 0u && visits > 0.0) {
            if (status.base_visits == 0.0) {
                status.base_visits = visits;
                status.base_load = load;
            } else {
                precise float work_lhs = visits * status.base_load;
                precise float work_rhs = (work_threshold * status.base_visits) * load;
                if (work_threshold > 0.0 && work_lhs > work_rhs) rebuild = true;
                work_ratio = (visits / load) / (status.base_visits / status.base_load);
            }
        }
        status.work_ratio = work_ratio;
        rebuild = rebuild && (pc.flags & kPolicyNoRebuild) == 0u;
        status.ratio = ratio;
        status.rebuilt = rebuild ? 1u : 0u;
        s_rebuild = rebuild;
    }
    barrier();
    bool rebuild = s_rebuild;
    for (uint k = t; k < pc.count; k += kWorkgroupSize) args[k] = rebuild ? args_on[k] : 0u;
}
