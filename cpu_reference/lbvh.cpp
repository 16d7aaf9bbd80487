// CPU twin of the GPU LBVH: space-filling-curve codes (Morton; Hilbert after J. Skilling,
// "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004), a stable sort of (code, id),
// the hierarchy of T. Karras, "Maximizing Parallelism in the Construction of BVHs, Octrees,
// and k-d Trees" (HPG 2012), bottom-up bounds as in C. Apetrei, "Fast and Simple Agglomerative
// LBVH Construction" (2014), and stack-based traversals. See lbvh.hpp for the exact rules.
#include "lbvh.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <string>
#include <utility>

#include "best_first.hpp"
#include "broadphase/scene.hpp"

namespace broadphase::lbvh {

using gpu_layout::kInvalidNode;
using gpu_layout::uvec4;
using gpu_layout::vec4;

namespace {

// A Karras tree over (code, index) keys of at most 64 + 32 bits has at most 96 internal
// levels (each level lengthens the common prefix), so a traversal that pushes one child and
// descends into the other never holds more than that many entries.
constexpr std::size_t kStackSize = gpu_layout::kTraversalStack + 4;

vec4 to_vec4(const Vec3& v) {
    return {v.x, v.y, v.z, 0.0f};
}

bool is_leaf(std::uint32_t node, std::uint32_t n) {
    return node + 1 >= n;
}

Error tree_error(std::uint32_t node, const std::string& what) {
    return Error{ErrorCode::invariant_violated, "lbvh node " + std::to_string(node) + ": " + what};
}

// Karras' delta: common prefix length of the keys (code, index) at sorted positions i and j.
struct PrefixLength {
    std::span<const std::uint64_t> codes;

    int operator()(std::int64_t i, std::int64_t j) const {
        const auto n = static_cast<std::int64_t>(codes.size());
        if (j < 0 || j >= n) return -1;
        const std::uint64_t ci = codes[static_cast<std::size_t>(i)];
        const std::uint64_t cj = codes[static_cast<std::size_t>(j)];
        if (ci != cj) return std::countl_zero(ci ^ cj);
        return 64 + std::countl_zero(static_cast<std::uint32_t>(i) ^ static_cast<std::uint32_t>(j));
    }
};

// Generic stack traversal: descends into nodes for which `enter(node_box)` holds and calls
// `leaf(box id)` for each leaf reached. Children are pushed right first so left is visited first.
template <class Enter, class Leaf>
void traverse(std::span<const LbvhNode> nodes, QueryStats& stats, Enter&& enter, Leaf&& leaf) {
    if (nodes.empty()) return;
    const auto n = static_cast<std::uint32_t>((nodes.size() + 1) / 2);
    std::array<std::uint32_t, kStackSize> stack;
    std::size_t top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const std::uint32_t node = stack[--top];
        const LbvhNode& nd = nodes[node];
        const bool leaf_node = is_leaf(node, n);
        if (leaf_node) ++stats.box_tests;
        if (!enter(nd)) continue;
        if (leaf_node) {
            ++stats.leaves_visited;
            leaf(nd.link.x);
        } else {
            ++stats.nodes_visited;
            stack[top++] = nd.link.y;
            stack[top++] = nd.link.x;
        }
    }
}

}  // namespace

std::uint32_t float_to_ordered(float f) {
    const auto bits = std::bit_cast<std::uint32_t>(f);
    return (bits & 0x80000000u) ? ~bits : (bits ^ 0x80000000u);
}

float ordered_to_float(std::uint32_t u) {
    const std::uint32_t bits = (u & 0x80000000u) ? (u ^ 0x80000000u) : ~u;
    return std::bit_cast<float>(bits);
}

