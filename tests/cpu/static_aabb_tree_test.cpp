// Tests of the static AABB tree (cpu_reference/static_aabb_tree.*, after PhysX SDK 3.4's
// AABBTree / AABBPruner, Gu/SqAABBTree) that are its own: the balanced split of identical boxes,
// the progressive build equal node for node to the one-shot build, refit of dirty paths equal
// to a rebuild, removal by swap-with-last, merging of a fresh tree (also inside random
// insert/remove/move sequences), the runtime node packing, validate() on corrupted trees, and
// its own bad input (duplicate ids, leaf limit). Every query against brute force at several
// leaf limits, bad boxes and the shared random sequences are in the typed suite
// (structure_test.cpp, structure_configs.hpp).
#include "static_aabb_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase {

// Reaches the tree's internals so that tests can corrupt it.
struct StaticAabbTreeTestAccess {
    static std::vector<StaticAabbTree::RuntimeNode>& nodes(StaticAabbTree& t) { return t.nodes_; }
    static std::vector<std::uint32_t>& parents(StaticAabbTree& t) { return t.parents_; }
    static std::vector<std::uint32_t>& indices(StaticAabbTree& t) { return t.indices_; }
    static std::vector<Box>& boxes(StaticAabbTree& t) { return t.boxes_; }
};

namespace {

using Node = StaticAabbTree::RuntimeNode;
using Access = StaticAabbTreeTestAccess;

using testing::iota_ids;
using testing::scene_boxes;

// k nearest (k = 1, 5) at every second query point (oracle_harness.hpp).
constexpr std::size_t kStaticNearestStride = 2;

void expect_valid(const StaticAabbTree& tree) {
    const Status valid = tree.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
}

// Runs a progressive build of `boxes` to the end; returns the number of steps taken.
int build_progressively(StaticAabbTree& tree, std::span<const Box> boxes,
                        std::span<const std::uint32_t> ids = {}) {
    EXPECT_TRUE(tree.begin_progressive_build(boxes, ids).ok());
    int steps = 1;
    while (!tree.step_progressive_build()) ++steps;
    return steps;
}

void expect_same_layout(const StaticAabbTree& a, const StaticAabbTree& b) {
    ASSERT_EQ(a.nodes().size(), b.nodes().size());
    for (std::size_t i = 0; i < a.nodes().size(); ++i) {
        ASSERT_EQ(a.nodes()[i], b.nodes()[i]) << "node " << i;
    }
    ASSERT_TRUE(std::ranges::equal(a.parent_indices(), b.parent_indices()));
    ASSERT_TRUE(std::ranges::equal(a.indices(), b.indices()));
    ASSERT_TRUE(std::ranges::equal(a.slot_ids(), b.slot_ids()));
}

// Scenario 3: 200 copies of one box: all centroids equal, and the half split still keeps
// leaves within the limit.
TEST(StaticAabbTree, Scenario03_AllBoxesIdenticalStayBalanced) {
    StaticAabbTree tree;
    ASSERT_TRUE(
        tree.build(testing::identical_boxes(Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}})).ok());
    expect_valid(tree);
    EXPECT_LE(tree.depth(), 8u);  // halving 200 down to 4: balanced
}

