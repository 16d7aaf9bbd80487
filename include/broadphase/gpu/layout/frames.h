// Data layouts of the moving-scene kernels (gpu::MovingScene: refit-or-rebuild policy, pair
// keys, overlap-event differences), shared by shaders/frames/frame_policy.comp,
// pair_diff_append.comp, pair_unpack.comp and the C++ host (gpu/frames/frame_recorder.cpp). Same
// rules as layout/common.h: 4-byte scalars and vec4/uvec4 only, static_asserts on every std430
// size and offset.
//
// Push constants (gpu_layout::PushConstants, generic fields):
//   frame_policy:      tiles = number of SAH partial sums (the root's area follows them),
//                      count = uints of the dispatch-argument table, flags = kPolicy*,
//                      offset = float bits of the rebuild ratio, capacity = float bits
//                      of the work ratio (0: no work rule), shift = n (the box count)
//   (the pair keys i << b | j, b = bit_width(n - 1), are written by lbvh_pairs.comp with
//   kPairsKeys, b in its key_words)
//   pair_diff_append:  count = capacity of A, capacity = capacity of B
//   pair_unpack:       flags = kDiffBegan or kDiffEnded, shift = b
#ifndef BROADPHASE_GPU_LAYOUT_FRAMES_H
#define BROADPHASE_GPU_LAYOUT_FRAMES_H

#include "common.h"

#include "open.h"

// frame_policy modes (push constant `flags`).
BP_CONST kPolicyDecide = 0u;     // refitted cost vs the last build's: rebuilt, ratio, gate args
BP_CONST kPolicyCommit = 1u;     // after a build: the cost becomes the new base
BP_CONST kPolicyNoRebuild = 2u;  // with kPolicyDecide: measure the ratio, never rebuild
// pair_unpack: which count of FrameStatus receives the size of the difference.
BP_CONST kDiffBegan = 0u;
BP_CONST kDiffEnded = 1u;

// What one frame of a moving scene produced, and the policy's state, in one device buffer.
// Written by the frame's kernels; read by the host (MovingScene::read_step) or by the
// caller's own kernels. The frame's pairs, began and ended lists are complete exactly when
// pairs <= pair_capacity.
// total: 48 bytes
struct FrameStatus {
    uint pairs;          // exact number of overlapping pairs this frame
    uint began;          // pairs overlapping now and not in the previous frame
    uint ended;          // pairs of the previous frame not overlapping now
    uint rebuilt;        // 1 when this frame rebuilt the tree, 0 when it refitted it
    float ratio;         // refitted SAH cost over the cost right after the last build
    float base_sum;      // policy state: sum of internal-node areas right after the last build
    float base_root;     // policy state: root area right after the last build
    uint pair_capacity;  // pairs the frame's buffers hold
    // The previous frame's all-pairs traversal work per box and pair (TraversalStatus visits
    // over n + pairs) over the same measure on the first traversal after the last build; 1
    // until there are two such traversals.
    float work_ratio;
    float base_visits;  // policy state: that first traversal's visits (0: not measured yet)
    float base_load;    // policy state: its n + pairs
    uint reserved;
};

#ifdef __cplusplus
static_assert(sizeof(FrameStatus) == 48 && offsetof(FrameStatus, began) == 4 &&
              offsetof(FrameStatus, ratio) == 16 && offsetof(FrameStatus, pair_capacity) == 28 &&
              offsetof(FrameStatus, work_ratio) == 32);
#endif
#include "close.h"

#endif  // BROADPHASE_GPU_LAYOUT_FRAMES_H