Box centroid_bounds(std::span<const Box> boxes) {
    // Empty slots (lbvh::empty_slot) have no centroid: skipped.
    auto first =
        std::find_if(boxes.begin(), boxes.end(), [](const Box& b) { return !empty_slot(b); });
    if (first == boxes.end()) return Box{};
    Box bounds;
    for (int axis = 0; axis < 3; ++axis) {
        const float c = (first->min[axis] + first->max[axis]) * 0.5f;
        bounds.min[axis] = c;
        bounds.max[axis] = c;
    }
    for (const Box& b : boxes) {
        if (empty_slot(b)) continue;
        for (int axis = 0; axis < 3; ++axis) {
            const float c = (b.min[axis] + b.max[axis]) * 0.5f;
            bounds.min[axis] = std::min(bounds.min[axis], c);
            bounds.max[axis] = std::max(bounds.max[axis], c);
        }
    }
    return bounds;
}

Quantizer::Quantizer(const Box& bounds, std::uint32_t bits_per_axis) : bits(bits_per_axis) {
    origin = bounds.min;
    float largest = 0.0f;
    for (int axis = 0; axis < 3; ++axis)
        largest = std::max(largest, bounds.max[axis] - bounds.min[axis]);
    const float common = largest > 0.0f ? float(1u << bits) * (1.0f / largest) : 0.0f;
    scale = {common, common, common};
}

void Quantizer::quantize(const Box& b, std::uint32_t q[3]) const {
    const std::uint32_t max_q = (1u << bits) - 1u;
    for (int axis = 0; axis < 3; ++axis) {
        const float c = (b.min[axis] + b.max[axis]) * 0.5f;
        const float t = (c - origin[axis]) * scale[axis];
        // min(uint32(t), max_q) for every finite t >= 0, written so that the float-to-int
        // conversion is always defined (t is NaN or infinite only when 1 / extent overflows).
        q[axis] = t >= float(max_q) ? max_q : (t > 0.0f ? static_cast<std::uint32_t>(t) : 0u);
    }
}

std::uint32_t expand_bits_10(std::uint32_t v) {
    v &= 0x3ffu;
    v = (v * 0x00010001u) & 0xff0000ffu;
    v = (v * 0x00000101u) & 0x0f00f00fu;
    v = (v * 0x00000011u) & 0xc30c30c3u;
    v = (v * 0x00000005u) & 0x49249249u;
    return v;
}

std::uint64_t expand_bits_21(std::uint64_t v) {
    v &= 0x1fffffull;
    v = (v | (v << 32)) & 0x001f00000000ffffull;
    v = (v | (v << 16)) & 0x001f0000ff0000ffull;
    v = (v | (v << 8)) & 0x100f00f00f00f00full;
    v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
    v = (v | (v << 2)) & 0x1249249249249249ull;
    return v;
}

std::uint32_t morton30(const std::uint32_t q[3]) {
    return (expand_bits_10(q[0]) << 2) | (expand_bits_10(q[1]) << 1) | expand_bits_10(q[2]);
}

std::uint64_t morton63(const std::uint32_t q[3]) {
    return (expand_bits_21(q[0]) << 2) | (expand_bits_21(q[1]) << 1) | expand_bits_21(q[2]);
}

std::uint32_t hilbert30(const std::uint32_t q[3]) {
    // Skilling's AxesToTranspose with b = 10 bits and n = 3 axes.
    constexpr std::uint32_t kTopBit = 1u << 9;
    std::uint32_t x[3] = {q[0] & 0x3ffu, q[1] & 0x3ffu, q[2] & 0x3ffu};
    // Inverse undo.
    for (std::uint32_t bit = kTopBit; bit > 1; bit >>= 1) {
        const std::uint32_t low = bit - 1;
        for (int i = 0; i < 3; ++i) {
            if (x[i] & bit) {
                x[0] ^= low;  // invert
            } else {
                const std::uint32_t t = (x[0] ^ x[i]) & low;  // exchange
                x[0] ^= t;
                x[i] ^= t;
            }
        }
    }
    // Gray encode.
    x[1] ^= x[0];
    x[2] ^= x[1];
    std::uint32_t t = 0;
    for (std::uint32_t bit = kTopBit; bit > 1; bit >>= 1) {
        if (x[2] & bit) t ^= bit - 1;
    }
    x[0] ^= t;
    x[1] ^= t;
    x[2] ^= t;
    // The transposed form, read bit plane by bit plane with x[0] highest, is the index.
    return morton30(x);
}

