// Data layouts shared by the GLSL compute shaders and the C++ host: the one source of truth
// for every struct that crosses the CPU/GPU boundary. Included by C++ (with static_asserts
// on every std430 size and offset) and by GLSL (glslc -I include).
//
// Only 4-byte scalars and vec4/uvec4 members, so std430 and C++ agree without padding rules.
#ifndef BROADPHASE_GPU_LAYOUT_H
#define BROADPHASE_GPU_LAYOUT_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#endif
#include "open.h"
#ifdef __cplusplus
using uint = std::uint32_t;
struct vec4 {
    float x, y, z, w;
};
struct uvec4 {
    uint x, y, z, w;
};
#endif

// Workgroup sizes. Every kernel but the one-invocation argument writers declares
// `layout(local_size_x = kWorkgroupSize)`, and the host sizes its dispatches by the same
// constant. Every kernel is written for any subgroup size; none relies on one.
BP_CONST kWorkgroupSize = 256u;
// Radix sort: 8-bit digits (kSortBuckets == kWorkgroupSize: one digit per invocation), each
// workgroup ranks a tile of kWorkgroupSize * kSortItemsPerThread = 4096 elements (radix_rank.glsl
// needs kSortTile == 16 * kWorkgroupSize). At most kSortMaxPasses passes (64-bit keys).
BP_CONST kSortDigitBits = 8u;
BP_CONST kSortBuckets = 256u;
BP_CONST kSortItemsPerThread = 16u;
BP_CONST kSortTile = kWorkgroupSize * kSortItemsPerThread;
BP_CONST kSortMaxPasses = 8u;
// The one-sweep path's state (uints, zeroed before each sort): [0, kSortMaxPasses) the tile
// counters of each pass, [kOnesweepHist, +kSortMaxPasses * kSortBuckets) every pass's global
// digit counts, from kOnesweepLookback the look-back entries, (pass * tiles + tile) *
// kSortBuckets + digit: flag (top two bits) | count (low 30 bits).
BP_CONST kOnesweepHist = 64u;
BP_CONST kOnesweepLookback = kOnesweepHist + kSortMaxPasses * kSortBuckets;
BP_CONST kOnesweepAggregate = 0x40000000u;  // the tile's own counts
BP_CONST kOnesweepPrefix = 0x80000000u;     // the counts of this tile and all before it
BP_CONST kOnesweepValueMask = 0x3fffffffu;
// Look-back rounds a tile waits on a predecessor that published nothing before counting the
// predecessor's digits from its keys (radix_onesweep.glsl).
BP_CONST kOnesweepSpins = 128u;
// Preceding tiles whose look-back entries a tile reads in one round (radix_onesweep.glsl): one
// memory latency per window instead of one per tile. The most, and the default of
// DeviceInfo::sort_window.
BP_CONST kOnesweepWindow = 8u;
// Radix sort push constant `flags`: the element count is min(pc.count, the count binding).
BP_CONST kSortDynamicCount = 1u;
// Radix sort push constant `flags`: sort keys only (the value bindings are not accessed).
BP_CONST kSortKeysOnly = 2u;
// Radix sort push constant `flags`, one-sweep pass (tests): the look-back counts every
// preceding tile from its keys instead of reading what the tile published (the fallback).
BP_CONST kSortFallbackOnly = 4u;
// Radix sort push constant `flags`, one-sweep pass (tests): tile k publishes its inclusive
// prefix of digit d only where (k + d) % kStressPrefixEvery == 0 (its aggregate stays for the
// others), and nothing at all for digit d where (k * 256 + d) % kStressSilentEvery == 0. So
// look-backs run past whole windows, the digits of one window meet their prefixes at different
// tiles, and a digit that meets its prefix beyond another's silent tile must stop there. A
// waiting tile counts a silent one after 2 rounds instead of kOnesweepSpins.
BP_CONST kSortLookbackStress = 8u;
BP_CONST kStressPrefixEvery = 11u;
BP_CONST kStressSilentEvery = 613u;
// Slots of the indirect dispatch arguments count_args.comp writes from a GPU-side count
// (VkDispatchIndirectCommand each): per element (at least one workgroup), per sort tile.
BP_CONST kArgsElements = 0u;
BP_CONST kArgsSortTiles = 1u;
BP_CONST kArgsSlots = 2u;
// The refine arguments of an LBVH build (code_runs.comp) hold one slot more: the all-pairs
// pass's first round after a build that left out the refinement's steps (Lbvh::find_pairs'
// refinement on demand). The host writes the round's workgroups there; code_runs.comp empties
// it when the codes need refining, so that no pass walks the tree that is about to be rebuilt.
BP_CONST kArgsPairsGate = 2u;
BP_CONST kArgsRefineSlots = 3u;
// Scan: each workgroup scans kScanTile consecutive uints.
BP_CONST kScanItemsPerThread = 8u;
BP_CONST kScanTile = kWorkgroupSize * kScanItemsPerThread;
// Traversal stack depth. A Karras tree over n < 2^32 leaves with k-bit codes is at most
// k + 32 levels deep (each level lengthens the common prefix of (code, index) by >= 1 bit).
BP_CONST kTraversalStack = 96u;
// The all-pairs traversal's own stack (shaders/lbvh/lbvh_pairs.glsl): a short one, 16 entries (64
// bytes per invocation instead of kTraversalStack's 384), since a leaf's query rarely holds
// more than a few pending subtrees. A subtree that finds it full goes to the work queue as a
// (query, node) item, expanded in the next round ("Bounded traversal" below): the pairs and
// the visit count are the same. LbvhOptions::pair_stack may lower the limit (push constant
// key_word; 0 means kPairStack).
BP_CONST kPairStack = 16u;
// The all-pairs traversal's groups (shaders/lbvh/lbvh_pairs.glsl): one invocation takes kPairGroup
// consecutive sorted positions and walks the tree once per run of them with the union of the
// run's boxes, testing each leaf it reaches against every member of the run (kept in
// registers). Neighbours in code order lie close together, so a union overlaps few more nodes
// than one box does, and the nodes from the root down to the run are read once for all of them;
// a new run begins where the next box lies farther from the run than either is wide (where the
// curve jumps across the scene). At uniform:100000 the walks read 10.1 wide nodes per box
// instead of 25.5 (one walk per box). Its default budget ("Bounded traversal") is kPairGroup
// times the device's, at most kTraversalBudget: a group's steps serve kPairGroup leaves.
// CPU twin: lbvh::self_pairs.
BP_CONST kPairGroup = 8u;
// Sentinel for "no node" (the root's parent, an empty child).
BP_CONST kInvalidNode = 0xffffffffu;

