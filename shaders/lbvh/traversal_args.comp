// Between two rounds of a bounded traversal (layout/common.h, "Bounded traversal"): reads how many
// items the last round queued, writes the indirect dispatch arguments of round pc.shift (one
// invocation per item, folded into x * y workgroups with x <= pc.offset as Kernel::dispatch
// folds them; none after a queue overflow) and empties the queue that round will fill. With
// kTraversalFinish it instead closes the traversal: kTraversalIncomplete is set when items are
// still queued after the last recorded round (and cleared otherwise), and `count` becomes the pair
// total saturated at 2^32 - 1; the dispatch arguments then cover the ray casts' candidates.
#version 450
#include "device/common.glsl"

layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer TStatus {
    TraversalStatus tstatus;
};

void main() {
    uint in_queue = (pc.shift - 1u) & 1u;
    uint queued = in_queue == 0u ? tstatus.queued0 : tstatus.queued1;
    uint items = min(queued, pc.tiles);
    if ((pc.flags & kTraversalFinish) != 0u) {
        tstatus.flags =
            (tstatus.flags & ~kTraversalIncomplete) | (items > 0u ? kTraversalIncomplete : 0u);
        tstatus.count = tstatus.total_hi != 0u ? 0xffffffffu : tstatus.total_lo;
        tstatus.rounds = pc.shift;
        // The arguments of a pass over the ray casts' candidates (one invocation each).
        uint candidates = min(tstatus.candidates, pc.tiles);
        uint cgroups = (candidates + kWorkgroupSize - 1u) / kWorkgroupSize;
        uint cx = min(cgroups, pc.offset);
        tstatus.args = uvec4(cx, cx == 0u ? 0u : (cgroups + cx - 1u) / cx, 1u, 0u);
        return;
    }
    // After an overflow some reserved slots were never written: stop (the result is flagged).
    if ((tstatus.flags & kTraversalQueueOverflow) != 0u) items = 0u;
    uint resumed = tstatus.resumed + items;
    tstatus.resumed = resumed < items ? 0xffffffffu : resumed;
    uint groups = (items + kWorkgroupSize - 1u) / kWorkgroupSize;
    uint x = min(groups, pc.offset);
    tstatus.args = uvec4(x, x == 0u ? 0u : (groups + x - 1u) / x, 1u, 0u);
    if ((pc.shift & 1u) == 0u)
        tstatus.queued0 = 0u;
    else
        tstatus.queued1 = 0u;
}
