// The registry of CPU methods behind the Structure interface, and the canonical pair helpers.
// Each method is one row of kMethods; make_structure looks names up there.
#include "broadphase/structure.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "bulk_rtree.hpp"
#include "dynamic_aabb_tree.hpp"
#include "kd_tree.hpp"
#include "lbvh.hpp"
#include "loose_octree.hpp"
#include "octree.hpp"
#include "rtree.hpp"
#include "sphere_bvh.hpp"
#include "static_aabb_tree.hpp"
#include "sweep_and_prune.hpp"
#include "uniform_grid.hpp"

namespace broadphase {
namespace {

struct Method {
    std::string_view name;
    std::unique_ptr<Structure> (*make)();
};

template <class T>
std::unique_ptr<Structure> make_one() {
    return std::make_unique<T>();
}

template <RTree::SplitPolicy kSplit>
std::unique_ptr<Structure> make_rtree() {
    RTree::Config config;
    config.split = kSplit;
    return std::make_unique<RTree>(config);
}

template <BulkRTree::BulkLoad kMethod>
std::unique_ptr<Structure> make_bulk_rtree() {
    BulkRTree::Config config;
    config.method = kMethod;
    return std::make_unique<BulkRTree>(config);
}

constexpr std::array kMethods = {
    Method{"brute_force", &make_one<BruteForce>},
    Method{"sweep_and_prune", &make_one<SweepAndPrune>},
    Method{"uniform_grid", &make_one<UniformGrid>},
    Method{"octree", &make_one<Octree>},
    Method{"loose_octree", &make_one<LooseOctree>},
    Method{"rtree_linear", &make_rtree<RTree::SplitPolicy::linear>},
    Method{"rtree_quadratic", &make_rtree<RTree::SplitPolicy::quadratic>},
    Method{"rstar_tree", &make_rtree<RTree::SplitPolicy::rstar>},
    Method{"rtree_nearest_x", &make_bulk_rtree<BulkRTree::BulkLoad::nearest_x>},
    Method{"rtree_str", &make_bulk_rtree<BulkRTree::BulkLoad::str>},
    Method{"rtree_hilbert", &make_bulk_rtree<BulkRTree::BulkLoad::hilbert>},
    Method{"kd_tree", &make_one<KdTree>},
    Method{"dynamic_aabb_tree", &make_one<DynamicAabbTree>},
    Method{"static_aabb_tree", &make_one<StaticAabbTree>},
    Method{"sphere_bvh", &make_one<SphereBvh>},
    Method{"lbvh", &make_one<lbvh::LbvhStructure>},
};

/// A byte count for messages: "1.5 GB", "24 MB", "300 bytes".
std::string bytes_text(std::size_t bytes) {
    char text[32];
    if (bytes >= 1000000000)
        std::snprintf(text, sizeof text, "%.1f GB", double(bytes) / 1e9);
    else if (bytes >= 1000000)
        std::snprintf(text, sizeof text, "%.1f MB", double(bytes) / 1e6);
    else
        std::snprintf(text, sizeof text, "%zu bytes", bytes);
    return text;
}

Error out_of_memory(const std::string& what) {
    return Error{ErrorCode::out_of_memory, "out of memory " + what};
}

}  // namespace

std::vector<std::string_view> cpu_method_names() {
    std::vector<std::string_view> names;
    for (const Method& m : kMethods) names.push_back(m.name);
    return names;
}

Result<std::unique_ptr<Structure>> make_structure(std::string_view method) {
    for (const Method& m : kMethods) {
        if (m.name != method) continue;
        try {
            return m.make();
        } catch (const std::bad_alloc&) {
            return Error{ErrorCode::out_of_memory, "out of memory making " + std::string(method)};
        }
    }
    std::string known;
    for (const Method& m : kMethods) {
        if (!known.empty()) known += ", ";
        known += m.name;
    }
    return Error{ErrorCode::invalid_argument,
                 "unknown CPU method '" + std::string(method) + "' (known: " + known + ")"};
}

Status Structure::validate_slots(std::span<const Box> boxes,
                                 std::span<const std::uint32_t> ids) const {
    const std::size_t n = boxes.size();
    if (ids.size() != n) return broken("ids and boxes differ in size");
    std::vector<bool> seen(n, false);
    for (const std::uint32_t id : ids) {
        if (id >= n) return broken("id " + std::to_string(id) + " out of range", id);
        if (seen[id]) return broken("id " + std::to_string(id) + " stored twice", id);
        seen[id] = true;
    }
    for (std::size_t s = 0; s < n; ++s) {
        if (Status status = validate_box(boxes[s], ids[s]); !status) return status;
    }
    return Status::success();
}

void Structure::set_filter(std::uint32_t id, const Filter& filter) {
    if (id >= filters_.size()) {
        if (filter == Filter{}) return;
        filters_.resize(std::size_t{id} + 1);
    }
    filters_[id] = filter;
    filtered_ = filtered_ || filter != Filter{};
}

std::vector<Pair> sorted_pairs(const Structure& structure) {
    std::vector<Pair> pairs;
    structure.self_pairs(pairs);
    std::sort(pairs.begin(), pairs.end());
    return pairs;
}

void Structure::query_ray_candidates(const Ray& ray, const Vec3& lo, const Vec3& hi,
                                     std::vector<std::uint32_t>& out) const {
    Box region;
    for (int axis = 0; axis < 3; ++axis) {
        const double a = double(ray.origin[axis]);
        const double b = a + double(ray.dir[axis]) * double(ray.tmax);
        const double low = std::min(a, b) - double(hi[axis]);
        const double high = std::max(a, b) - double(lo[axis]);
        region.min[axis] = float(std::clamp(low, -double(FLT_MAX), double(FLT_MAX)));
        region.max[axis] = float(std::clamp(high, -double(FLT_MAX), double(FLT_MAX)));
        // One float outward: the float rounding of the bounds must not cut a touching box.
        region.min[axis] = std::nextafter(region.min[axis], -FLT_MAX);
        region.max[axis] = std::nextafter(region.max[axis], FLT_MAX);
    }
    query_box(region, out);
}

Status build_structure(Structure& structure, std::span<const Box> boxes) {
    try {
        return structure.build(boxes);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return out_of_memory("building " + std::string(structure.name()) + " over " +
                         std::to_string(boxes.size()) + " boxes (" +
                         bytes_text(boxes.size() * sizeof(Box)) + " of input)");
}

Result<std::vector<Pair>> find_sorted_pairs(const Structure& structure) {
    std::vector<Pair> pairs;
    try {
        structure.self_pairs(pairs);
        std::sort(pairs.begin(), pairs.end());
        return pairs;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    const std::size_t found = pairs.size();
    std::vector<Pair>().swap(pairs);  // free them before the message is built
    return out_of_memory("finding the pairs of " + std::string(structure.name()) + " over " +
                         std::to_string(structure.size()) + " boxes (" + std::to_string(found) +
                         " pairs, " + bytes_text(found * sizeof(Pair)) + ", found so far)");
}

Result<std::vector<Pair>> find_pairs_cpu(std::string_view method, std::span<const Box> boxes) {
    auto structure = make_structure(method);
    if (!structure) return structure.error();
    if (Status s = build_structure(**structure, boxes); !s) return s.error();
    return find_sorted_pairs(**structure);
}

}  // namespace broadphase
