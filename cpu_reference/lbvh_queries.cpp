// CPU twins of the batched GPU LBVH queries: region (box / point) queries and closest-hit
// ray casts by stack traversal of a Karras 2012 tree, mirroring shaders/lbvh/lbvh_query.comp and
// shaders/lbvh/lbvh_raycast.comp statement for statement. See lbvh_queries.hpp. The shaders take a
// step's children (bounds, links, a leaf's box id) from the expanded node's LbvhWideNode; these
// read them from the children's LbvhNode records, of which the wide records are bit copies
// (lbvh::wide_nodes), so both visit the same nodes in the same order and find the same hits.
#include "lbvh_queries.hpp"

#include <array>
#include <cmath>
#include <limits>

#include "broadphase/gpu/layout/queries.h"
#include "lbvh.hpp"

namespace broadphase::lbvh {

using gpu_layout::kInvalidNode;
using gpu_layout::LbvhNode;

namespace {

std::uint32_t leaf_count(std::span<const LbvhNode> nodes) {
    return nodes.empty() ? 0u : static_cast<std::uint32_t>((nodes.size() + 1) / 2);
}

// a + |a| * slack, the upper bound a node's entry may reach and still be entered.
float slack_bound(float a) {
    return a + std::fabs(a) * gpu_layout::kRayNodeSlack + 1e-30f;
}

}  // namespace

void query_region(std::span<const LbvhNode> nodes, const Box& region,
                  std::vector<std::uint32_t>& out, std::uint64_t* expanded) {
    const std::uint32_t n = leaf_count(nodes);
    if (n == 0) return;
    if (n == 1) {
        if (overlaps(region, node_box(nodes[0]))) out.push_back(nodes[0].link.x);
        return;
    }
    const std::uint32_t leaf_base = n - 1;
    std::array<std::uint32_t, gpu_layout::kTraversalStack> stack;
    std::uint32_t top = 0;
    std::uint32_t node = 0;
    while (true) {
        if (expanded) ++*expanded;
        const std::uint32_t children[2] = {nodes[node].link.x, nodes[node].link.y};
        std::uint32_t descend = kInvalidNode;
        for (std::uint32_t child : children) {
            if (!overlaps(region, node_box(nodes[child]))) continue;
            if (child >= leaf_base) {
                out.push_back(nodes[child].link.x);
            } else if (descend == kInvalidNode) {
                descend = child;
            } else {
                stack[top++] = child;
            }
        }
        if (descend != kInvalidNode) {
            node = descend;
        } else if (top > 0) {
            node = stack[--top];
        } else {
            break;
        }
    }
}

bool ray_may_hit_node(const Ray& ray, const Box& box, float best_t, float& t_near) {
    t_near = 0.0f;
    float t_far = ray.tmax;
    if (!ray_box_slabs(ray, box, t_near, t_far)) return false;
    return !(t_near > slack_bound(t_far)) && !(t_near > slack_bound(best_t));
}

std::optional<RayHit> ray_cast_nodes(std::span<const LbvhNode> nodes, const Ray& ray,
                                     std::uint64_t* expanded) {
    const std::uint32_t n = leaf_count(nodes);
    if (n == 0) return std::nullopt;
    std::uint32_t best_id = kInvalidNode;
    float best_t = std::numeric_limits<float>::infinity();
    auto leaf = [&](const LbvhNode& nd) {
        const auto t = ray_box_entry(ray, node_box(nd));
        if (t && (*t < best_t || (*t == best_t && nd.link.x < best_id))) {
            best_t = *t;
            best_id = nd.link.x;
        }
    };
    if (n == 1) {
        leaf(nodes[0]);
    } else {
        const std::uint32_t leaf_base = n - 1;
        std::array<std::uint32_t, gpu_layout::kTraversalStack> stack;
        std::array<float, gpu_layout::kTraversalStack> stack_t;
        std::uint32_t top = 0;
        std::uint32_t node = 0;
        float t_root = 0;
        bool alive = ray_may_hit_node(ray, node_box(nodes[0]), best_t, t_root);
        while (alive) {
            if (expanded) ++*expanded;
            // Leaves are tested exactly at once; internal children that may hold a closer hit
            // are entered nearer first, the other deferred with its entry t.
            std::uint32_t cand[2] = {kInvalidNode, kInvalidNode};
            float cand_t[2] = {0, 0};
            std::uint32_t found = 0;
            const std::uint32_t children[2] = {nodes[node].link.x, nodes[node].link.y};
            for (std::uint32_t child : children) {
                if (child >= leaf_base) {
                    leaf(nodes[child]);
                    continue;
                }
                float t = 0;
                if (ray_may_hit_node(ray, node_box(nodes[child]), best_t, t)) {
                    cand[found] = child;
                    cand_t[found] = t;
                    ++found;
                }
            }
            if (found == 2) {
                const std::uint32_t near = cand_t[1] < cand_t[0] ? 1u : 0u;
                stack[top] = cand[1u - near];
                stack_t[top] = cand_t[1u - near];
                ++top;
                node = cand[near];
                continue;
            }
            if (found == 1) {
                node = cand[0];
                continue;
            }
            alive = false;
            while (top > 0) {
                --top;
                if (!(stack_t[top] > slack_bound(best_t))) {
                    node = stack[top];
                    alive = true;
                    break;
                }
            }
        }
    }
    if (best_id == kInvalidNode) return std::nullopt;
    return RayHit{best_id, best_t};
}

}  // namespace broadphase::lbvh