int code_bits(CodeKind kind) {
    return kind == CodeKind::morton63 ? 63 : 30;
}

std::vector<std::uint64_t> compute_codes(std::span<const Box> boxes, CodeKind kind) {
    const Quantizer quantizer(centroid_bounds(boxes), kind == CodeKind::morton63 ? 21u : 10u);
    std::vector<std::uint64_t> codes(boxes.size());
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        if (empty_slot(boxes[i])) {
            codes[i] = kind == CodeKind::morton63 ? ~std::uint64_t{0} : gpu_layout::kEmptyCode30;
            continue;
        }
        std::uint32_t q[3];
        quantizer.quantize(boxes[i], q);
        switch (kind) {
            case CodeKind::morton30:
                codes[i] = morton30(q);
                break;
            case CodeKind::morton63:
                codes[i] = morton63(q);
                break;
            case CodeKind::hilbert30:
                codes[i] = hilbert30(q);
                break;
        }
    }
    return codes;
}

std::vector<std::uint32_t> sort_codes(std::vector<std::uint64_t>& codes) {
    // Sorting (code, id) lexicographically equals a stable sort by code.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
        keyed[i] = {codes[i], static_cast<std::uint32_t>(i)};
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::uint32_t> ids(codes.size());
    for (std::size_t i = 0; i < keyed.size(); ++i) {
        codes[i] = keyed[i].first;
        ids[i] = keyed[i].second;
    }
    return ids;
}

namespace {

// The kind's 30-bit code of quantised coordinates.
std::uint32_t code30(CodeKind kind, const std::uint32_t q[3]) {
    return kind == CodeKind::hilbert30 ? hilbert30(q) : morton30(q);
}

}  // namespace

bool refine_codes(std::span<const Box> boxes, CodeKind kind, std::vector<std::uint64_t>& codes,
                  std::vector<std::uint32_t>& ids) {
    const std::size_t n = codes.size();
    // Runs of equal codes: [start, end) in sorted order. The empty slots' run is never
    // refined, and its boxes keep 0 as their second code.
    std::size_t longest = 0;
    for (std::size_t start = 0, end = 0; start < n; start = end) {
        end = start + 1;
        while (end < n && codes[end] == codes[start]) ++end;
        if (codes[start] != gpu_layout::kEmptyCode30) longest = std::max(longest, end - start);
    }
    if (longest < kRefineRun) {
        for (std::uint64_t& c : codes) c <<= 32;
        return false;
    }
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed(n);
    for (std::size_t start = 0, end = 0; start < n; start = end) {
        end = start + 1;
        while (end < n && codes[end] == codes[start]) ++end;
        if (codes[start] == gpu_layout::kEmptyCode30) {
            for (std::size_t p = start; p < end; ++p) keyed[p] = {codes[p] << 32, ids[p]};
            continue;
        }
        Box bounds;
        for (std::size_t p = start; p < end; ++p) {
            const Box& b = boxes[ids[p]];
            for (int axis = 0; axis < 3; ++axis) {
                const float c = (b.min[axis] + b.max[axis]) * 0.5f;
                if (p == start || c < bounds.min[axis]) bounds.min[axis] = c;
                if (p == start || c > bounds.max[axis]) bounds.max[axis] = c;
            }
        }
        // The GPU reduces the bounds as order-preserving uints, where -0 < +0; the
        // quantisation below gives the same cells for either zero, so no care is needed.
        const Quantizer quantizer(bounds, 10);
        for (std::size_t p = start; p < end; ++p) {
            std::uint32_t q[3];
            quantizer.quantize(boxes[ids[p]], q);
            keyed[p] = {codes[p] << 32 | code30(kind, q), ids[p]};
        }
    }
    // (key, id) lexicographically: a stable sort of keys that were in (code, id) order.
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t p = 0; p < n; ++p) {
        codes[p] = keyed[p].first;
        ids[p] = keyed[p].second;
    }
    return true;
}

