// The registry of CPU methods behind the Structure interface, and the canonical pair helpers.
// Each method is one row of kMethods; make_structure looks names up there.
#include "broadphase/structure.hpp"

#include <algorithm>
#include <array>
#include <string>

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

}  // namespace

std::vector<std::string_view> cpu_method_names() {
    std::vector<std::string_view> names;
    for (const Method& m : kMethods) names.push_back(m.name);
    return names;
}

Result<std::unique_ptr<Structure>> make_structure(std::string_view method) {
    for (const Method& m : kMethods) {
        if (m.name == method) return m.make();
    }
    std::string known;
    for (const Method& m : kMethods) {
        if (!known.empty()) known += ", ";
        known += m.name;
    }
    return Error{ErrorCode::invalid_argument,
                 "unknown CPU method '" + std::string(method) + "' (known: " + known + ")",
                 std::nullopt, std::nullopt};
}

std::vector<Pair> sorted_pairs(const Structure& structure) {
    std::vector<Pair> pairs;
    structure.self_pairs(pairs);
    std::sort(pairs.begin(), pairs.end());
    return pairs;
}

Result<std::vector<Pair>> find_pairs_cpu(std::string_view method, std::span<const Box> boxes) {
    auto structure = make_structure(method);
    if (!structure) return structure.error();
    if (Status s = (*structure)->build(boxes); !s) return s.error();
    return sorted_pairs(**structure);
}

}  // namespace broadphase