// Bounded traversal (pairs, region queries, ray casts). No invocation expands more than
// kTraversalBudget nodes in one dispatch: Mesa's lavapipe ends any loop after 65,535
// iterations and real GPUs have watchdogs, so a traversal that would walk a whole tree (one box
// over all the others, a region covering the scene) must not run in one invocation. An
// invocation out of budget hands its pending subtrees (the node it was about to expand and its
// stack) to a work queue as (query, node) items; the next round is an indirect dispatch of one
// invocation per item, sized on the GPU by traversal_args.comp. Two queues alternate (round r
// reads queue (r-1)&1 and writes queue r&1). Every round lowers the depth of the shallowest
// pending node by at least one, so kTraversalMaxRounds rounds always finish a tree of depth
// <= kTraversalStack; kTraversalRounds are recorded by default, and a traversal with work
// left after its rounds says so (kTraversalIncomplete), never ends silently.
// Push constants of the traversal kernels: shift = the round (0: one invocation per query from
// the root; r > 0: one per work item), tiles = the queue capacity in items, budget = the nodes
// an invocation expands before it queues the rest (1..kTraversalBudget; 0: kTraversalBudget).
// The budget trades rounds for balance: a query with far more work than the others (a box over
// half the scene) is walked by one invocation for `budget` dependent steps per round while the
// rest of the device idles, so a GPU wants a small one (DeviceInfo::traversal_budget); the
// pairs, visits and ids found are the same whatever it is.
BP_CONST kTraversalBudget = 4096u;
// The budget GPUs take by default (DeviceInfo::traversal_budget). Measured on an NVIDIA H200
// (docs/performance.md, "Traversal budget"), all pairs of level:1M (a box over half the
// scene): 33 ms at 4096, 4.2 at 128, 3.1 at 64, 2.6 at 32; of uniform:1M: 1.52 ms at 4096 to
// 64 (+2%), 1.74 at 32 (+14%, the rounds' cost).
BP_CONST kGpuTraversalBudget = 64u;
// The first round of region queries and ray casts (LbvhOptions::query_budget) takes
// kQueryFirstRound times the device's budget by default, at most kTraversalBudget; later rounds
// the device's. The CPU twin's expanded nodes of `bench rays`'s rays and regions at 1M boxes
// (uniform, clustered; the other standard scenes expand under 10): medians 5 to 37, p99 56 to
// 105, at most 98 to 168 (0.4 to 7% over 64, none over 256), so that 512 steps finish them in
// round 0 and the pass costs two dispatches; with 64, a few queries of every batch go on into
// later rounds. Not yet measured on a GPU: the pairs pass's first round (kPairGroup times the
// device's) was best there.
BP_CONST kQueryFirstRound = 8u;
BP_CONST kTraversalRounds = 16u;
BP_CONST kTraversalMaxRounds = kTraversalStack + 1u;
// TraversalStatus flags.
BP_CONST kTraversalIncomplete = 1u;         // work was left in the queue after the last round
BP_CONST kTraversalQueueOverflow = 2u;      // a round produced more items than the queue holds
BP_CONST kTraversalCandidateOverflow = 4u;  // ray casts: more candidates than the queue holds
// traversal_args.comp push constant `flags`: finish (status words) instead of a round's args.
BP_CONST kTraversalFinish = 1u;