SortedKeys sorted_keys(std::span<const Box> boxes, CodeKind kind, bool refine) {
    SortedKeys keys;
    keys.codes = compute_codes(boxes, kind);
    keys.ids = sort_codes(keys.codes);
    if (refine && kind != CodeKind::morton63) {
        keys.refined = refine_codes(boxes, kind, keys.codes, keys.ids);
    }
    return keys;
}

std::vector<LbvhNode> build_tree(std::span<const Box> boxes, CodeKind kind, bool refine) {
    if (boxes.empty()) return {};
    const SortedKeys keys = sorted_keys(boxes, kind, refine);
    return build_bottom_up(keys.codes, keys.ids, boxes);
}

std::vector<LbvhNode> build_bottom_up(std::span<const std::uint64_t> sorted_codes,
                                      std::span<const std::uint32_t> sorted_ids,
                                      std::span<const Box> boxes) {
    const auto n = static_cast<std::int64_t>(sorted_codes.size());
    if (n == 0) return {};
    std::vector<LbvhNode> nodes(static_cast<std::size_t>(2 * n - 1), LbvhNode{});
    const auto leaf_node = [n](std::int64_t p) { return static_cast<std::uint32_t>(n - 1 + p); };
    const PrefixLength delta{sorted_codes};
    // slots[s]: 0 until the first child of the node split at s arrives, then its range's far
    // end + 1 (the shader's atomicExchange on a zeroed buffer).
    std::vector<std::uint32_t> slots(static_cast<std::size_t>(n - 1), 0);
    for (std::int64_t p = 0; p < n; ++p) {
        const std::uint32_t leaf = leaf_node(p);
        const auto pos = static_cast<std::uint32_t>(p);
        const std::uint32_t id = sorted_ids[static_cast<std::size_t>(p)];
        nodes[leaf].link = uvec4{id, pos, n == 1 ? kInvalidNode : 0u, pos};
        nodes[leaf].lo = to_vec4(boxes[id].min);
        nodes[leaf].hi = to_vec4(boxes[id].max);
        // The node's range [l, r] and the prefix lengths it shares with its outer neighbours.
        std::int64_t l = p, r = p;
        int below = delta(l, l - 1), above = delta(r, r + 1);  // delta checks its 2nd index
        while (l != 0 || r != n - 1) {
            // The parent extends towards the neighbour of the longer common prefix (-1 beyond
            // the ends): to the right, split at r (this node is its left child), or to the
            // left, split at l - 1.
            const bool left_child = above > below;
            const std::int64_t split = left_child ? r : l - 1;
            const auto mine = static_cast<std::uint32_t>(left_child ? l : r);
            const std::uint32_t other =
                std::exchange(slots[static_cast<std::size_t>(split)], mine + 1);
            if (other == 0) break;  // the first arrival; the sibling finishes the parent
            if (left_child) {
                r = other - 1;
                above = delta(r, r + 1);
            } else {
                l = other - 1;
                below = delta(l, l - 1);
            }
            // Karras numbering: an internal node is numbered by the end of its range at its
            // parent's split (a left child by r, a right child by l), the root 0.
            const std::uint32_t left =
                l == split ? leaf_node(split) : static_cast<std::uint32_t>(split);
            const std::uint32_t right =
                r == split + 1 ? leaf_node(split + 1) : static_cast<std::uint32_t>(split + 1);
            const bool root = l == 0 && r == n - 1;
            const auto parent = static_cast<std::uint32_t>(root ? 0 : above > below ? r : l);
            LbvhNode& nd = nodes[parent];
            nd.link.x = left;
            nd.link.y = right;
            nd.link.w = static_cast<std::uint32_t>(r);
            if (root) nd.link.z = kInvalidNode;
            nodes[left].link.z = parent;
            nodes[right].link.z = parent;
            const LbvhNode& a = nodes[left];
            const LbvhNode& c = nodes[right];
            nd.lo = {std::min(a.lo.x, c.lo.x), std::min(a.lo.y, c.lo.y), std::min(a.lo.z, c.lo.z),
                     0.0f};
            nd.hi = {std::max(a.hi.x, c.hi.x), std::max(a.hi.y, c.hi.y), std::max(a.hi.z, c.hi.z),
                     0.0f};
        }
    }
    return nodes;
}