// Scenario 8: the progressive build (FIFO, bounded work per step) equals the one-shot build
// (depth first) node for node, takes several steps, and the old tree answers until it is done.
TEST(StaticAabbTree, Scenario08_ProgressiveBuildEqualsOneShot) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 7u, 3000u}) {
            SCOPED_TRACE(std::string(gen) + ":" + std::to_string(n));
            const std::vector<Box> boxes = scene_boxes(gen, n);
            StaticAabbTree one_shot, progressive;
            ASSERT_TRUE(one_shot.build(boxes).ok());
            const int steps = build_progressively(progressive, boxes);
            EXPECT_FALSE(progressive.progressive_build_pending());
            expect_valid(progressive);
            expect_same_layout(one_shot, progressive);
            if (n == 3000) {
                EXPECT_GT(steps, 3);
            }
        }
    }
    // Caller ids and a small step: still identical; the live tree serves the old scene meanwhile.
    const std::vector<Box> old_boxes = scene_boxes("clustered", 500);
    const std::vector<Box> boxes = scene_boxes("uniform", 2000, 9);
    const std::vector<std::uint32_t> ids = iota_ids(boxes.size(), 100);
    StaticAabbTree::Config small;
    small.progressive_work_per_step = 64;
    StaticAabbTree one_shot(small), progressive(small);
    ASSERT_TRUE(one_shot.build(boxes, ids).ok());
    ASSERT_TRUE(progressive.build(old_boxes).ok());
    ASSERT_TRUE(progressive.begin_progressive_build(boxes, ids).ok());
    int steps = 0;
    while (!progressive.step_progressive_build()) {
        ++steps;
        if (steps == 5) {
            expect_valid(progressive);
            testing::expect_matches_ids(progressive, old_boxes, iota_ids(old_boxes.size()), 1, 20,
                                        kStaticNearestStride);
        }
    }
    EXPECT_GT(steps, 2000 / 64);  // each step processes about 64 primitives
    expect_same_layout(one_shot, progressive);
    testing::expect_matches_ids(progressive, boxes, ids, 2, 50, kStaticNearestStride);
    EXPECT_TRUE(progressive.step_progressive_build());  // nothing pending: done at once

    // A bad box is rejected up front and leaves the live tree alone.
    std::vector<Box> bad = boxes;
    bad[5].min.y = bad[5].max.y + 1;
    const Status s = progressive.begin_progressive_build(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().box, std::optional<std::size_t>(5));
    EXPECT_FALSE(progressive.progressive_build_pending());
    EXPECT_EQ(progressive.size(), boxes.size());
}

// Scenario 9: mark_dirty + refit touches only dirty paths; afterwards queries equal a rebuild's
// (and brute force's), and validate() reports dirty bits until refit runs.
TEST(StaticAabbTree, Scenario09_RefitEqualsRebuild) {
    std::vector<Box> boxes = scene_boxes("uniform", 3000);
    StaticAabbTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    std::mt19937 rng(21);
    std::uniform_real_distribution<float> d(-0.05f, 0.05f);
    std::uniform_int_distribution<std::uint32_t> pick(0, 2999);
    const std::size_t node_count = tree.nodes().size();
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 200; ++i) {
            const std::uint32_t id = pick(rng);
            Box b = boxes[id];
            const float scale = round == 3 ? 10.0f : 1.0f;  // last round: large moves
            for (int a = 0; a < 3; ++a) {
                const float delta = scale * d(rng);
                b.min[a] += delta;
                b.max[a] += delta;
            }
            boxes[id] = b;
            ASSERT_TRUE(tree.mark_dirty(id, b).ok());
        }
        const Status pending = tree.validate();
        ASSERT_FALSE(pending.ok());
        EXPECT_NE(pending.error().message.find("dirty"), std::string::npos);
        tree.refit();
        expect_valid(tree);
        StaticAabbTree rebuilt;
        ASSERT_TRUE(rebuilt.build(boxes).ok());
        EXPECT_EQ(sorted_pairs(tree), sorted_pairs(rebuilt));
        testing::expect_matches_ids(tree, boxes, iota_ids(boxes.size()), 30 + round, 100,
                                    kStaticNearestStride);
        // The shape is kept: same nodes, only bounds changed.
        EXPECT_EQ(tree.nodes().size(), node_count);
    }
    // A refit of one box changes only the bounds on its path; a clean refit changes nothing.
    const std::vector<Node> before(tree.nodes().begin(), tree.nodes().end());
    boxes[17] = Box{{5, 5, 5}, {6, 6, 6}};
    ASSERT_TRUE(tree.mark_dirty(17, boxes[17]).ok());
    tree.refit();
    expect_valid(tree);
    std::size_t changed = 0;
    for (std::size_t i = 0; i < before.size(); ++i) changed += !(before[i] == tree.nodes()[i]);
    EXPECT_GT(changed, 0u);
    EXPECT_LE(changed, tree.depth() + 1u);
    tree.refit();
    EXPECT_EQ(sorted_pairs(tree), sorted_pairs(tree));
    EXPECT_FALSE(tree.mark_dirty(3000, boxes[0]).ok());                // unknown id
    EXPECT_FALSE(tree.mark_dirty(1, Box{{1, 0, 0}, {0, 1, 1}}).ok());  // invalid box
}

