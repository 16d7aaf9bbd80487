// CPU twin of the GPU LBVH, step by step: centroid bounds -> space-filling-curve codes ->
// stable sort of (code, id) -> Karras 2012 hierarchy -> bottom-up bounds -> self-pairs.
//
// T. Karras, "Maximizing Parallelism in the Construction of BVHs, Octrees, and k-d Trees",
// HPG 2012: internal node i spans the sorted range found from the sign of
// delta(i, i+1) - delta(i, i-1), where delta is the common prefix length of codes, and of
// (code, index) when codes are equal (duplicates). Bounds are merged bottom-up as in
// C. Apetrei, "Fast and Simple Agglomerative LBVH Construction", 2014 (the second child to
// arrive merges). Every function here computes exactly what the matching shader computes, so
// tests compare GPU buffers with these results bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/gpu/layout/common.h"
#include "broadphase/structure.hpp"

namespace broadphase::lbvh {

using gpu_layout::LbvhNode;

using broadphase::CodeKind;  // broadphase/types.hpp, shared with gpu::Lbvh

/// Order-preserving map of floats to uints: a < b  <=>  float_to_ordered(a) < ... (b).
/// (bits ^ 0x80000000 for non-negative floats, ~bits for negative ones; -0 < +0.)
std::uint32_t float_to_ordered(float f);
float ordered_to_float(std::uint32_t u);

/// An empty slot (layout/common.h, "Empty slots"; gpu::ProxyScene's free slots): min.x > max.x,
/// written as min = +inf, max = -inf. It overlaps nothing, has no centroid, gets the empty code
/// (sorted after every real code) and is never refined; a node over empty slots alone has
/// area 0. Every function of the twin accepts such boxes as the GPU's build does.
inline bool empty_slot(const Box& b) {
    return b.min.x > b.max.x;
}

/// The bounds of a node as a Box.
inline Box node_box(const gpu_layout::LbvhNode& node) {
    return {{node.lo.x, node.lo.y, node.lo.z}, {node.hi.x, node.hi.y, node.hi.z}};
}

/// Bounds of the box centroids c = (min + max) * 0.5f, empty slots skipped. No centroid gives
/// lo = hi = 0.
Box centroid_bounds(std::span<const Box> boxes);

/// Quantisation of centroids to `bits` bits per axis:
/// q = min(uint32(float((c - origin) * scale)), 2^bits - 1) per axis, where one scale serves
/// all axes (cubic cells): scale = float(2^bits) * (1.0f / extent) with extent the largest of
/// hi - lo over the three axes, or 0 when that is 0.
struct Quantizer {
    Vec3 origin;
    Vec3 scale;
    std::uint32_t bits = 10;
    Quantizer(const Box& centroid_bounds, std::uint32_t bits);
    /// Quantised centroid of b (x, y, z), each in [0, 2^bits).
    void quantize(const Box& b, std::uint32_t q[3]) const;
};

/// Spreads the low 10 (or 21) bits of v so that there are two zero bits between each.
std::uint32_t expand_bits_10(std::uint32_t v);
std::uint64_t expand_bits_21(std::uint64_t v);
/// Interleaved code, x in the highest bit of each triple.
std::uint32_t morton30(const std::uint32_t q[3]);
std::uint64_t morton63(const std::uint32_t q[3]);
/// 3D Hilbert index of q (10 bits per axis), 30 bits.
std::uint32_t hilbert30(const std::uint32_t q[3]);

/// Codes of all boxes (30-bit kinds in the low bits). Bits of the code: 30 or 63.
std::vector<std::uint64_t> compute_codes(std::span<const Box> boxes, CodeKind kind);
int code_bits(CodeKind kind);

/// Stable sort of (code, id) by code: sorts `codes` in place and returns the ids in the same
/// order; equal codes keep ascending ids (what a stable LSD radix sort on the GPU gives).
std::vector<std::uint32_t> sort_codes(std::vector<std::uint64_t>& codes);

/// Adaptive codes. One grid over the centroid bounds collapses a dense cluster into a few
/// cells when a few boxes lie far away (bodies fallen 1e7 below a level, towns kilometres
/// apart): most of the cluster then shares one code, and the hierarchy splits runs of equal
/// codes by index, not by position, so every query visits much of the cluster. Refinement
/// turns sorted 30-bit codes (morton30, hilbert30) into 64-bit keys `code << 32 | second`:
/// when the longest run of equal codes holds kRefineRun boxes or more, `second` is the same
/// kind of 30-bit code of the box's centroid quantised (Quantizer, 10 bits per axis) in the
/// centroid bounds of its own run, and the keys are sorted again, stably; otherwise `second`
/// is 0 and the order stays. A run is thereby ordered by position inside its own bounds, one
/// level deep (a cluster inside a cluster inside a far-spread scene gets one refinement).
/// `codes` must hold sorted 30-bit codes and `ids` their ids (sort_codes). Returns true when
/// it re-coded. The GPU does the same (code_runs.comp, run_bounds.comp, refine_codes.comp).
inline constexpr std::uint32_t kRefineRun = gpu_layout::kRefineRun;
bool refine_codes(std::span<const Box> boxes, CodeKind kind, std::vector<std::uint64_t>& codes,
                  std::vector<std::uint32_t>& ids);

/// Sorted keys and ids of a build: compute_codes, sort_codes, then (refine and a 30-bit kind)
/// refine_codes. morton63 is not refined (its 63 bits leave no room for a second code).
struct SortedKeys {
    std::vector<std::uint64_t> codes;
    std::vector<std::uint32_t> ids;
    bool refined = false;  ///< the keys were re-coded and sorted again
};
SortedKeys sorted_keys(std::span<const Box> boxes, CodeKind kind, bool refine = true);

/// Karras hierarchy over n sorted codes: fills links of all 2n-1 nodes (bounds left zero).
/// Node layout as in layout/common.h. delta(i, j) = -1 outside [0, n), clz64(ci ^ cj) when the
/// codes differ, 64 + clz32(i ^ j) when they are equal. Split = last index with a longer common
/// prefix than the node's whole range, found by binary search as in the paper.
std::vector<LbvhNode> build_hierarchy(std::span<const std::uint64_t> sorted_codes,
                                      std::span<const std::uint32_t> sorted_ids);

/// Bottom-up bounds: leaves take their box, internal nodes the union of their children.
void compute_bounds(std::vector<LbvhNode>& nodes, std::span<const Box> boxes);

/// The tree of build_hierarchy + compute_bounds (equal bit for bit) in one bottom-up pass, as
/// shaders/lbvh/lbvh_build.comp does it (Apetrei 2014 with Karras's node numbering): each leaf
/// climbs; a node [l, r] is its parent's left child (split at r) when delta(r, r + 1) >
/// delta(l - 1, l) (-1 beyond the ends), else its right child (split at l - 1); the first
/// child to reach a split leaves its range end there and stops, the second knows the parent's
/// whole range, numbers it (r for a left child, l for a right child, 0 for the root), writes
/// its links and bounds and climbs on.
std::vector<LbvhNode> build_bottom_up(std::span<const std::uint64_t> sorted_codes,
                                      std::span<const std::uint32_t> sorted_ids,
                                      std::span<const Box> boxes);

/// The LbvhWideNode records of a built tree (layout/common.h): record i holds internal node i's
/// children, their bounds copied bit for bit from their nodes and their aux (leaf: box id,
/// internal: last sorted position). Empty for fewer than two leaves. What lbvh_build.comp and
/// lbvh_refit.comp write beside the nodes.
std::vector<gpu_layout::LbvhWideNode> wide_nodes(std::span<const LbvhNode> nodes);

/// Self-pairs traversal as the GPU does it (shaders/lbvh/lbvh_pairs.glsl): the sorted positions in
/// groups of gpu_layout::kPairGroup, each group's members tested against each other, then its
/// runs (a member farther from the run before it than either is wide begins the next) each
/// walked from the root with the union of their boxes, skipping subtrees whose last sorted
/// position is <= the group's last, each leaf reached tested against the run's members; so
/// each pair is found once (by the group of its earlier leaf). stats->nodes_visited counts the
/// internal nodes the walks expand, the root once per run: the GPU's visit count. Appends
/// (min id, max id) pairs in no particular order; with `filters`, only the pairs its
/// collides() allows (tested where each pair is found).
void self_pairs(std::span<const LbvhNode> nodes, std::span<const Box> boxes, std::vector<Pair>& out,
                QueryStats* stats = nullptr, const Structure* filters = nullptr);

/// Checks the tree: every leaf reached exactly once from the root, parent links consistent,
/// every node's bounds contain its children's, ranges consistent. The error (invariant_violated)
/// names the node.
Status validate_tree(std::span<const LbvhNode> nodes, std::span<const Box> boxes);

/// Builds the tree of `boxes` as the GPU does: sorted_keys, then build_bottom_up.
std::vector<LbvhNode> build_tree(std::span<const Box> boxes, CodeKind kind, bool refine = true);

/// The `lbvh` Structure (method name "lbvh"): the pipeline above, all queries by traversal.
class LbvhStructure final : public Structure {
public:
    explicit LbvhStructure(CodeKind kind = CodeKind::morton30, bool refine = true)
        : kind_(kind), refine_(refine) {}
    std::string_view name() const override { return "lbvh"; }
    BROADPHASE_STRUCTURE_OVERRIDES;
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;
    std::span<const LbvhNode> nodes() const { return nodes_; }

private:
    CodeKind kind_;
    bool refine_;
    std::vector<Box> boxes_;
    std::vector<LbvhNode> nodes_;
};

}  // namespace broadphase::lbvh
