// Shared scaffolding of the per-structure CPU tests, on top of oracle_harness.hpp: queries whose
// work is counted (QueryStats reset first), the pruning bounds the tree tests put on that work,
// the checks every static tree makes of its interface and of the flat scene, and the fixture of
// the validate()-catches-corruption tests (a tree over 500 "uniform" boxes that each test corrupts
// through the tree's test access, with the corruptions every tree shares).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broadphase/structure.hpp"
#include "oracle_harness.hpp"

namespace broadphase::testing {

// ---- counted queries -------------------------------------------------------------------------

/// self_pairs of `s` with its stats reset first: s.stats() then counts this call's work.
inline std::vector<Pair> counted_self_pairs(const Structure& s) {
    s.reset_stats();
    std::vector<Pair> pairs;
    s.self_pairs(pairs);
    return pairs;
}

/// query_box of `s` with its stats reset first.
inline std::vector<std::uint32_t> counted_query_box(const Structure& s, const Box& region) {
    s.reset_stats();
    std::vector<std::uint32_t> ids;
    s.query_box(region, ids);
    return ids;
}

/// query_point of `s` with its stats reset first.
inline std::vector<std::uint32_t> counted_query_point(const Structure& s, const Vec3& p) {
    s.reset_stats();
    std::vector<std::uint32_t> ids;
    s.query_point(p, ids);
    return ids;
}

/// `tree`, built, prunes: a small region query (side 0.02 at (0.5, 0.5, 0.5)) visits nodes and
/// leaves and tests some boxes but fewer than `region_tests`; self-pairs test fewer than
/// `pair_tests` boxes and more than the pairs they find. `label` names the tree in the messages.
inline void expect_queries_prune(const Structure& tree, std::uint64_t region_tests,
                                 std::uint64_t pair_tests, const std::string& label = {}) {
    (void)counted_query_box(tree, Box{{0.5f, 0.5f, 0.5f}, {0.52f, 0.52f, 0.52f}});
    EXPECT_GT(tree.stats().nodes_visited, 0u) << label;
    EXPECT_GT(tree.stats().leaves_visited, 0u) << label;
    EXPECT_GT(tree.stats().box_tests, 0u) << label;
    EXPECT_LT(tree.stats().box_tests, region_tests) << label;
    const std::vector<Pair> pairs = counted_self_pairs(tree);
    EXPECT_LT(tree.stats().box_tests, pair_tests) << label;
    EXPECT_GT(tree.stats().box_tests, pairs.size()) << label;
}

// ---- interface and shape ---------------------------------------------------------------------

/// 500 boxes of side 0.5 strung along y, at y = 0, 1, 2, ... (like the yline scene): the longest
/// axis is y, the median centroid 250.25.
inline std::vector<Box> strung_along_y_boxes() {
    std::vector<Box> boxes;
    for (int i = 0; i < 500; ++i) {
        const float y = float(i);
        boxes.push_back(Box{{0, y, 0}, {0.5f, y + 0.5f, 0.5f}});
    }
    return boxes;
}

/// `tree`, with a bad configuration, refuses to build ten boxes (invalid_argument).
inline void expect_bad_config_rejected(Structure& tree) {
    const Status s = tree.build(uniform_boxes(10, 1));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
}

/// `s` is static and named `name`.
inline void expect_static_and_named(const Structure& s, std::string_view name) {
    EXPECT_EQ(s.name(), name);
    EXPECT_FALSE(s.is_dynamic());
}

/// Builds `tree` over flat_boxes() (z = 0 everywhere): no internal node splits on z, where
/// nothing varies. `axis(node)` is a node's split axis (0 x, 1 y, 2 z).
template <class Tree, class Axis>
void expect_flat_scene_never_splits_on_z(Tree& tree, Axis axis) {
    ASSERT_TRUE(tree.build(flat_boxes()).ok());
    for (const auto& node : tree.nodes()) {
        if (!node.is_leaf()) {
            EXPECT_NE(unsigned(axis(node)), 2u);
        }
    }
}

// ---- validate() catches corruption -----------------------------------------------------------

/// validate() of `s` fails with a message that contains `fragment`.
inline void expect_invalid(const Structure& s, const std::string& fragment) {
    const Status st = s.validate();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find(fragment), std::string::npos) << st.error().message;
}

/// The fixture of a tree's validate()-catches-corruption tests: tree_ (make_tree()) built over
/// boxes_, 500 "uniform" boxes (seed 12), and valid. Each test corrupts tree_ through `Access`,
/// the tree's test access (ids(tree) and boxes(tree): the stored ids and boxes), and expects
/// validate() to fail. `Base` is ::testing::Test, or ::testing::TestWithParam<P> with make_tree()
/// overridden.
template <class Tree, class Access, class Base = ::testing::Test>
class TreeCorruption : public Base {
protected:
    void SetUp() override {
        boxes_ = uniform_boxes(500, 12);
        tree_ = make_tree();
        ASSERT_TRUE(tree_.build(boxes_).ok());
        ASSERT_TRUE(tree_.validate().ok());
    }
    /// The tree to build and corrupt.
    virtual Tree make_tree() const { return Tree{}; }

    void expect_invalid(const std::string& fragment) const {
        testing::expect_invalid(tree_, fragment);
    }
    /// Slot 3 stores slot 4's id too.
    void expect_duplicate_id_caught() {
        Access::ids(tree_)[3] = Access::ids(tree_)[4];
        expect_invalid("stored twice");
    }
    /// Slot 0 stores id 500, past the ids built.
    void expect_id_out_of_range_caught() {
        Access::ids(tree_)[0] = 500;
        expect_invalid("out of range");
    }
    /// The first and the last stored boxes, with their ids, swap places (across the root's
    /// split).
    void expect_swap_across_split_caught() {
        std::swap(Access::boxes(tree_).front(), Access::boxes(tree_).back());
        std::swap(Access::ids(tree_).front(), Access::ids(tree_).back());
        EXPECT_FALSE(tree_.validate().ok());
    }
    /// Stored box 7 gets a NaN.
    void expect_nan_box_caught() {
        Access::boxes(tree_)[7].min.z = std::numeric_limits<float>::quiet_NaN();
        EXPECT_FALSE(tree_.validate().ok());
    }
    /// `loose` and `strict` (a configuration with smaller leaves), both built over boxes_;
    /// graft(loose, strict) hands strict the internals of loose, whose leaves are too full for
    /// strict: validate() fails naming `fragment`.
    template <class Graft>
    void expect_overfull_graft_caught(Tree loose, Tree strict, Graft graft,
                                      const std::string& fragment) {
        ASSERT_TRUE(loose.build(boxes_).ok());
        ASSERT_TRUE(strict.build(boxes_).ok());
        graft(loose, strict);
        testing::expect_invalid(strict, fragment);
    }

    std::vector<Box> boxes_;
    Tree tree_;
};

}  // namespace broadphase::testing
