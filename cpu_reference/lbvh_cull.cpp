// CPU twin of the GPU LBVH frustum cull; see lbvh_cull.hpp and shaders/lbvh_cull*.comp.
#include "lbvh_cull.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "broadphase/gpu/layout/cull.h"
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

// lbvh_cull.glsl node_occluded: the pyramid test, except in the early phase.
bool occluded_in_phase(const CullOcclusionTwin& o, const LbvhNode& node) {
    if (o.phase == gpu_layout::kOcclusionEarly) return false;
    return occluded(*o.pyramid, o.view_projection,
                    Box{{node.lo.x, node.lo.y, node.lo.z}, {node.hi.x, node.hi.y, node.hi.z}});
}

// lbvh_cull.glsl leaf_drawn: the phase's filter on a visible, unoccluded leaf.
bool leaf_drawn(CullOcclusionTwin& o, const LbvhNode& leaf) {
    if (o.phase == gpu_layout::kOcclusionSingle) return true;
    std::uint32_t& stamp = (*o.visibility)[leaf.link.x];
    const std::uint32_t seen = stamp, previous = o.frame - 1;
    if (o.phase == gpu_layout::kOcclusionEarly) return seen == previous;
    stamp = o.frame;
    return seen != previous;
}

// 2^-a as a float, for a in [-126, 127] (built from its bits, exact).
float power_of_two(int minus_a) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(127 + minus_a) << 23);
}

}  // namespace