std::vector<LbvhNode> build_hierarchy(std::span<const std::uint64_t> sorted_codes,
                                      std::span<const std::uint32_t> sorted_ids) {
    const auto n = static_cast<std::int64_t>(sorted_codes.size());
    if (n == 0) return {};
    std::vector<LbvhNode> nodes(static_cast<std::size_t>(2 * n - 1), LbvhNode{});
    const auto leaf_node = [n](std::int64_t p) { return static_cast<std::uint32_t>(n - 1 + p); };
    for (std::int64_t p = 0; p < n; ++p) {
        const auto pos = static_cast<std::uint32_t>(p);
        nodes[leaf_node(p)].link =
            uvec4{sorted_ids[static_cast<std::size_t>(p)], pos, kInvalidNode, pos};
    }
    const PrefixLength delta{sorted_codes};
    for (std::int64_t i = 0; i + 1 < n; ++i) {
        // Direction of the range and the prefix length the range must exceed.
        const int d = delta(i, i + 1) - delta(i, i - 1) > 0 ? 1 : -1;
        const int delta_min = delta(i, i - d);
        // Upper bound of the range length, then binary search for the other end j.
        std::int64_t l_max = 2;
        while (delta(i, i + l_max * d) > delta_min) l_max *= 2;
        std::int64_t l = 0;
        for (std::int64_t t = l_max / 2; t >= 1; t /= 2) {
            if (delta(i, i + (l + t) * d) > delta_min) l += t;
        }
        const std::int64_t j = i + l * d;
        // Split: the last position (from i towards j) sharing more than the range's prefix.
        const int delta_node = delta(i, j);
        std::int64_t s = 0;
        std::int64_t t = l;
        do {
            t = (t + 1) / 2;
            if (delta(i, i + (s + t) * d) > delta_node) s += t;
        } while (t > 1);
        const std::int64_t gamma = i + s * d + std::min(d, 0);

        const std::uint32_t left =
            std::min(i, j) == gamma ? leaf_node(gamma) : static_cast<std::uint32_t>(gamma);
        const std::uint32_t right = std::max(i, j) == gamma + 1
                                        ? leaf_node(gamma + 1)
                                        : static_cast<std::uint32_t>(gamma + 1);
        const auto self = static_cast<std::uint32_t>(i);
        nodes[self].link.x = left;
        nodes[self].link.y = right;
        nodes[self].link.w = static_cast<std::uint32_t>(std::max(i, j));
        nodes[left].link.z = self;
        nodes[right].link.z = self;
    }
    if (n >= 2) nodes[0].link.z = kInvalidNode;
    return nodes;
}

std::vector<gpu_layout::LbvhWideNode> wide_nodes(std::span<const LbvhNode> nodes) {
    const std::size_t n = (nodes.size() + 1) / 2;
    std::vector<gpu_layout::LbvhWideNode> wide(n > 1 ? n - 1 : 0);
    for (std::size_t i = 0; i < wide.size(); ++i) {
        const LbvhNode& l = nodes[nodes[i].link.x];
        const LbvhNode& r = nodes[nodes[i].link.y];
        const auto aux = [&](std::uint32_t child) {
            return child >= n - 1 ? nodes[child].link.x : nodes[child].link.w;
        };
        wide[i].a = {l.lo.x, l.lo.y, l.lo.z, l.hi.x};
        wide[i].b = {l.hi.y, l.hi.z, r.lo.x, r.lo.y};
        wide[i].c = {r.lo.z, r.hi.x, r.hi.y, r.hi.z};
        wide[i].link = {nodes[i].link.x, nodes[i].link.y, aux(nodes[i].link.x),
                        aux(nodes[i].link.y)};
    }
    return wide;
}

