// CPU twins of the moving-scene kernels (gpu/frames/frame_recorder.cpp): refit of an LBVH for
// new box positions (leaves take their box's bounds, bottom-up union; lbvh_refit.comp, one pass),
// its normalised surface-area cost (MacDonald & Booth 1990, as the refit
// quality measure of Kopta et al., "Fast, Effective BVH Updates for Animated Scenes", I3D
// 2012; lbvh_sah.comp), the all-pairs traversal's work (lbvh_pairs.comp's visit count), the
// refit-or-rebuild policy, and the difference of sorted pair lists
// (pair_diff_append.comp + radix sort + pair_unpack.comp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lbvh.hpp"

namespace broadphase::lbvh {

/// Refits a built tree in place for new box positions (same count, same ids).
void refit(std::vector<LbvhNode>& nodes, std::span<const Box> boxes);

/// Surface area 2 (dx dy + dy dz + dz dx) of a node, in float as the shader computes it.
float node_area(const LbvhNode& node);

/// Per-workgroup partial sums of the internal nodes' areas (kWorkgroupSize nodes each, same
/// shared-memory tree reduction as lbvh_sah.comp), then the root's area as the last element.
std::vector<float> sah_partials(std::span<const LbvhNode> nodes, std::uint32_t n);

/// The SAH sum and root area as frame_policy.comp reduces sah_partials: invocation t of 256
/// adds partials t, t + 256, ... in float, then a shared-memory tree reduction.
struct SahSum {
    float sum = 0;
    float root = 0;
};
SahSum sah_sum(std::span<const LbvhNode> nodes, std::uint32_t n);

/// frame_policy.comp's decision: rebuild when sum * base.root > (ratio * base.sum) * root
/// (float products), or when the base has no cost and `now` has one.
bool rebuild_wanted(const SahSum& now, const SahSum& base, float rebuild_ratio);

/// The work of lbvh_pairs.comp's all-pairs traversal of a tree: the internal nodes it expands
/// (the root once per sorted position, then every internal child entered: not skipped as
/// wholly at or before the position, and overlapping the position's box) and the pairs found.
struct TraversalWork {
    std::uint64_t visits = 0;
    std::uint64_t pairs = 0;
};
TraversalWork pair_traversal_work(std::span<const LbvhNode> nodes, std::span<const Box> boxes);

/// The per-frame state of frame_policy.comp's work rule (FrameStatus base_visits, base_load).
struct WorkBase {
    float visits = 0;  ///< 0: to be measured by the next traversal
    float load = 0;
};

/// frame_policy.comp's work rule for the previous frame's traversal `work` of n boxes: when
/// `base` is not measured yet it becomes (visits, n + pairs) and the rule says no; otherwise
/// rebuild when visits * base.load > (work_ratio * base.visits) * (n + pairs) (float
/// products, each term converted as the shader converts it). `ratio` receives the measured
/// ratio (1 while not measured).
bool work_rebuild_wanted(const TraversalWork& work, std::uint32_t n, WorkBase& base,
                         float work_ratio, double& ratio);

/// A \ B of two ascending pair lists as the GPU does it: every element of A that a binary
/// search does not find in B, then sorted. Equals std::set_difference.
std::vector<Pair> diff_sorted_pairs(std::span<const Pair> a, std::span<const Pair> b);

/// The refit-or-rebuild decision of gpu::MovingScene (frame_policy.comp) over the CPU twin.
class MovingTwin {
public:
    enum class Policy { always_refit, always_rebuild, by_ratio };
    MovingTwin(CodeKind kind, Policy policy, double rebuild_ratio, double work_ratio = 2.0)
        : kind_(kind), policy_(policy), rebuild_ratio_(rebuild_ratio), work_ratio_(work_ratio) {}
    /// Builds the tree for the first frame and measures its pair traversal.
    void reset(std::span<const Box> boxes);
    /// One frame: refits (and measures the SAH ratio and the previous traversal's work ratio)
    /// or rebuilds, then measures the new tree's pair traversal; true when it rebuilt.
    bool step(std::span<const Box> boxes);
    double ratio() const { return ratio_; }
    double work_ratio() const { return work_ratio_measured_; }
    /// The pair traversal of the current tree (measured by reset and step).
    const TraversalWork& traversal() const { return traversal_; }
    double build_cost() const { return base_cost_; }
    std::span<const LbvhNode> nodes() const { return nodes_; }

private:
    CodeKind kind_;
    Policy policy_;
    double rebuild_ratio_, work_ratio_;
    std::vector<LbvhNode> nodes_;
    std::uint32_t n_ = 0;
    SahSum base_;
    WorkBase work_base_;
    TraversalWork traversal_;
    double base_cost_ = 0, ratio_ = 1, work_ratio_measured_ = 1;
};

}  // namespace broadphase::lbvh