std::vector<std::uint32_t> cull_chunk(std::span<const LbvhNode> nodes, std::uint32_t n,
                                      const Frustum& f, std::uint32_t chunk,
                                      std::vector<std::uint32_t>* ranks,
                                      CullOcclusionTwin* occlusion, std::uint64_t* expanded) {
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
            int cls = accepted ? 2 : classify(nodes[node], f);
            const bool leaf = node >= leaf_base;
            bool emit = (cls == 2 && (leaf || !want_ranks)) || (cls == 1 && leaf);
            bool down = !emit && cls != 0;
            if (occlusion) {
                ++occlusion->visits;
                if (cls != 0 && occluded_in_phase(*occlusion, nodes[node])) cls = 0;
                emit = cls != 0 && leaf && leaf_drawn(*occlusion, nodes[node]);
                down = cls != 0 && !leaf;
            }
            if (emit) {
                for (std::uint32_t p = std::max(first, lo); p <= std::min(last, hi); ++p) {
                    if (want_ranks) ranks->push_back(rank);
                    out.push_back(p);
                }
            } else if (down) {
                descend = true;
                accepted = cls == 2;
            }
        }
        if (descend) {
            if (expanded) ++*expanded;
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

std::vector<std::vector<std::uint32_t>> cull_chunk_views(std::span<const LbvhNode> nodes,
                                                         std::uint32_t n,
                                                         std::span<const Frustum> frusta,
                                                         std::uint32_t chunk, std::uint64_t* visits,
                                                         std::uint64_t* expanded) {
    const auto views = static_cast<std::uint32_t>(frusta.size());
    std::vector<std::vector<std::uint32_t>> out(views);
    if (n == 0) return out;
    const std::uint32_t leaf_base = n - 1;
    const std::uint32_t lo = chunk * kCullChunk;
    const std::uint32_t hi = std::min(n, lo + kCullChunk) - 1;
    struct Entry {
        std::uint32_t node, first, mask;
    };
    std::vector<Entry> stack;
    std::uint32_t node = 0, first = 0, mask = (1u << views) - 1;
    while (true) {
        const std::uint32_t last = nodes[node].link.w;
        std::uint32_t go = 0;
        if (last >= lo && first <= hi) {
            if (visits) ++*visits;
            const bool leaf = node >= leaf_base;
            for (std::uint32_t v = 0; v < views; ++v) {
                if (!(mask & (1u << v))) continue;
                const int cls = classify(nodes[node], frusta[v]);
                if (cls == 2 || (cls == 1 && leaf)) {
                    for (std::uint32_t p = std::max(first, lo); p <= std::min(last, hi); ++p)
                        out[v].push_back(p);
                } else if (cls == 1) {
                    go |= 1u << v;
                }
            }
        }
        if (go != 0) {
            if (expanded) ++*expanded;
            const std::uint32_t left = nodes[node].link.x, right = nodes[node].link.y;
            const std::uint32_t split = nodes[left].link.w;
            if (split + 1 <= hi) stack.push_back({right, split + 1, go});
            node = left;
            mask = go;
        } else if (!stack.empty()) {
            node = stack.back().node;
            first = stack.back().first;
            mask = stack.back().mask;
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

std::vector<std::uint32_t> cull_positions(std::span<const LbvhNode> nodes, std::uint32_t n,
                                          const Frustum& f, CullOrder order,
                                          CullOcclusionTwin* occlusion, std::uint64_t* expanded) {
    std::vector<std::uint32_t> positions, ranks;
    if (expanded) *expanded = 0;
    const std::uint32_t chunks = (n + kCullChunk - 1) / kCullChunk;
    const bool approx = order == CullOrder::approx;
    for (std::uint32_t c = 0; c < chunks; ++c) {
        std::vector<std::uint32_t> chunk_ranks;
        std::vector<std::uint32_t> seen =
            cull_chunk(nodes, n, f, c, approx ? &chunk_ranks : nullptr, occlusion, expanded);
        positions.insert(positions.end(), seen.begin(), seen.end());
        ranks.insert(ranks.end(), chunk_ranks.begin(), chunk_ranks.end());
    }
    // (key, position) pairs: approx keys are the (distinct) ranks; exact keys the distance key
    // above the id, as the GPU's 64-bit sort key.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed;
    keyed.reserve(positions.size());
    for (std::size_t k = 0; k < positions.size(); ++k) {
        const LbvhNode& leaf = nodes[n - 1 + positions[k]];
        if (approx) {
            keyed.push_back({ranks[k], positions[k]});
        } else {
            const std::uint32_t key = cull_distance_key(f.eye, {leaf.lo.x, leaf.lo.y, leaf.lo.z},
                                                        {leaf.hi.x, leaf.hi.y, leaf.hi.z});
            keyed.push_back({std::uint64_t(key) << 32 | leaf.link.x, positions[k]});
        }
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::uint32_t> ordered;
    ordered.reserve(keyed.size());
    for (const auto& k : keyed) ordered.push_back(k.second);
    return ordered;
}

std::vector<std::uint32_t> cull(std::span<const LbvhNode> nodes, std::uint32_t n, const Frustum& f,
                                CullOrder order, CullOcclusionTwin* occlusion,
                                std::uint64_t* expanded) {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t p : cull_positions(nodes, n, f, order, occlusion, expanded))
        ids.push_back(nodes[n - 1 + p].link.x);
    return ids;
}

std::uint32_t switch_key(float distance) {
    const Vec3 point{distance, 0, 0};
    return cull_distance_key({0, 0, 0}, point, point);
}

std::uint32_t select_lod(const gpu_layout::CullMesh& mesh, std::uint32_t key) {
    const std::uint32_t count = std::min(mesh.info.x, gpu_layout::kMaxMeshLods);
    std::uint32_t lod = 0;
    for (std::uint32_t k = 1; k < count; ++k)
        if (key >= mesh.lods[k].w) lod = k;
    return lod;
}

CullDraws cull_draws(std::span<const LbvhNode> nodes, std::uint32_t n, const Frustum& f,
                     CullOrder order, std::span<const gpu_layout::CullMesh> table,
                     std::span<const std::uint32_t> mesh_ids, bool grouped, std::uint32_t capacity,
                     std::uint32_t fill) {
    using gpu_layout::kDrawCommandWords;
    const auto mesh_count = static_cast<std::uint32_t>(table.size());
    CullDraws out;
    out.ids.assign(capacity, fill);
    out.commands.assign(std::size_t(capacity) * kDrawCommandWords, fill);
    out.lods.assign(capacity, fill);
    const std::vector<std::uint32_t> ordered = cull_positions(nodes, n, f, order);
    const auto total = static_cast<std::uint32_t>(ordered.size());
    // lbvh_cull_emit_lods.comp write_draw.
    auto write = [&](std::uint32_t slot, std::uint32_t p, std::uint32_t m) {
        const LbvhNode& leaf = nodes[n - 1 + p];
        const std::uint32_t id = leaf.link.x;
        out.ids[slot] = id;
        std::uint32_t* c = &out.commands[std::size_t(slot) * kDrawCommandWords];
        std::uint32_t lod = gpu_layout::kNoLod;
        if (m < mesh_count) {
            lod = select_lod(table[m], cull_distance_key(f.eye, {leaf.lo.x, leaf.lo.y, leaf.lo.z},
                                                         {leaf.hi.x, leaf.hi.y, leaf.hi.z}));
            const auto& l = table[m].lods[lod];
            c[0] = l.x;
            c[1] = 1;
            c[2] = l.y;
            c[3] = l.z;
        } else {
            c[0] = c[1] = c[2] = c[3] = 0;
        }
        c[4] = id;
        out.lods[slot] = lod;
    };
    out.draw_count[1] = total;
    if (!grouped) {
        out.draw_count[0] = std::min(total, capacity);
        for (std::uint32_t i = 0; i < out.draw_count[0]; ++i)
            write(i, ordered[i], mesh_ids[nodes[n - 1 + ordered[i]].link.x]);
        return out;
    }
    // Grouped: each mesh's instances in the cull's order (a stable partition by mesh key).
    std::vector<std::vector<std::uint32_t>> groups(mesh_count + 1);
    for (std::uint32_t p : ordered)
        groups[std::min(mesh_ids[nodes[n - 1 + p].link.x], mesh_count)].push_back(p);
    out.group_counts.assign(2ull * mesh_count + 1, 0);
    for (std::uint32_t m = 0; m < mesh_count; ++m) {
        const std::uint32_t first = table[m].info.y;
        const std::uint32_t room =
            first >= capacity ? 0 : std::min(table[m].info.z, capacity - first);
        const auto run = static_cast<std::uint32_t>(groups[m].size());
        const std::uint32_t stored = std::min(run, room);
        for (std::uint32_t r = 0; r < stored; ++r) write(first + r, groups[m][r], m);
        out.group_counts[m] = stored;
        out.group_counts[mesh_count + m] = run;
        out.draw_count[0] += stored;
    }
    out.group_counts[2ull * mesh_count] = static_cast<std::uint32_t>(groups[mesh_count].size());
    return out;
}

}  // namespace broadphase::lbvh