void compute_bounds(std::vector<LbvhNode>& nodes, std::span<const Box> boxes) {
    if (nodes.empty()) return;
    const auto n = static_cast<std::uint32_t>((nodes.size() + 1) / 2);
    // Apetrei 2014: each leaf climbs towards the root; the first child to reach a parent
    // stops there, the second merges both children and carries on.
    std::vector<std::uint8_t> arrived(n > 1 ? n - 1 : 0, 0);
    for (std::uint32_t p = 0; p < n; ++p) {
        const std::uint32_t leaf = n - 1 + p;
        const Box& b = boxes[nodes[leaf].link.x];
        nodes[leaf].lo = to_vec4(b.min);
        nodes[leaf].hi = to_vec4(b.max);
        std::uint32_t node = nodes[leaf].link.z;
        while (node != kInvalidNode) {
            if (arrived[node]++ == 0) break;
            LbvhNode& nd = nodes[node];
            const LbvhNode& a = nodes[nd.link.x];
            const LbvhNode& c = nodes[nd.link.y];
            nd.lo = {std::min(a.lo.x, c.lo.x), std::min(a.lo.y, c.lo.y), std::min(a.lo.z, c.lo.z),
                     0.0f};
            nd.hi = {std::max(a.hi.x, c.hi.x), std::max(a.hi.y, c.hi.y), std::max(a.hi.z, c.hi.z),
                     0.0f};
            node = nd.link.z;
        }
    }
}

namespace {

// lbvh_pairs.glsl far_apart, bit for bit: the gap between the boxes along some axis exceeds
// the larger of their sizes.
bool far_apart(const Box& run, const Box& b) {
    float gap = -std::numeric_limits<float>::infinity(), size = 0.0f;
    for (int k = 0; k < 3; ++k) {
        gap = std::max(gap, std::max(run.min[k] - b.max[k], b.min[k] - run.max[k]));
        size = std::max({size, run.max[k] - run.min[k], b.max[k] - b.min[k]});
    }
    return gap > size;
}

}  // namespace

void self_pairs(std::span<const LbvhNode> nodes, std::span<const Box> boxes, std::vector<Pair>& out,
                QueryStats* stats, const Structure* filters) {
    QueryStats local;
    QueryStats& st = stats ? *stats : local;
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (n < 2) return;
    const std::uint32_t leaf_base = n - 1;
    auto emit = [&](std::uint32_t a, std::uint32_t b) {
        if (!filters || filters->collides(a, b))
            out.push_back(Pair{std::min(a, b), std::max(a, b)});
    };
    std::array<std::uint32_t, gpu_layout::kPairGroup> ids{};
    std::array<std::uint32_t, kStackSize> stack;
    for (std::uint32_t first = 0; first < n; first += gpu_layout::kPairGroup) {
        // The group's members: sorted positions first .. last.
        const std::uint32_t last = std::min(first + gpu_layout::kPairGroup, n) - 1;
        const std::uint32_t count = last - first + 1;
        for (std::uint32_t k = 0; k < count; ++k) ids[k] = nodes[leaf_base + first + k].link.x;
        for (std::uint32_t a = 0; a < count; ++a)
            for (std::uint32_t b = a + 1; b < count; ++b) {
                ++st.box_tests;
                if (overlaps(boxes[ids[a]], boxes[ids[b]])) emit(ids[a], ids[b]);
            }
        // Its runs, each walked from the root with the union of its boxes as the shader does:
        // every internal node a walk expands counts (the root once per run); children whose
        // last sorted position is <= last are skipped.
        for (std::uint32_t begin = 0; begin < count;) {
            Box run = boxes[ids[begin]];
            std::uint32_t end = begin + 1;
            for (; end < count && !far_apart(run, boxes[ids[end]]); ++end)
                run = merge(run, boxes[ids[end]]);
            std::size_t top = 0;
            stack[top++] = 0;
            while (top > 0) {
                const std::uint32_t node = stack[--top];
                ++st.nodes_visited;
                const LbvhNode& nd = nodes[node];
                for (const std::uint32_t child : {nd.link.y, nd.link.x}) {  // left popped first
                    const LbvhNode& c = nodes[child];
                    if (c.link.w <= last || !overlaps(run, node_box(c))) continue;
                    if (!is_leaf(child, n)) {
                        stack[top++] = child;
                        continue;
                    }
                    ++st.leaves_visited;
                    for (std::uint32_t k = begin; k < end; ++k) {
                        ++st.box_tests;
                        if (overlaps(boxes[ids[k]], boxes[c.link.x])) emit(ids[k], c.link.x);
                    }
                }
            }
            begin = end;
        }
    }
}

