// find_pairs_tiled: all pairs of a scene larger than a memory budget, tile by tile on one device,
// with the partition logic of broadphase::mpi (mpi/distributed_scene.cpp, after ArborX's
// DistributedTree: docs/references.md, [Lebrun-Grandié et al. 2021]): tiles cut by median splits
// of the box centres, a top tree over the tiles' bounds, each box sent as a ghost to the tiles
// whose bounds it overlaps, and the pairs of two ghosts dropped. Between two tiles, the
// ghosts go one way only: the way with fewer of them (ties: from the lower tile), so that a
// world-sized box in a tile goes to the other tiles, not every box of the scene to its tile.
#include "broadphase/gpu/tiled_pairs.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"

namespace broadphase::gpu {
namespace {

// What the budget counts of a build over m boxes.
VkDeviceSize build_bytes(const Lbvh& lbvh, std::uint64_t m) {
    const LbvhRequirements r = lbvh.requirements(static_cast<std::uint32_t>(m));
    return r.boxes + r.nodes + r.scratch;
}

// The cut of the scene into `tiles` tiles: each tile's boxes (their ids), then its ghosts.
struct Cut {
    std::vector<std::vector<std::uint32_t>> own, ghosts;
};

// Orders ids[lo, hi) so that `parts` tiles of consecutive ids (tile t: the ids from
// lo + (hi - lo) * t / parts on) are the leaves of a median split of the box centres, each
// range split across the axis where its centres spread most (ties by id). Adapts to the scene
// where a Morton order over its bounds does not: a far group leaves the rest in one cell.
void split_order(std::span<const Box> boxes, std::vector<std::uint32_t>& ids, std::size_t lo,
                 std::size_t hi, std::uint32_t parts) {
    if (parts < 2 || hi - lo < 2) return;
    Vec3 cmin = centroid(boxes[ids[lo]]), cmax = cmin;
    for (std::size_t p = lo; p < hi; ++p) {
        const Vec3 c = centroid(boxes[ids[p]]);
        for (int a = 0; a < 3; ++a) {
            cmin[a] = std::min(cmin[a], c[a]);
            cmax[a] = std::max(cmax[a], c[a]);
        }
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a) {
        if (double(cmax[a]) - double(cmin[a]) > double(cmax[axis]) - double(cmin[axis])) axis = a;
    }
    const std::uint32_t left = parts / 2;
    const std::size_t mid = lo + (hi - lo) * left / parts;
    std::nth_element(ids.begin() + std::ptrdiff_t(lo), ids.begin() + std::ptrdiff_t(mid),
                     ids.begin() + std::ptrdiff_t(hi), [&](std::uint32_t x, std::uint32_t y) {
                         const float cx = centroid(boxes[x])[axis], cy = centroid(boxes[y])[axis];
                         return cx < cy || (cx == cy && x < y);
                     });
    split_order(boxes, ids, lo, mid, left);
    split_order(boxes, ids, mid, hi, parts - left);
}

// Cuts the scene into k tiles (split_order's leaves) and gives each tile its ghosts.
Result<Cut> cut(std::span<const Box> boxes, std::uint32_t k) {
    const std::size_t n = boxes.size();
    Cut c;
    c.own.resize(k);
    c.ghosts.resize(k);
    std::vector<std::uint32_t> order(n);
    for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
    split_order(boxes, order, 0, n, k);
    std::vector<std::uint32_t> tile_of(n);
    std::vector<Box> bounds(k);
    for (std::uint32_t t = 0; t < k; ++t) {
        for (std::size_t p = n * t / k; p < n * (t + 1) / k; ++p) {
            const std::uint32_t i = order[p];
            tile_of[i] = t;
            bounds[t] = c.own[t].empty() ? boxes[i] : merge(bounds[t], boxes[i]);
            c.own[t].push_back(i);
        }
    }
    auto top = make_structure("lbvh");
    if (!top) return top.error();
    if (Status s = build_structure(**top, bounds); !s) return s.error();
    // Each box's other tiles, and how many boxes each tile would send each other tile.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> reach;  // (box, tile)
    std::unordered_map<std::uint64_t, std::uint64_t> sends;      // t * k + u -> boxes
    std::vector<std::uint32_t> hits;
    for (std::uint32_t i = 0; i < n; ++i) {
        hits.clear();
        (*top)->query_box(boxes[i], hits);
        for (std::uint32_t u : hits) {
            if (u == tile_of[i]) continue;
            reach.emplace_back(i, u);
            ++sends[std::uint64_t(tile_of[i]) * k + u];
        }
    }
    const auto count = [&](std::uint32_t t, std::uint32_t u) {
        auto it = sends.find(std::uint64_t(t) * k + u);
        return it == sends.end() ? std::uint64_t(0) : it->second;
    };
    for (const auto& [i, u] : reach) {
        const std::uint32_t t = tile_of[i];
        const std::uint64_t there = count(t, u), back = count(u, t);
        if (there < back || (there == back && t < u)) c.ghosts[u].push_back(i);
    }
    return c;
}

}  // namespace

Result<std::vector<Pair>> find_pairs_tiled(Lbvh& lbvh, std::span<const Box> boxes,
                                           const TiledPairsOptions& options,
                                           TiledPairsReport* report) {
    if (Status s = validate_boxes(boxes); !s) return s.error();
    const std::size_t n = boxes.size();
    if (report) *report = {};
    if (options.budget == 0 || build_bytes(lbvh, n) <= options.budget) {
        if (report) *report = {1, 0, build_bytes(lbvh, n)};
        if (n < 2) return std::vector<Pair>{};
        return lbvh.find_pairs(boxes);
    }
    if (build_bytes(lbvh, 1) > options.budget) {
        return Error{ErrorCode::limit_exceeded, "find_pairs_tiled: the budget of " +
                                                    std::to_string(options.budget) +
                                                    " bytes holds no box (one needs " +
                                                    std::to_string(build_bytes(lbvh, 1)) + ")"};
    }

    // Double the tiles until every tile, with its ghosts, fits.
    auto k = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(n, (build_bytes(lbvh, n) + options.budget - 1) / options.budget));
    Cut tiles;
    VkDeviceSize largest = 0;
    for (;;) {
        auto c = cut(boxes, k);
        if (!c) return c.error();
        largest = 0;
        std::size_t worst = 0;
        for (std::uint32_t t = 0; t < k; ++t) {
            const VkDeviceSize bytes = build_bytes(lbvh, c->own[t].size() + c->ghosts[t].size());
            if (bytes > largest) {
                largest = bytes;
                worst = t;
            }
        }
        if (largest <= options.budget) {
            tiles = std::move(c.value());
            break;
        }
        if (k >= n) {
            return Error{ErrorCode::limit_exceeded,
                         "find_pairs_tiled: at " + std::to_string(k) + " tiles, tile " +
                             std::to_string(worst) + " (" + std::to_string(c->own[worst].size()) +
                             " boxes, " + std::to_string(c->ghosts[worst].size()) +
                             " ghosts) needs " + std::to_string(largest) +
                             " bytes, over the budget of " + std::to_string(options.budget)};
        }
        k = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, std::uint64_t(k) * 2));
    }

    // Each tile: its boxes, then its ghosts; the pairs with one of its own boxes at least.
    std::vector<Pair> out;
    std::vector<Box> scene;
    std::vector<std::uint32_t> ids;
    std::uint64_t ghosts = 0;
    for (std::uint32_t t = 0; t < k; ++t) {
        ids = tiles.own[t];
        const std::size_t m = ids.size();
        ids.insert(ids.end(), tiles.ghosts[t].begin(), tiles.ghosts[t].end());
        ghosts += tiles.ghosts[t].size();
        if (ids.size() < 2) continue;
        scene.clear();
        for (std::uint32_t i : ids) scene.push_back(boxes[i]);
        auto pairs = lbvh.find_pairs(scene);
        if (!pairs) return pairs.error();
        for (const Pair& p : *pairs) {
            if (p.i >= m && p.j >= m) continue;  // two ghosts: another tile's pair
            const std::uint32_t a = ids[p.i], b = ids[p.j];
            out.push_back(a < b ? Pair{a, b} : Pair{b, a});
        }
    }
    std::sort(out.begin(), out.end());
    if (report) *report = {k, ghosts, largest};
    return out;
}

}  // namespace broadphase::gpu