// Scenario 10: remove by swap-with-last: the last slot's id takes the removed slot; ids stay
// the caller's.
TEST(StaticAabbTree, Scenario10_RemoveSwapsWithLast) {
    std::vector<Box> boxes = scene_boxes("clustered", 300);
    StaticAabbTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    ASSERT_EQ(tree.slot_ids()[299], 299u);
    ASSERT_TRUE(tree.remove(10).ok());
    expect_valid(tree);
    EXPECT_EQ(tree.size(), 299u);
    EXPECT_EQ(tree.slot_ids()[10], 299u);  // the last one moved into slot 10
    EXPECT_FALSE(tree.remove(10).ok());
    std::map<std::uint32_t, Box> live;
    for (std::uint32_t i = 0; i < boxes.size(); ++i) {
        if (i != 10) live[i] = boxes[i];
    }
    // Remove most boxes, in a scattered order; queries stay exact (empty leaves included).
    for (std::uint32_t i = 0; i < 300; i += 1 + i % 3) {
        if (i == 10) continue;
        ASSERT_TRUE(tree.remove(i).ok());
        live.erase(i);
        expect_valid(tree);
    }
    std::vector<Box> list;
    std::vector<std::uint32_t> ids;
    for (const auto& [id, b] : live) ids.push_back(id), list.push_back(b);
    testing::expect_matches_ids(tree, list, ids, 4, 100, kStaticNearestStride);
    for (const std::uint32_t id : ids) {
        ASSERT_TRUE(tree.remove(id).ok());
        expect_valid(tree);
    }
    EXPECT_EQ(tree.size(), 0u);
    EXPECT_TRUE(tree.nodes().empty());
    EXPECT_TRUE(sorted_pairs(tree).empty());
}

// Scenario 11: merging a fresh tree (new ids) into the live one equals a tree of all boxes,
// whether the fresh root lands in a leaf, below an internal node, or beside the root.
TEST(StaticAabbTree, Scenario11_MergeEqualsFullBuild) {
    const std::vector<Box> base = scene_boxes("uniform", 2000);
    struct Case {
        const char* what;
        std::vector<Box> fresh;
    };
    std::vector<Case> cases;
    cases.push_back({"uniform batch", scene_boxes("uniform", 500, 5)});
    cases.push_back({"one tiny box inside", {Box{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}}}});
    std::vector<Box> corner;
    for (const Box& b : scene_boxes("clustered", 200, 3)) {
        corner.push_back(Box{{0.05f * b.min.x, 0.05f * b.min.y, 0.05f * b.min.z},
                             {0.05f * b.max.x, 0.05f * b.max.y, 0.05f * b.max.z}});
    }
    cases.push_back({"small cluster in a corner", corner});
    std::vector<Box> outside;
    for (const Box& b : scene_boxes("uniform", 300, 8)) {
        outside.push_back(Box{{b.min.x + 3, b.min.y, b.min.z}, {b.max.x + 3, b.max.y, b.max.z}});
    }
    cases.push_back({"outside the live root", outside});
    cases.push_back({"overlapping the live root", scene_boxes("mixed_sizes", 300, 6)});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        StaticAabbTree live, fresh;
        ASSERT_TRUE(live.build(base).ok());
        const std::vector<std::uint32_t> fresh_ids = iota_ids(c.fresh.size(), 5000);
        ASSERT_TRUE(fresh.build(c.fresh, fresh_ids).ok());
        const std::size_t fresh_nodes = fresh.nodes().size();
        const std::size_t live_nodes = live.nodes().size();
        ASSERT_TRUE(live.merge(fresh).ok());
        expect_valid(live);
        EXPECT_EQ(live.size(), base.size() + c.fresh.size());
        EXPECT_EQ(live.nodes().size(), live_nodes + fresh_nodes + 1);  // + copy of the target
        std::vector<Box> all = base;
        all.insert(all.end(), c.fresh.begin(), c.fresh.end());
        std::vector<std::uint32_t> ids = iota_ids(base.size());
        ids.insert(ids.end(), fresh_ids.begin(), fresh_ids.end());
        testing::expect_matches_ids(live, all, ids, 12, 100, kStaticNearestStride);
        // And equal pairs to a tree built from all the boxes at once.
        StaticAabbTree whole;
        ASSERT_TRUE(whole.build(all, ids).ok());
        EXPECT_EQ(sorted_pairs(live), sorted_pairs(whole));
        // The fresh tree is untouched, and merging it again is refused (ids present).
        EXPECT_EQ(fresh.nodes().size(), fresh_nodes);
        EXPECT_FALSE(live.merge(fresh).ok());
        expect_valid(live);
    }
    // Merging into an empty tree adopts the fresh tree.
    StaticAabbTree empty, fresh;
    ASSERT_TRUE(fresh.build(base).ok());
    ASSERT_TRUE(empty.merge(fresh).ok());
    expect_same_layout(empty, fresh);
    EXPECT_FALSE(empty.merge(empty).ok());
}