Status validate_tree(std::span<const LbvhNode> nodes, std::span<const Box> boxes) {
    const std::size_t n = boxes.size();
    if (n == 0) {
        if (!nodes.empty()) return tree_error(0, "nodes present for an empty scene");
        return Status::success();
    }
    if (nodes.size() != 2 * n - 1) {
        return tree_error(0, "expected " + std::to_string(2 * n - 1) + " nodes, found " +
                                 std::to_string(nodes.size()));
    }
    const auto n32 = static_cast<std::uint32_t>(n);
    const auto count = static_cast<std::uint32_t>(nodes.size());
    if (nodes[0].link.z != kInvalidNode) return tree_error(0, "root has a parent");

    // Pre-order walk from the root; every node must be reached exactly once.
    std::vector<std::uint8_t> reached(count, 0);
    std::vector<std::uint32_t> order;
    order.reserve(count);
    std::vector<std::uint32_t> stack = {0};
    reached[0] = 1;
    while (!stack.empty()) {
        const std::uint32_t node = stack.back();
        stack.pop_back();
        order.push_back(node);
        if (is_leaf(node, n32)) continue;
        const uvec4& link = nodes[node].link;
        for (const std::uint32_t child : {link.x, link.y}) {
            if (child >= count || child == 0) {
                return tree_error(node, "child index " + std::to_string(child) + " out of range");
            }
            if (reached[child]) {
                return tree_error(
                    child, "reached twice (second time from node " + std::to_string(node) + ")");
            }
            reached[child] = 1;
            if (nodes[child].link.z != node) {
                return tree_error(child, "parent link " + std::to_string(nodes[child].link.z) +
                                             " but child of node " + std::to_string(node));
            }
            stack.push_back(child);
        }
    }
    for (std::uint32_t node = 0; node < count; ++node) {
        if (!reached[node]) return tree_error(node, "not reachable from the root");
    }

    // Leaves: links, ids (a permutation), bounds equal to their box.
    std::vector<std::uint8_t> seen_id(n, 0);
    for (std::uint32_t p = 0; p < n32; ++p) {
        const std::uint32_t leaf = n32 - 1 + p;
        const LbvhNode& nd = nodes[leaf];
        if (nd.link.y != p || nd.link.w != p) {
            return tree_error(leaf, "leaf sorted position is not " + std::to_string(p));
        }
        if (nd.link.x >= n) return tree_error(leaf, "box id out of range");
        if (seen_id[nd.link.x]++) {
            return tree_error(leaf, "box " + std::to_string(nd.link.x) + " in two leaves");
        }
        if (!(node_box(nd) == boxes[nd.link.x]) || nd.lo.w != 0.0f || nd.hi.w != 0.0f) {
            return tree_error(leaf, "bounds differ from box " + std::to_string(nd.link.x));
        }
    }

    // Internal nodes, children before parents: contiguous ranges and enclosing bounds.
    std::vector<std::uint32_t> first(count), last(count);
    for (std::uint32_t p = 0; p < n32; ++p) first[n32 - 1 + p] = last[n32 - 1 + p] = p;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t node = *it;
        if (is_leaf(node, n32)) continue;
        const LbvhNode& nd = nodes[node];
        const std::uint32_t left = nd.link.x, right = nd.link.y;
        if (last[left] + 1 != first[right]) {
            return tree_error(node, "children ranges are not adjacent");
        }
        first[node] = first[left];
        last[node] = last[right];
        if (nd.link.w != last[node]) {
            return tree_error(node, "last sorted position " + std::to_string(nd.link.w) +
                                        ", expected " + std::to_string(last[node]));
        }
        if (nd.lo.w != 0.0f || nd.hi.w != 0.0f) return tree_error(node, "w components not 0");
        const Box bounds = node_box(nd);
        for (const std::uint32_t child : {left, right}) {
            const Box cb = node_box(nodes[child]);
            if (!(merge(bounds, cb) == bounds)) {
                return tree_error(node, "bounds do not contain child " + std::to_string(child));
            }
        }
    }
    if (first[0] != 0 || last[0] != n32 - 1) return tree_error(0, "root does not span all");
    return Status::success();
}

