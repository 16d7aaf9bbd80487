// The (method, configuration) pairs that the typed suite (structure_test.cpp) runs against
// brute force: every method of cpu_method_names() at its default options, and each structure
// again under the options that change its shape (leaf sizes, node capacities, split rules,
// margins, loose factors, cell sizes, code kinds). A configuration is one row of
// structure_configs(): a method name, a short name for the options, and a function that makes
// the structure with them. The per-structure test files hold only what is specific to their
// structure: its invariants, its cost, its own options' edge cases.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "broadphase/structure.hpp"
#include "bulk_rtree.hpp"
#include "dynamic_aabb_tree.hpp"
#include "kd_tree.hpp"
#include "lbvh.hpp"
#include "loose_octree.hpp"
#include "octree.hpp"
#include "rtree.hpp"
#include "sphere_bvh.hpp"
#include "static_aabb_tree.hpp"
#include "uniform_grid.hpp"

namespace broadphase::testing {

/// One structure under one set of options.
struct StructureConfig {
    std::string method;  ///< a cpu_method_names() entry, the name() of what make() returns
    std::string config;  ///< "default", or a short name of the options
    std::function<std::unique_ptr<Structure>()> make;
    /// A name for test output: method and configuration, letters, digits and '_' only.
    std::string label() const { return method + "_" + config; }
    bool is_default() const { return config == "default"; }
    /// For test output.
    friend void PrintTo(const StructureConfig& c, std::ostream* os) { *os << c.label(); }
};

namespace detail {

template <class T>
StructureConfig configured(std::string config, typename T::Config options) {
    std::string method(T(options).name());
    return {std::move(method), std::move(config),
            [options] { return std::unique_ptr<Structure>(std::make_unique<T>(options)); }};
}

}  // namespace detail

/// Every method at its default options (make_structure), then the other configurations.
inline std::vector<StructureConfig> structure_configs() {
    std::vector<StructureConfig> configs;
    for (const std::string_view m : cpu_method_names()) {
        configs.push_back({std::string(m), "default", [m] {
                               auto made = make_structure(m);
                               return made.ok() ? std::move(*made) : nullptr;
                           }});
    }
    using detail::configured;

    // k-d tree: the cycling axis rule, the smallest leaves, a depth cap that leaves big leaves.
    using KdAxis = KdTree::AxisRule;
    configs.push_back(configured<KdTree>("alternate", {KdAxis::alternate, 8, 64}));
    configs.push_back(configured<KdTree>("leaf_1", {KdAxis::widest, 1, 64}));
    configs.push_back(configured<KdTree>("leaf_2", {KdAxis::widest, 2, 64}));
    configs.push_back(configured<KdTree>("alternate_leaf_3_depth_4", {KdAxis::alternate, 3, 4}));

    // Sphere BVH: one box per leaf (as in "Sort a sphere BVH with split planes",
    // docs/references.md), and every split at the median.
    configs.push_back(configured<SphereBvh>("leaf_1", {1, 48}));
    configs.push_back(configured<SphereBvh>("median_only", {8, 0}));

    // Bulk-loaded R-trees: a small odd capacity (deep trees, partial nodes).
    for (const auto m :
         {BulkRTree::BulkLoad::nearest_x, BulkRTree::BulkLoad::str, BulkRTree::BulkLoad::hilbert}) {
        configs.push_back(configured<BulkRTree>("capacity_3", {m, 3}));
    }

    // R-trees: a small 2..5 fill that splits often.
    for (const auto split :
         {RTree::SplitPolicy::linear, RTree::SplitPolicy::quadratic, RTree::SplitPolicy::rstar}) {
        RTree::Config c;
        c.split = split;
        c.min_entries = 2;
        c.max_entries = 5;
        configs.push_back(configured<RTree>("fill_2_5", c));
    }

    // Dynamic AABB tree: an absolute margin, no margin, built one box at a time (with and
    // without rotations).
    DynamicAabbTree::Config absolute;
    absolute.margin = 0.01f;
    absolute.margin_is_relative = false;
    DynamicAabbTree::Config tight;
    tight.margin = 0;
    DynamicAabbTree::Config one_by_one;
    one_by_one.bulk_build = false;
    DynamicAabbTree::Config one_by_one_no_rotations = one_by_one;
    one_by_one_no_rotations.rotations = false;
    configs.push_back(configured<DynamicAabbTree>("absolute_margin", absolute));
    configs.push_back(configured<DynamicAabbTree>("margin_0", tight));
    configs.push_back(configured<DynamicAabbTree>("one_by_one", one_by_one));
    configs.push_back(
        configured<DynamicAabbTree>("one_by_one_no_rotations", one_by_one_no_rotations));

    // Static AABB tree: the leaf limits at the packing's extremes.
    configs.push_back(configured<StaticAabbTree>("leaf_1", {1, 1024}));
    configs.push_back(configured<StaticAabbTree>("leaf_15", {15, 1024}));

    // Octree: tiny leaves, a shallow depth cap, a minimum cell size, and small leaves.
    configs.push_back(configured<Octree>("capacity_1", {1, 16, 0.0f}));
    configs.push_back(configured<Octree>("capacity_4_depth_3", {4, 3, 0.0f}));
    configs.push_back(configured<Octree>("capacity_2_min_size", {2, 16, 0.05f}));
    configs.push_back(configured<Octree>("capacity_4_depth_16", {4, 16, 0.0f}));

    // Loose octree: loose factors from barely loose to very loose, capacities, depth caps.
    configs.push_back(configured<LooseOctree>("k1_1", {1.1f, 8, 16}));
    configs.push_back(configured<LooseOctree>("k1_5", {1.5f, 8, 16}));
    configs.push_back(configured<LooseOctree>("k3_capacity_1", {3.0f, 1, 16}));
    configs.push_back(configured<LooseOctree>("capacity_2_depth_16", {2.0f, 2, 16}));
    configs.push_back(configured<LooseOctree>("capacity_4_depth_2", {2.0f, 4, 2}));
    configs.push_back(configured<LooseOctree>("capacity_4_depth_16", {2.0f, 4, 16}));
    configs.push_back(configured<LooseOctree>("k8_capacity_16", {8.0f, 16, 24}));

    // Uniform grid: many cells per box, one cell per box (many levels), many boxes per cell.
    UniformGrid::Config fine;
    fine.cell_scale = 0.3;
    UniformGrid::Config one_cell;
    one_cell.max_cells_per_box = 1;
    UniformGrid::Config coarse;
    coarse.cell_scale = 40;
    configs.push_back(configured<UniformGrid>("fine", fine));
    configs.push_back(configured<UniformGrid>("one_cell", one_cell));
    configs.push_back(configured<UniformGrid>("coarse", coarse));

    // LBVH: the other space-filling-curve codes.
    for (const auto& [name, kind] : {std::pair{"morton63", lbvh::CodeKind::morton63},
                                     std::pair{"hilbert30", lbvh::CodeKind::hilbert30}}) {
        configs.push_back({"lbvh", name, [kind] {
                               return std::unique_ptr<Structure>(
                                   std::make_unique<lbvh::LbvhStructure>(kind));
                           }});
    }
    return configs;
}

}  // namespace broadphase::testing