// Random insert / remove / move / merge steps (seeded, oracle_harness.hpp) with sparse ids,
// some near the top of the id range: validate() after every step, everything compared with
// brute force every 10 steps. Moves shift by 0.5 (30%) or 0.01; a batch of 12 is merged at 5%
// of the steps.
void random_steps_with_merges(std::uint32_t seed, std::size_t initial, int steps) {
    testing::SequenceOptions options = testing::small_box_sequence(seed, initial, steps);
    // A batch of 12 merged at once at 5% of the steps.
    options.extra_share = 0.05f;
    options.extra = [new_box = options.new_box](Structure& s, testing::SequenceContext& ctx) {
        std::vector<std::pair<std::uint32_t, Box>> added;
        std::vector<Box> batch;
        std::vector<std::uint32_t> ids;
        for (int i = 0; i < 12; ++i) {
            batch.push_back(new_box(ctx));
            ids.push_back(ctx.new_id());
            added.emplace_back(ids.back(), batch.back());
        }
        StaticAabbTree fresh;
        EXPECT_TRUE(fresh.build(batch, ids).ok());
        EXPECT_TRUE(static_cast<StaticAabbTree&>(s).merge(fresh).ok());
        return added;
    };
    options.insert_share = [](int) { return 0.3f / 0.95f; };
    options.remove_share = 0.2f / 0.65f;
    options.nearest_stride = 2;
    StaticAabbTree tree;
    testing::run_dynamic_sequence(tree, options);
}

// Scenario 12: a few hundred random dynamic steps with merges from a built tree and from an
// empty one.
TEST(StaticAabbTree, Scenario12_RandomInsertRemoveMoveMerge) {
    random_steps_with_merges(11, 200, 400);
    random_steps_with_merges(12, 0, 300);
}

// Scenario 13: the runtime node packing (28 bytes; leaf bit, 4-bit count, 27-bit first index).
TEST(StaticAabbTree, Scenario13_RuntimeNodePacking) {
    static_assert(sizeof(Node) == 28);
    const Box b{{0, 0, 0}, {1, 1, 1}};
    const Node leaf = Node::leaf(b, (1u << 27) - 1, 15);
    EXPECT_TRUE(leaf.is_leaf());
    EXPECT_EQ(leaf.first(), (1u << 27) - 1);
    EXPECT_EQ(leaf.count(), 15u);
    const Node internal = Node::internal(b, (1u << 31) - 1);
    EXPECT_FALSE(internal.is_leaf());
    EXPECT_EQ(internal.left(), (1u << 31) - 1);

    // A built tree: every leaf within the limit, children after parents, leaves cover 0..n-1.
    StaticAabbTree tree;
    ASSERT_TRUE(tree.build(scene_boxes("uniform", 1000)).ok());
    std::size_t covered = 0;
    for (std::size_t i = 0; i < tree.nodes().size(); ++i) {
        const Node& n = tree.nodes()[i];
        if (n.is_leaf()) {
            EXPECT_LE(n.count(), 4u);
            EXPECT_GE(n.count(), 1u);
            covered += n.count();
        } else {
            EXPECT_GT(n.left(), i);
            EXPECT_EQ(tree.parent_indices()[n.left()], i);
        }
    }
    EXPECT_EQ(covered, 1000u);
    EXPECT_EQ(tree.parent_indices()[0], StaticAabbTree::kNone);
    // The variance split: the root splits the axis of largest centroid variance (x for an
    // x-stretched scene): every left-subtree centroid is above every right-subtree one... in x.
    std::vector<Box> stretched;
    for (const Box& b2 : scene_boxes("uniform", 500)) {
        stretched.push_back(
            Box{{10 * b2.min.x, b2.min.y, b2.min.z}, {10 * b2.min.x + 0.01f, b2.max.y, b2.max.z}});
    }
    ASSERT_TRUE(tree.build(stretched).ok());
    const Node& root = tree.nodes()[0];
    ASSERT_FALSE(root.is_leaf());
    EXPECT_GT(tree.nodes()[root.left()].bounds.min.x, 4.0f);
    EXPECT_LT(tree.nodes()[root.left() + 1].bounds.max.x, 6.0f);
}