Status LbvhStructure::build(std::span<const Box> boxes) {
    boxes_.clear();
    nodes_.clear();
    if (Status s = validate_boxes(boxes); !s) return s;
    boxes_.assign(boxes.begin(), boxes.end());
    nodes_ = build_tree(boxes_, kind_, refine_);
    return Status::success();
}

void LbvhStructure::self_pairs(std::vector<Pair>& out) const {
    lbvh::self_pairs(nodes_, boxes_, out, &stats_, this);
}

void LbvhStructure::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    traverse(
        nodes_, stats_, [&](const LbvhNode& nd) { return overlaps(region, node_box(nd)); },
        [&](std::uint32_t id) { out.push_back(id); });
}

Status LbvhStructure::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty()) return Status::success();
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    // A leaf's bounds are its box, so a leaf child goes into the queue as its box.
    best_first::Queue queue;
    auto push = [&](std::uint32_t node, best_first::Queue& q) {
        const float d = point_box_distance(p, node_box(nodes_[node]));
        if (is_leaf(node, n)) {
            ++stats_.leaves_visited;
            ++stats_.box_tests;
            q.push_box(d, nodes_[node].link.x);
        } else {
            q.push_node(d, node);
        }
    };
    push(0, queue);
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        ++stats_.nodes_visited;
        push(nodes_[index].link.x, q);
        push(nodes_[index].link.y, q);
    });
    return Status::success();
}

std::optional<RayHit> LbvhStructure::ray_cast(const Ray& ray) const {
    if (nodes_.empty()) return std::nullopt;
    const auto n = static_cast<std::uint32_t>(boxes_.size());
    std::optional<RayHit> best;
    // Entries carry the node's entry t so that nodes farther than the best hit are pruned
    // when popped; a node at exactly the best t is still entered, for the smallest-id tie.
    struct Entry {
        std::uint32_t node;
        float t;
    };
    std::array<Entry, kStackSize> stack;
    std::size_t top = 0;
    if (const auto t = ray_box_entry(ray, node_box(nodes_[0]))) stack[top++] = {0, *t};
    while (top > 0) {
        const Entry e = stack[--top];
        if (best && e.t > best->t) continue;
        const LbvhNode& nd = nodes_[e.node];
        if (is_leaf(e.node, n)) {
            ++stats_.leaves_visited;
            ++stats_.box_tests;
            const std::uint32_t id = nd.link.x;
            keep_closer(best, id, e.t);
            continue;
        }
        ++stats_.nodes_visited;
        const auto tl = ray_box_entry(ray, node_box(nodes_[nd.link.x]));
        const auto tr = ray_box_entry(ray, node_box(nodes_[nd.link.y]));
        // Push the farther child first so that the nearer one is visited first.
        if (tl && tr) {
            const bool left_first = *tl <= *tr;
            const Entry near{left_first ? nd.link.x : nd.link.y, left_first ? *tl : *tr};
            const Entry far{left_first ? nd.link.y : nd.link.x, left_first ? *tr : *tl};
            stack[top++] = far;
            stack[top++] = near;
        } else if (tl) {
            stack[top++] = {nd.link.x, *tl};
        } else if (tr) {
            stack[top++] = {nd.link.y, *tr};
        }
    }
    return best;
}

std::size_t LbvhStructure::size() const {
    return boxes_.size();
}

Status LbvhStructure::validate() const {
    return validate_tree(nodes_, boxes_);
}

}  // namespace broadphase::lbvh

namespace broadphase {

std::vector<std::uint32_t> morton_order(std::span<const Box> boxes) {
    const std::vector<std::uint64_t> codes = lbvh::compute_codes(boxes, CodeKind::morton30);
    std::vector<std::uint32_t> order(boxes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return codes[a] < codes[b]; });
    return order;
}

}  // namespace broadphase
