// CPU twin of the GPU LBVH frustum cull; see lbvh_cull.hpp and shaders/lbvh_cull*.comp.
#include "lbvh_cull.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "broadphase/gpu_layout_cull.h"
#include "lbvh.hpp"

namespace broadphase::lbvh {

using gpu_layout::kCullChunk;

namespace {

// 0: outside one plane, 1: straddles, 2: inside all planes (lbvh_cull.comp classify).
int classify(const LbvhNode& node, const Frustum& f) {
    const float lo[3] = {node.lo.x, node.lo.y, node.lo.z};
    const float hi[3] = {node.hi.x, node.hi.y, node.hi.z};
    bool inside = true;
    for (const Plane& p : f.planes) {
        const float nrm[3] = {p.normal.x, p.normal.y, p.normal.z};
        float pv[3], nv[3];
        for (int a = 0; a < 3; ++a) {
            pv[a] = nrm[a] >= 0 ? hi[a] : lo[a];
            nv[a] = nrm[a] >= 0 ? lo[a] : hi[a];
        }
        const float mp = nrm[0] * pv[0] + nrm[1] * pv[1] + nrm[2] * pv[2] + p.d;
        const float mn = nrm[0] * nv[0] + nrm[1] * nv[1] + nrm[2] * nv[2] + p.d;
        if (mp < 0) return 0;
        if (mn < 0) inside = false;
    }
    return inside ? 2 : 1;
}

// The near-child-first order's node distance (lbvh_cull.comp node_distance2).
std::uint32_t node_distance2(const Vec3& e, const LbvhNode& node) {
    return cull_distance_key(e, {node.lo.x, node.lo.y, node.lo.z},
                             {node.hi.x, node.hi.y, node.hi.z});
}

// 2^-a as a float, for a in [-126, 127] (built from its bits, exact).
float power_of_two(int minus_a) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(127 + minus_a) << 23);
}

}  // namespace

std::vector<std::uint32_t> cull_chunk(std::span<const LbvhNode> nodes, std::uint32_t n,
                                      const Frustum& f, std::uint32_t chunk,
                                      std::vector<std::uint32_t>* ranks) {
    std::vector<std::uint32_t> out;
    if (ranks) ranks->clear();
    if (n == 0) return out;
    const bool want_ranks = ranks != nullptr;
    const std::uint32_t leaf_base = n - 1;
    const std::uint32_t lo = chunk * kCullChunk;
    const std::uint32_t hi = std::min(n, lo + kCullChunk) - 1;
    struct Entry {
        std::uint32_t node, first, rank;
        bool accepted;
    };
    std::vector<Entry> stack;
    std::uint32_t node = 0, first = 0, rank = 0;
    bool accepted = false;
    while (true) {
        const std::uint32_t last = nodes[node].link.w;
        bool descend = false;
        if (last >= lo && first <= hi) {
            const int cls = accepted ? 2 : classify(nodes[node], f);
            const bool leaf = node >= leaf_base;
            if ((cls == 2 && (leaf || !want_ranks)) || (cls == 1 && leaf)) {
                for (std::uint32_t p = std::max(first, lo); p <= std::min(last, hi); ++p) {
                    if (want_ranks) ranks->push_back(rank);
                    out.push_back(p);
                }
            } else if (cls != 0) {
                descend = true;
                accepted = cls == 2;
            }
        }
        if (descend) {
            const std::uint32_t left = nodes[node].link.x, right = nodes[node].link.y;
            const std::uint32_t split = nodes[left].link.w;
            std::uint32_t left_rank = rank, right_rank = rank;
            if (want_ranks) {
                if (node_distance2(f.eye, nodes[right]) < node_distance2(f.eye, nodes[left]))
                    left_rank += last - split;
                else
                    right_rank += split - first + 1;
            }
            if (split + 1 <= hi) stack.push_back({right, split + 1, right_rank, accepted});
            node = left;
            rank = left_rank;
        } else if (!stack.empty()) {
            node = stack.back().node;
            first = stack.back().first;
            rank = stack.back().rank;
            accepted = stack.back().accepted;
            stack.pop_back();
        } else {
            break;
        }
    }
    return out;
}

