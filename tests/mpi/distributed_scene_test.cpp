// broadphase::mpi::DistributedScene, run by ctest under mpirun on 1, 2, 3 and 4 ranks: every
// answer, gathered over the ranks, against the single-process answer on the whole scene (the
// concatenation of the ranks' boxes in rank order, where GlobalId {r, k} is box offset(r) + k),
// exactly.
//
// Every rank runs every test and makes the same collective calls in the same order; checks are
// EXPECTs (an ASSERT that returned on one rank alone would leave the others waiting), and every
// check is made on every rank from gathered data, so that all ranks agree on a failure.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "broadphase/mpi.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"

namespace broadphase::mpi {
namespace {

int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
int world_size() {
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

// Every rank's items, gathered on every rank in rank order; `counts[r]` is rank r's number.
template <class T>
std::vector<T> gather(const std::vector<T>& mine, std::vector<int>* counts = nullptr) {
    const int size = world_size();
    const int bytes = static_cast<int>(mine.size() * sizeof(T));
    std::vector<int> sizes(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
    MPI_Allgather(&bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size; ++r) {
        displs[std::size_t(r)] = total;
        total += sizes[std::size_t(r)];
    }
    std::vector<T> all(std::size_t(total) / sizeof(T));
    MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
    if (counts) {
        counts->resize(static_cast<std::size_t>(size));
        for (int r = 0; r < size; ++r)
            (*counts)[std::size_t(r)] = sizes[std::size_t(r)] / static_cast<int>(sizeof(T));
    }
    return all;
}

// A scene split over the ranks: rank r holds the boxes of `all` with rank_of == r, in order.
struct Split {
    std::vector<Box> mine;           // this rank's boxes
    std::vector<Box> whole;          // every rank's, concatenated in rank order
    std::vector<std::size_t> first;  // rank r's boxes start at whole[first[r]]
    std::size_t global(const GlobalId& id) const { return first[id.rank] + id.index; }
    GlobalId id(std::size_t g) const {
        const auto r = std::upper_bound(first.begin(), first.end(), g) - first.begin() - 1;
        return GlobalId{static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(g - first[r])};
    }
};

template <class RankOf>
Split split(const std::vector<Box>& all, RankOf rank_of) {
    const int size = world_size();
    Split s;
    std::vector<std::vector<Box>> by_rank(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < all.size(); ++i) {
        const int r = rank_of(i, all[i]);
        by_rank[std::size_t(r)].push_back(all[i]);
    }
    for (int r = 0; r < size; ++r) {
        s.first.push_back(s.whole.size());
        s.whole.insert(s.whole.end(), by_rank[std::size_t(r)].begin(),
                       by_rank[std::size_t(r)].end());
    }
    s.mine = by_rank[std::size_t(world_rank())];
    return s;
}

// Slabs along x over [lo, hi): rank by the box centre, clamped.
Split slabs(const std::vector<Box>& all, float lo = 0, float hi = 1) {
    const int size = world_size();
    return split(all, [&](std::size_t, const Box& b) {
        const float x = (centroid(b).x - lo) / (hi - lo);
        return std::clamp(static_cast<int>(std::floor(x * float(size))), 0, size - 1);
    });
}

// Each box to a random rank (seeded): every rank's boxes span the whole scene.
Split random_ranks(const std::vector<Box>& all, std::uint32_t seed = 7) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(0, world_size() - 1);
    return split(all, [&](std::size_t, const Box&) { return pick(rng); });
}

std::vector<Box> standard(const char* name, std::size_t n) {
    return generate_scene(name, n).value().boxes;
}

// Test 1 of every scene: the pairs of every rank, gathered, are the single-process pairs, each
// once, each reported by its pair_owner; `ghosts` (when given) receives the ghosts sent in all.
void expect_pairs(const Split& s, const std::string& method = "sweep_and_prune",
                  std::uint64_t* ghosts = nullptr) {
    auto dist = DistributedScene::create(MPI_COMM_WORLD, method);
    ASSERT_TRUE(dist) << dist.error().message;  // agreed: the same on every rank
    ASSERT_TRUE((*dist)->set_boxes(s.mine));
    auto pairs = (*dist)->find_pairs();
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_TRUE(std::is_sorted(pairs->begin(), pairs->end()));
    for (const GlobalPair& p : *pairs) {
        EXPECT_LT(p.a, p.b);
        EXPECT_EQ((*dist)->pair_owner(int(p.a.rank), int(p.b.rank)), world_rank());
    }
    if (ghosts) {
        *ghosts = (*dist)->last_exchange().items_sent;
        MPI_Allreduce(MPI_IN_PLACE, ghosts, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    std::vector<Pair> found;
    for (const GlobalPair& p : gather(*pairs)) {
        found.push_back(Pair{static_cast<std::uint32_t>(s.global(p.a)),
                             static_cast<std::uint32_t>(s.global(p.b))});
    }
    std::sort(found.begin(), found.end());
    const auto expected = find_pairs_cpu("brute_force", s.whole).value();
    EXPECT_EQ(found.size(), expected.size()) << method;
    EXPECT_TRUE(found == expected) << method;
}

TEST(DistributedPairs, UniformBySlabs) {
    expect_pairs(slabs(standard("uniform", 3000)));
}

TEST(DistributedPairs, UniformRandomRanks) {
    expect_pairs(random_ranks(standard("uniform", 3000)));
}

TEST(DistributedPairs, ClusteredBySlabs) {
    expect_pairs(slabs(standard("clustered", 3000)));
}

TEST(DistributedPairs, ClusteredRandomRanks) {
    expect_pairs(random_ranks(standard("clustered", 3000)));
}

// degenerate: duplicates, points, flat boxes, one huge box and a far group; the far group and
// the huge box fall in the outer slabs.
TEST(DistributedPairs, DegenerateBySlabs) {
    const auto all = standard("degenerate", 2000);
    const Box b = bounds_of(all);
    expect_pairs(slabs(all, b.min.x, b.max.x));
    expect_pairs(slabs(all));
}

TEST(DistributedPairs, DegenerateRandomRanks) {
    expect_pairs(random_ranks(standard("degenerate", 2000), 11));
}

// A box over the whole world on the last rank overlaps the boxes of every rank. That rank's
// bounds are the world, and yet only the boxes near the slabs' faces travel, and the world box:
// the other ranks report their pairs with it.
TEST(DistributedPairs, OneBoxOverlapsEveryRank) {
    auto all = standard("uniform", 2000);
    all.push_back(Box{{-1, -1, -1}, {2, 2, 2}});
    const int last = world_size() - 1;
    const auto s = split(all, [&](std::size_t i, const Box& b) {
        if (i + 1 == all.size()) return last;
        return std::clamp(static_cast<int>(b.min.x * float(world_size())), 0, last);
    });
    std::uint64_t sent = 0;
    expect_pairs(s, "sweep_and_prune", &sent);
    EXPECT_LT(sent, all.size() / 4);
}

// Far offsets: two groups 1e6 apart, each split by slabs of its own.
TEST(DistributedPairs, FarOffsets) {
    auto all = standard("uniform", 1500);
    const auto far = standard("uniform", 1500);
    for (Box b : far) {
        b.min.x += 1e6f, b.max.x += 1e6f;
        all.push_back(b);
    }
    expect_pairs(random_ranks(all, 3));
    expect_pairs(slabs(all, 0, 1e6f + 1));
}

// An empty rank: with several ranks the last one gets nothing; on one rank the scene is empty.
TEST(DistributedPairs, EmptyRank) {
    const int size = world_size();
    if (size == 1) {
        expect_pairs(split(std::vector<Box>{}, [](std::size_t, const Box&) { return 0; }));
        return;
    }
    expect_pairs(split(standard("uniform", 2000), [&](std::size_t i, const Box&) {
        return static_cast<int>(i % std::size_t(size - 1));
    }));
}

// Touching faces count: a row of unit cubes, one per rank boundary, touching its neighbours.
TEST(DistributedPairs, TouchingAcrossRanks) {
    std::vector<Box> all;
    for (int k = 0; k < 64; ++k) all.push_back(Box{{float(k), 0, 0}, {float(k + 1), 1, 1}});
    expect_pairs(slabs(all, 0, 64));
}

// Every CPU method as the local method.
TEST(DistributedPairs, EveryCpuMethod) {
    const auto s = random_ranks(standard("uniform", 800), 5);
    for (std::string_view method : cpu_method_names()) expect_pairs(s, std::string(method));
}

#ifdef BROADPHASE_HAS_GPU
// gpu_lbvh on each rank's own device context (lavapipe where there is no GPU).
TEST(DistributedPairs, GpuLbvh) {
    expect_pairs(random_ranks(standard("uniform", 2000), 9), "gpu_lbvh");
}
#endif

// Test 2: the ghosts are exactly the boxes that overlap the bounds of the rank that reports
// their pairs, and the bytes are those boxes (28 B each) and one count per other rank.
TEST(DistributedExchange, GhostsAreTheBoxesNearTheOwner) {
    const auto s = slabs(standard("uniform", 3000));
    auto dist = DistributedScene::create(MPI_COMM_WORLD, "lbvh").value();
    ASSERT_TRUE(dist->set_boxes(s.mine));
    ASSERT_TRUE(dist->find_pairs());
    const int me = world_rank(), size = world_size();
    std::uint64_t expected = 0;
    for (int r = 0; r < size; ++r) {
        const auto bounds = dist->bounds(r);
        if (r == me || dist->pair_owner(me, r) != r || !bounds) continue;
        for (const Box& b : s.mine) expected += overlaps(b, *bounds) ? 1 : 0;
    }
    const ExchangeStats& stats = dist->last_exchange();
    EXPECT_EQ(stats.items_sent, expected);
    EXPECT_EQ(stats.bytes_sent, 28 * expected + 4 * std::uint64_t(size - 1));
    std::uint64_t sent = stats.items_sent, received = stats.items_received;
    MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &received, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(sent, received);
    // By slabs, only the boxes near a slab's faces travel: far fewer than the scene.
    EXPECT_LT(sent, s.whole.size() / 2);
}

// Test 3: region queries and ray casts from every rank, each rank with its own (rank 1 with
// none), against brute force on the whole scene.
void expect_queries(const Split& s, const std::string& method = "lbvh") {
    const int me = world_rank();
    auto dist = DistributedScene::create(MPI_COMM_WORLD, method);
    ASSERT_TRUE(dist) << dist.error().message;
    ASSERT_TRUE((*dist)->set_boxes(s.mine));
    const Box world = bounds_of(s.whole);
    std::mt19937 rng(100 + std::uint32_t(me));
    std::uniform_real_distribution<float> u(0, 1);
    const auto at = [&](int axis, float f) {
        return world.min[axis] + f * (world.max[axis] - world.min[axis]);
    };
    std::vector<Box> regions;
    std::vector<Ray> rays;
    if (me != 1) {
        for (int q = 0; q < 60; ++q) {
            Vec3 lo{at(0, u(rng)), at(1, u(rng)), at(2, u(rng))};
            const float side = 0.1f * u(rng);
            Vec3 hi{lo.x + side * (world.max.x - world.min.x), lo.y + side, lo.z + side};
            regions.push_back(Box{lo, hi});
            Vec3 dir{u(rng) - 0.5f, u(rng) - 0.5f, u(rng) - 0.5f};
            rays.push_back(
                Ray{lo, dir, q % 3 == 0 ? std::numeric_limits<float>::infinity() : 2.0f * u(rng)});
        }
        regions.push_back(world);                       // everything
        regions.push_back(Box{world.max, world.max});   // a corner point
        rays.push_back(Ray{world.max, {1, 1, 1}, 10});  // leaves the world at once
    }
    auto hits = (*dist)->query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    auto ray_hits = (*dist)->ray_casts(rays);
    ASSERT_TRUE(ray_hits) << ray_hits.error().message;

    auto oracle = make_structure("brute_force").value();
    ASSERT_TRUE(oracle->build(s.whole));
    ASSERT_EQ(hits->offsets.size(), regions.size() + 1);
    for (std::size_t q = 0; q < regions.size(); ++q) {
        std::vector<std::uint32_t> expected_ids;
        oracle->query_box(regions[q], expected_ids);
        std::vector<GlobalId> expected;
        for (std::uint32_t g : expected_ids) expected.push_back(s.id(g));
        std::sort(expected.begin(), expected.end());
        const auto got = hits->hits(q);
        EXPECT_TRUE(std::vector<GlobalId>(got.begin(), got.end()) == expected)
            << "rank " << me << " region " << q;
    }
    ASSERT_EQ(ray_hits->size(), rays.size());
    for (std::size_t q = 0; q < rays.size(); ++q) {
        const auto expected = oracle->ray_cast(rays[q]);
        const auto& got = (*ray_hits)[q];
        EXPECT_EQ(got.has_value(), expected.has_value()) << "rank " << me << " ray " << q;
        if (got && expected) {
            EXPECT_EQ(s.global(got->id), expected->id) << "rank " << me << " ray " << q;
            EXPECT_EQ(got->t, expected->t) << "rank " << me << " ray " << q;
        }
    }
}

TEST(DistributedQueries, UniformBySlabs) {
    expect_queries(slabs(standard("uniform", 2000)));
}

TEST(DistributedQueries, DegenerateRandomRanks) {
    expect_queries(random_ranks(standard("degenerate", 2000), 13), "dynamic_aabb_tree");
}

TEST(DistributedQueries, EmptyRank) {
    const int size = world_size();
    expect_queries(split(standard("clustered", 2000), [&](std::size_t i, const Box&) {
        return size == 1 ? 0 : static_cast<int>(i % std::size_t(size - 1));
    }));
}

// Duplicates on different ranks: ray hits tie on t and go to the smallest GlobalId.
TEST(DistributedQueries, TiesGoToTheSmallestId) {
    std::vector<Box> all(std::size_t(world_size()) * 3, Box{{0, 0, 0}, {1, 1, 1}});
    expect_queries(
        split(all, [](std::size_t i, const Box&) { return static_cast<int>(i) % world_size(); }));
}

#ifdef BROADPHASE_HAS_GPU
TEST(DistributedQueries, GpuLbvh) {
    expect_queries(random_ranks(standard("uniform", 1500), 17), "gpu_lbvh");
}
#endif

// Test 4: bad input on one rank is the same error on every rank, naming that rank and its box;
// nobody hangs, and the scene works again after good input.
TEST(DistributedErrors, BadBoxOnOneRank) {
    const int size = world_size(), bad = size - 1;
    auto dist = DistributedScene::create(MPI_COMM_WORLD, "lbvh").value();
    const auto s = slabs(standard("uniform", 1000));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    struct Case {
        Box box;
        const char* says;
    };
    for (const Case& c : {Case{{{nan, 0, 0}, {1, 1, 1}}, "box 5: min.x is NaN"},
                          Case{{{0, 0, 0}, {1, inf, 1}}, "box 5: max.y is infinite"},
                          Case{{{0, 0, 2}, {1, 1, 1}}, "box 5: min.z (2) > max.z (1)"}}) {
        std::vector<Box> boxes(8, Box{{0, 0, 0}, {1, 1, 1}});
        if (world_rank() == bad) boxes[5] = c.box;
        const Status status = dist->set_boxes(boxes);
        ASSERT_FALSE(status);
        EXPECT_EQ(status.error().code, ErrorCode::invalid_box);
        EXPECT_EQ(status.error().box, std::optional<std::size_t>(5));
        const std::string expected = "rank " + std::to_string(bad) + ": " + c.says;
        EXPECT_EQ(status.error().message.substr(0, expected.size()), expected)
            << status.error().message;
        EXPECT_TRUE(dist->boxes().empty());
    }
    // A bad box on every rank: the first rank's is named.
    std::vector<Box> boxes(3, Box{{0, 0, 0}, {nan, 1, 1}});
    const Status status = dist->set_boxes(boxes);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().message.rfind("rank 0: box 0: max.x is NaN", 0), 0u);
    // Good input again.
    ASSERT_TRUE(dist->set_boxes(s.mine));
    auto pairs = dist->find_pairs();
    ASSERT_TRUE(pairs);
    std::uint64_t count = pairs->size();
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(count, find_pairs_cpu("brute_force", s.whole).value().size());
}

TEST(DistributedErrors, BadQueryOnOneRank) {
    const int bad = world_size() - 1;
    auto dist = DistributedScene::create(MPI_COMM_WORLD, "lbvh").value();
    ASSERT_TRUE(dist->set_boxes(slabs(standard("uniform", 500)).mine));
    std::vector<Box> regions(4, Box{{0, 0, 0}, {0.5f, 0.5f, 0.5f}});
    if (world_rank() == bad) regions[2] = Box{{1, 0, 0}, {0, 1, 1}};
    auto hits = dist->query_boxes(regions);
    ASSERT_FALSE(hits);
    EXPECT_EQ(hits.error().message.rfind("rank " + std::to_string(bad) + ": region query box 2", 0),
              0u)
        << hits.error().message;
    std::vector<Ray> rays(2, Ray{{0, 0, 0}, {1, 0, 0}, 1});
    if (world_rank() == bad) rays[1].dir.y = std::numeric_limits<float>::quiet_NaN();
    auto ray_hits = dist->ray_casts(rays);
    ASSERT_FALSE(ray_hits);
    EXPECT_EQ(ray_hits.error().message.rfind("rank " + std::to_string(bad) + ": ray 1", 0), 0u)
        << ray_hits.error().message;
}

TEST(DistributedErrors, UnknownOrDifferentMethods) {
    auto unknown = DistributedScene::create(MPI_COMM_WORLD, "no_such_method");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().message.rfind("rank 0: ", 0), 0u) << unknown.error().message;
    if (world_size() > 1) {
        auto different =
            DistributedScene::create(MPI_COMM_WORLD, world_rank() == 0 ? "lbvh" : "kd_tree");
        ASSERT_FALSE(different);
        EXPECT_NE(different.error().message.find("different methods"), std::string::npos);
    }
}

// Prints the failures of ranks other than 0, whose own result printer is removed.
class RankFailures : public ::testing::EmptyTestEventListener {
public:
    explicit RankFailures(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult& result) override {
        if (!result.failed()) return;
        std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_,
                     result.file_name() ? result.file_name() : "?", result.line_number(),
                     result.summary());
    }

private:
    int rank_;
};

}  // namespace
}  // namespace broadphase::mpi

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    ::testing::InitGoogleTest(&argc, argv);
    const int rank = broadphase::mpi::world_rank();
    if (rank != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new broadphase::mpi::RankFailures(rank));
    }
    int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