// Code kinds (push constant `code_kind`).
BP_CONST kCodeMorton30 = 0u;   // 10 bits per axis in one uint
BP_CONST kCodeMorton63 = 1u;   // 21 bits per axis in two uints (hi word first in sort order)
BP_CONST kCodeHilbert30 = 2u;  // 3D Hilbert index (Skilling), 10 bits per axis in one uint

// Adaptive codes (lbvh::refine_codes): when the longest run of equal 30-bit codes after the
// first sort holds kRefineRun boxes or more, every box gets a second 30-bit code in the
// centroid bounds of its run and the boxes are ordered by the 64-bit keys (code << 32 | second).
// The GPU's second sort orders them by run_start << 30 | second instead (the run's first
// sorted position, which orders the runs as their codes do, and keeps them in place): 30 +
// bit_width(n - 1) key bits, 6 passes at 100k boxes and 7 up to 2^24, not the 8 of 64 bits
// (kRefineSecondBits). Shorter runs cost at most kRefineRun - 1 leaves per query that reaches
// their cell, and are left in index order: the refinement re-codes and sorts every box again
// (10 or 11 sort passes instead of 4), which is worth it for a scene that the grid collapses into a
// few cells
// (`level`, `degenerate`, `multiscale`: runs of 10^4 to 10^7 boxes), not for a few runs of
// about 8 among millions (`clustered` at 10M: two runs of 8 made its build 6.9 ms on an H200
// against 3.7 for `uniform`, which refines nothing). It was 8 until 2026-11-28.
BP_CONST kRefineRun = 32u;
// The GPU's split of the runs' centroid bounds (shaders/lbvh/code_runs.glsl): a run of
// kRefineBoundsRun boxes or more has its bounds reduced by run_bounds.comp, a shorter one's are
// taken from its few boxes by each of them in refine_codes.comp. The same bounds either way.
BP_CONST kRefineBoundsRun = 8u;
// Bits of a refined box's second code (the low bits of its second sort's key; lbvh_build.glsl
// masks them out of the sorted key and reads the first code beside it).
BP_CONST kRefineSecondBits = 30u;
// lbvh_build push constant `flags`: the keys may have been refined (its refine word and refined
// keys are bound; the refine word says whether they were).
BP_CONST kBuildRefinable = 1u;