std::uint32_t cull_distance_key(const Vec3& e, const Vec3& lo, const Vec3& hi) {
    float g[3];
    for (int a = 0; a < 3; ++a) {
        const float below = lo[a] * 0.5f - e[a] * 0.5f;
        const float above = e[a] * 0.5f - hi[a] * 0.5f;
        g[a] = std::max(std::max(below, above), 0.0f);
    }
    const float m = std::max(std::max(g[0], g[1]), g[2]);
    if (!(m >= std::numeric_limits<float>::min())) return 0;
    // m in [2^(k-1), 2^k), k in [-125, 128]; 2^-k in two exact steps of at most 2^64 each.
    const int k = static_cast<int>(std::bit_cast<std::uint32_t>(m) >> 23) - 126;
    const int half = k >> 1;
    const float scale_a = power_of_two(-half), scale_b = power_of_two(half - k);
    float h[3];
    for (int a = 0; a < 3; ++a) h[a] = (g[a] * scale_a) * scale_b;
    const float s = h[0] * h[0] + h[1] * h[1] + h[2] * h[2];
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(s);
    const auto exponent = static_cast<std::uint32_t>(static_cast<int>(bits >> 23) + 2 * k + 126);
    return exponent << 23 | (bits & 0x7fffffu);
}

std::uint32_t near_first_rank(std::span<const LbvhNode> nodes, std::uint32_t n, const Vec3& eye,
                              std::uint32_t p) {
    const std::uint32_t leaf_base = n - 1;
    std::uint32_t node = 0, first = 0, rank = 0;
    while (node < leaf_base) {
        const std::uint32_t left = nodes[node].link.x, right = nodes[node].link.y;
        const std::uint32_t split = nodes[left].link.w;
        const bool right_nearer =
            node_distance2(eye, nodes[right]) < node_distance2(eye, nodes[left]);
        if (p <= split) {
            if (right_nearer) rank += nodes[node].link.w - split;
            node = left;
        } else {
            if (!right_nearer) rank += split - first + 1;
            first = split + 1;
            node = right;
        }
    }
    return rank;
}

std::vector<std::uint32_t> cull(std::span<const LbvhNode> nodes, std::uint32_t n, const Frustum& f,
                                CullOrder order) {
    std::vector<std::uint32_t> positions, ranks;
    const std::uint32_t chunks = (n + kCullChunk - 1) / kCullChunk;
    const bool approx = order == CullOrder::approx;
    for (std::uint32_t c = 0; c < chunks; ++c) {
        std::vector<std::uint32_t> chunk_ranks;
        std::vector<std::uint32_t> seen =
            cull_chunk(nodes, n, f, c, approx ? &chunk_ranks : nullptr);
        positions.insert(positions.end(), seen.begin(), seen.end());
        ranks.insert(ranks.end(), chunk_ranks.begin(), chunk_ranks.end());
    }
    std::vector<std::uint32_t> ids;
    ids.reserve(positions.size());
    if (order == CullOrder::approx) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> ranked;  // (rank, id)
        ranked.reserve(positions.size());
        for (std::size_t k = 0; k < positions.size(); ++k)
            ranked.push_back({ranks[k], nodes[n - 1 + positions[k]].link.x});
        std::sort(ranked.begin(), ranked.end());
        for (const auto& r : ranked) ids.push_back(r.second);
        return ids;
    }
    std::vector<std::uint64_t> keys;
    keys.reserve(positions.size());
    for (std::uint32_t p : positions) {
        const LbvhNode& leaf = nodes[n - 1 + p];
        const std::uint32_t key = cull_distance_key(f.eye, {leaf.lo.x, leaf.lo.y, leaf.lo.z},
                                                    {leaf.hi.x, leaf.hi.y, leaf.hi.z});
        keys.push_back(std::uint64_t(key) << 32 | leaf.link.x);
    }
    std::sort(keys.begin(), keys.end());
    for (std::uint64_t k : keys) ids.push_back(static_cast<std::uint32_t>(k));
    return ids;
}

}  // namespace broadphase::lbvh
