// CPU twins of the moving-scene kernels: refit, SAH cost, policy, sorted-pair difference
// (see lbvh_refit.hpp).
#include "lbvh_refit.hpp"

#include <algorithm>
#include <cmath>

namespace broadphase::lbvh {

void refit(std::vector<LbvhNode>& nodes, std::span<const Box> boxes) {
    if (!boxes.empty()) compute_bounds(nodes, boxes);
}

float node_area(const LbvhNode& node) {
    if (node.lo.x > node.hi.x) return 0.0f;  // only empty slots below (lbvh_sah.comp)
    float dx = node.hi.x - node.lo.x, dy = node.hi.y - node.lo.y, dz = node.hi.z - node.lo.z;
    return 2.0f * (dx * dy + dy * dz + dz * dx);
}

std::vector<float> sah_partials(std::span<const LbvhNode> nodes, std::uint32_t n) {
    constexpr std::uint32_t g = gpu_layout::kWorkgroupSize;
    std::uint32_t internal = n > 1 ? n - 1 : 0;
    std::uint32_t tiles = std::max<std::uint32_t>((internal + g - 1) / g, 1);
    std::vector<float> out(tiles + 1);
    std::vector<float> sums(g);
    for (std::uint32_t tile = 0; tile < tiles; ++tile) {
        for (std::uint32_t t = 0; t < g; ++t) {
            std::uint32_t i = tile * g + t;
            sums[t] = i < internal ? node_area(nodes[i]) : 0.0f;
        }
        for (std::uint32_t s = g / 2; s > 0; s >>= 1)
            for (std::uint32_t t = 0; t < s; ++t) sums[t] += sums[t + s];
        out[tile] = sums[0];
    }
    out[tiles] = internal > 0 ? node_area(nodes[0]) : 0.0f;
    return out;
}

SahSum sah_sum(std::span<const LbvhNode> nodes, std::uint32_t n) {
    constexpr std::uint32_t g = gpu_layout::kWorkgroupSize;
    std::vector<float> p = sah_partials(nodes, n);
    const std::size_t tiles = p.size() - 1;
    std::vector<float> sums(g, 0.0f);
    for (std::uint32_t t = 0; t < g; ++t)
        for (std::size_t k = t; k < tiles; k += g) sums[t] += p[k];
    for (std::uint32_t s = g / 2; s > 0; s >>= 1)
        for (std::uint32_t t = 0; t < s; ++t) sums[t] += sums[t + s];
    return {sums[0], p.back()};
}

bool rebuild_wanted(const SahSum& now, const SahSum& base, float rebuild_ratio) {
    const bool has_base = base.sum > 0 && base.root > 0;
    if (!has_base) return now.sum > 0 && now.root > 0;
    const float lhs = now.sum * base.root;
    const float rhs = (rebuild_ratio * base.sum) * now.root;
    return now.root > 0 && lhs > rhs;
}

TraversalWork pair_traversal_work(std::span<const LbvhNode> nodes, std::span<const Box> boxes) {
    TraversalWork work;
    if (boxes.size() < 2) return work;
    std::vector<Pair> pairs;
    QueryStats stats;
    self_pairs(nodes, boxes, pairs, &stats);
    work.visits = stats.nodes_visited;  // counted as the shader counts them
    work.pairs = pairs.size();
    return work;
}

bool work_rebuild_wanted(const TraversalWork& work, std::uint32_t n, WorkBase& base,
                         float work_ratio, double& ratio) {
    ratio = 1;
    const auto hi = static_cast<std::uint32_t>(work.visits >> 32);
    const auto lo = static_cast<std::uint32_t>(work.visits);
    const float visits = static_cast<float>(hi) * 4294967296.0f + static_cast<float>(lo);
    // The shader reads the traversal's pair count saturated at 2^32 - 1.
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(work.pairs, ~0u));
    const float load = static_cast<float>(n) + static_cast<float>(count);
    if (!(visits > 0)) return false;
    if (base.visits == 0) {
        base = {visits, load};
        return false;
    }
    ratio = (double(visits) / double(load)) / (double(base.visits) / double(base.load));
    const float lhs = visits * base.load;
    const float rhs = (work_ratio * base.visits) * load;
    return work_ratio > 0 && lhs > rhs;
}

std::vector<Pair> diff_sorted_pairs(std::span<const Pair> a, std::span<const Pair> b) {
    // pair_diff_append.comp: each element of A absent from B (binary search) is appended, in
    // no particular order on the GPU; then RadixSort and pair_unpack.comp order them.
    std::vector<Pair> out;
    for (const Pair& p : a) {
        auto it = std::lower_bound(b.begin(), b.end(), p);
        if (it == b.end() || !(*it == p)) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
}

void MovingTwin::reset(std::span<const Box> boxes) {
    n_ = static_cast<std::uint32_t>(boxes.size());
    nodes_ = build_tree(boxes, kind_);
    base_ = n_ > 1 ? sah_sum(nodes_, n_) : SahSum{};
    base_cost_ = base_.root > 0 ? double(base_.sum) / double(base_.root) : 0.0;
    ratio_ = 1;
    work_ratio_measured_ = 1;
    work_base_ = {};
    traversal_ = pair_traversal_work(nodes_, boxes);
}

bool MovingTwin::step(std::span<const Box> boxes) {
    ratio_ = 1;
    work_ratio_measured_ = 1;
    bool rebuild = policy_ == Policy::always_rebuild;
    if (!rebuild) {
        refit(nodes_, boxes);
        if (n_ > 1) {
            const SahSum now = sah_sum(nodes_, n_);
            const bool has_base = base_.sum > 0 && base_.root > 0;
            const bool has_cost = now.sum > 0 && now.root > 0;
            ratio_ = has_base ? (now.root > 0 ? (double(now.sum) / now.root) / base_cost_ : 0.0)
                              : (has_cost ? HUGE_VAL : 1.0);
            const bool by_cost = rebuild_wanted(now, base_, static_cast<float>(rebuild_ratio_));
            const bool by_work = work_rebuild_wanted(
                traversal_, n_, work_base_, static_cast<float>(work_ratio_), work_ratio_measured_);
            rebuild = policy_ == Policy::by_ratio && (by_cost || by_work);
        }
    }
    if (rebuild) {
        nodes_ = build_tree(boxes, kind_);
        base_ = n_ > 1 ? sah_sum(nodes_, n_) : SahSum{};
        base_cost_ = base_.root > 0 ? double(base_.sum) / double(base_.root) : 0.0;
        work_base_ = {};
    }
    traversal_ = pair_traversal_work(nodes_, boxes);
    return rebuild;
}

}  // namespace broadphase::lbvh