// Empty slots (gpu::ProxyScene): a box whose lo.x > hi.x (the library writes lo = +inf,
// hi = -inf) is a leaf that overlaps nothing. Scene bounds skip it, its code is the empty code
// (above every real code of its kind, so empties sort last when the sort takes one more bit:
// LbvhOptions::empty_slots), runs of it are never refined, and its node area is 0.
BP_CONST kEmptyCode30 = 0x40000000u;  // morton30 / hilbert30; morton63: both words all ones

// An input box: xyz of lo and hi; w is ignored (callers may store anything there).
// total: 32 bytes
struct GpuBox {
    vec4 lo;
    vec4 hi;
};

// Scene bounds as order-preserving uints (see float_to_ordered), so that atomicMin/atomicMax
// on uints reduce floats portably. xyz used; w unused.
// total: 32 bytes
struct GpuBounds {
    uvec4 lo;
    uvec4 hi;
};

// LBVH node. Nodes [0, n-1) are internal (0 is the root when n >= 2); nodes [n-1, 2n-1)
// are leaves in code order (leaf of sorted position p is node n-1+p; with n == 1 the single
// leaf is node 0 and the root).
// Internal: link = (left child, right child, parent, last sorted position in the subtree).
// Leaf:     link = (box id, sorted position, parent, sorted position).
// total: 48 bytes
struct LbvhNode {
    uvec4 link;
    vec4 lo;
    vec4 hi;
};

// An internal node's two children side by side, so that a traversal step is one 64-byte load
// instead of a link and two child nodes (112 bytes from three records): the layout of T. Aila
// and S. Laine, "Understanding the Efficiency of Ray Traversal on GPUs" (HPG 2009), written
// beside the LbvhNode array, never instead of it. Record i describes internal node i,
// i in [0, n-1) (none when n <= 1); the build (lbvh_build.comp) and the refit
// (lbvh_refit.comp) write it whenever they write node i's bounds (for a split tree,
// lbvh_assemble.comp after them), so each child box is a bit copy of the child's LbvhNode
// bounds (CPU twin: lbvh::wide_nodes).
//   a = (left lo x, y, z, left hi x)     b = (left hi y, z, right lo x, y)
//   c = (right lo z, right hi x, y, z)   link = (left, right, left aux, right aux)
// A child's aux is its box id when it is a leaf (index >= n - 1; its sorted position is
// index - (n - 1)), else the last sorted position of its subtree (its LbvhNode's link.w).
// total: 64 bytes
struct LbvhWideNode {
    vec4 a;
    vec4 b;
    vec4 c;
    uvec4 link;
};

// A proxy's slot (gpu::ProxyScene): its collision filter (broadphase::Filter: category,
// mask, group as a two's-complement int) and its handle. lbvh_pairs.comp reads it per leaf id.
// total: 16 bytes
struct ProxySlot {
    uint category;
    uint mask;
    uint group;
    uint handle;
};

// lbvh_pairs.comp push constant `flags` (see the shader).
BP_CONST kPairsProxies = 1u;  // filter by ProxySlot and write handles
BP_CONST kPairsCross = 2u;    // query leaves against a second tree of pc.offset leaves
BP_CONST kPairsAppend = 4u;   // continue the status's pair count; count no visits
// write each pair (i, j), i < j, as the 64-bit sort key i << b | j (low word first), b =
// pc.key_words in 1..31 (gpu::MovingScene's pair keys)
BP_CONST kPairsKeys = 8u;

// Split tree bindings (shaders/lbvh/tree_parts.glsl): a tree's LbvhNode array and its LbvhWideNode
// array may each be bound as up to kTreeParts storage descriptors when one descriptor cannot
// hold it (maxStorageBufferRange, at most 2^32 - 1 bytes on any device: 100M boxes need 9.6 GB
// of nodes). Part k of an array of elements of E bytes holds elements [k << s, (k + 1) << s),
// s = the largest shift with E << s <= maxStorageBufferRange (pc.node_shift for LbvhNode,
// pc.wide_shift for LbvhWideNode; gpu::part_shift). Four parts keep the cross pass's 4 x 4 + 5
// descriptors within the 32 push descriptors every device allows.
BP_CONST kTreeParts = 4u;