// Scenario 14: validate() notices corrupted bounds, parents, indices and leaf sizes.
TEST(StaticAabbTree, Scenario14_ValidateCatchesCorruption) {
    const std::vector<Box> boxes = scene_boxes("uniform", 200);
    const auto fresh = [&] {
        StaticAabbTree t;
        EXPECT_TRUE(t.build(boxes).ok());
        return t;
    };
    {
        StaticAabbTree t = fresh();
        expect_valid(t);
        Access::nodes(t)[0].bounds.max.x -= 0.5f;
        EXPECT_FALSE(t.validate().ok());
    }
    {
        StaticAabbTree t = fresh();
        Access::parents(t)[3] = 2;
        EXPECT_FALSE(t.validate().ok());
    }
    {
        StaticAabbTree t = fresh();
        std::swap(Access::indices(t)[0], Access::indices(t)[150]);
        EXPECT_FALSE(t.validate().ok());
    }
    {
        StaticAabbTree t = fresh();
        Access::indices(t)[7] = Access::indices(t)[8];
        EXPECT_FALSE(t.validate().ok());
    }
    {
        StaticAabbTree t = fresh();
        Access::boxes(t)[5].max.y += 10;  // a box grew without mark_dirty
        EXPECT_FALSE(t.validate().ok());
    }
    {
        StaticAabbTree t = fresh();
        for (Node& n : Access::nodes(t)) {
            if (n.is_leaf()) {
                n = Node::leaf(n.bounds, n.first(), 5);  // over the limit and overlapping ranges
                break;
            }
        }
        EXPECT_FALSE(t.validate().ok());
    }
}

// Scenario 15: duplicate caller ids and a leaf limit beyond the packing are rejected. (Bad boxes
// and ids: the typed suite.)
TEST(StaticAabbTree, Scenario15_RejectsDuplicateIdsAndBadLeafLimit) {
    StaticAabbTree tree;
    const std::vector<Box> boxes(2, Box{{0, 0, 0}, {1, 1, 1}});
    const std::vector<std::uint32_t> dup_ids = {4, 4};
    EXPECT_FALSE(tree.build(boxes, dup_ids).ok());
    EXPECT_EQ(tree.size(), 0u);
    expect_valid(tree);
    StaticAabbTree::Config bad;
    bad.leaf_limit = 16;
    EXPECT_FALSE(StaticAabbTree(bad).build(boxes).ok());
}

// Scenario 16: self-pairs and region queries prune at internal nodes.
TEST(StaticAabbTree, Scenario16_QueriesPrune) {
    const std::vector<Box> boxes = scene_boxes("uniform", 3000);
    StaticAabbTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    const std::vector<Pair> pairs = testing::counted_self_pairs(tree);
    EXPECT_GE(tree.stats().box_tests, pairs.size());
    EXPECT_LT(tree.stats().box_tests, 40u * 3000u);
    const std::vector<std::uint32_t> hits = testing::counted_query_box(tree, boxes[17]);
    EXPECT_LT(tree.stats().box_tests, 100u);
    EXPECT_FALSE(hits.empty());
}

}  // namespace
}  // namespace broadphase