// Per-dispatch parameters of every LBVH and sort kernel; fields unused by a kernel are 0.
// total: 44 bytes
struct PushConstants {
    uint count;       // number of elements (boxes, keys, pairs...)
    uint capacity;    // capacity of the output buffer, where there is one; sort: digit mask
    uint shift;       // radix sort: bit offset of the digit within its key word
    uint key_word;    // radix sort: which key word (0 lo, 1 hi); codes: code kind; pairs: stack
    uint key_words;   // radix sort: words per key (1 or 2); pairs with kPairsKeys: key bits b
    uint tiles;       // number of tiles / workgroups in the whole problem
    uint offset;      // kernel-specific (count_args: max workgroups in x; one-sweep: the pass)
    uint flags;       // kernel-specific switches
    uint budget;      // bounded traversals: nodes an invocation expands per round (0: the most,
                      // kTraversalBudget; see "Bounded traversal")
    uint node_shift;  // split tree bindings: log2 of the LbvhNode per part (set by Kernel)
    uint wide_shift;  // split tree bindings: log2 of the LbvhWideNode per part (set by Kernel)
};

// Status of one bounded traversal (pairs, region queries or ray casts): its counters, the
// work queue sizes, and the indirect dispatch arguments of the next round (a VkDispatchIndirect-
// Command at byte 32, so the buffer needs VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT).
// count: pairs found, saturated at 0xffffffff (written when the traversal finishes; it is the
//   "count" every later kernel reads); total_lo / total_hi: the exact 64-bit number of pairs
//   (a 32-bit atomic counter and its carries), also beyond 2^32.
// flags: kTraversalIncomplete | kTraversalQueueOverflow | kTraversalCandidateOverflow; any
//   flag set means the results are not complete (grow the work queue, or record more rounds).
// queued[2]: items pushed to each queue in its round; candidates: ray-cast candidates appended.
// visits_lo / visits_hi: the traversal's work, the exact 64-bit number of internal nodes it
//   expanded (the root once per query, then every internal child it entered), the low word's
//   carries in visits_hi. All pairs (lbvh_pairs.glsl; the same whatever the budget, rounds or
//   order; gpu::MovingScene's policy reads it, frame_policy.comp), region queries (each of the
//   count and fill passes counts the same nodes into its own status; order-independent too)
//   and ray casts (exact when every ray finishes in round 0; with queued items the pruning by
//   the shared best hit makes it depend on timing). Not written by the resolve pass.
// resumed: the items the rounds after the first took from the queues (traversal_args.comp adds
//   each round's, saturating), so that a model of the traffic counts what resuming re-reads
//   (the all-pairs pass loads its group's leaves again).
// total: 64 bytes
struct TraversalStatus {
    uint count;
    uint total_lo;
    uint total_hi;
    uint flags;
    uint queued0;
    uint queued1;
    uint candidates;
    uint rounds;  // rounds recorded so far
    uvec4 args;   // x, y, z of the next round's VkDispatchIndirectCommand; w unused
    uint visits_lo;
    uint visits_hi;
    uint resumed;
    uint reserved1;
};

#ifdef __cplusplus
static_assert(sizeof(TraversalStatus) == 64 && offsetof(TraversalStatus, args) == 32 &&
              offsetof(TraversalStatus, visits_lo) == 48);
static_assert(sizeof(vec4) == 16 && sizeof(uvec4) == 16);
// lbvh_pairs.glsl: two members' masks in a uint's hits, a member in 3 bits of a queued item
static_assert(kPairGroup >= 1 && kPairGroup <= 8);
static_assert(sizeof(ProxySlot) == 16);
static_assert(sizeof(GpuBox) == 32 && offsetof(GpuBox, hi) == 16);
static_assert(sizeof(GpuBounds) == 32 && offsetof(GpuBounds, hi) == 16);
static_assert(sizeof(LbvhNode) == 48 && offsetof(LbvhNode, lo) == 16 &&
              offsetof(LbvhNode, hi) == 32);
static_assert(sizeof(LbvhWideNode) == 64 && offsetof(LbvhWideNode, link) == 48);
static_assert(sizeof(PushConstants) == 44 && offsetof(PushConstants, budget) == 32 &&
              offsetof(PushConstants, wide_shift) == 40);
#endif
#include "close.h"

#endif  // BROADPHASE_GPU_LAYOUT_H
