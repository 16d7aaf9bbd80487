// Tests of the CPU LBVH twin, step by step: order-preserving float keys, Morton bit
// interleaving, Skilling's Hilbert curve (adjacency of consecutive indices), the quantiser,
// the stable code sort, the Karras 2012 hierarchy (against an independent top-down radix-tree
// builder), bottom-up bounds, validate_tree on good and corrupted trees, and self-pairs
// against brute force for every code kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "lbvh.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase::lbvh {
namespace {

using gpu_layout::kInvalidNode;

using broadphase::testing::brute_pairs;

// ---- float_to_ordered ----------------------------------------------------------------------

TEST(FloatToOrdered, PreservesOrderAcrossSignsZerosDenormalsAndExtremes) {
    const float denorm = std::numeric_limits<float>::denorm_min();
    const float fmin = std::numeric_limits<float>::min();
    const float fmax = std::numeric_limits<float>::max();
    const float inf = std::numeric_limits<float>::infinity();
    // Strictly ascending, -0 placed before +0 as the mapping defines.
    const std::vector<float> ascending = {-inf,         -fmax,       -1e30f,  -3.5f,  -1.0f, -fmin,
                                          -fmin * 0.5f, -2 * denorm, -denorm, -0.0f,  0.0f,  denorm,
                                          2 * denorm,   fmin * 0.5f, fmin,    1e-20f, 0.5f,  1.0f,
                                          1.0000001f,   1e7f,        1e30f,   fmax,   inf};
    for (std::size_t i = 0; i + 1 < ascending.size(); ++i) {
        EXPECT_LT(float_to_ordered(ascending[i]), float_to_ordered(ascending[i + 1]))
            << ascending[i] << " vs " << ascending[i + 1];
    }
    EXPECT_EQ(float_to_ordered(0.0f), 0x80000000u);
    EXPECT_EQ(float_to_ordered(-0.0f), 0x7fffffffu);
    EXPECT_EQ(float_to_ordered(1.0f), 0x3f800000u ^ 0x80000000u);
    EXPECT_EQ(float_to_ordered(-1.0f), ~0xbf800000u);
}

TEST(FloatToOrdered, RandomPairsAndRoundTrip) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<std::uint32_t> bits;
    int compared = 0;
    for (int i = 0; i < 200000; ++i) {
        const float a = std::bit_cast<float>(bits(rng));
        const float b = std::bit_cast<float>(bits(rng));
        if (std::isnan(a) || std::isnan(b)) continue;
        ++compared;
        if (a < b) {
            ASSERT_LT(float_to_ordered(a), float_to_ordered(b)) << a << " " << b;
        } else if (b < a) {
            ASSERT_GT(float_to_ordered(a), float_to_ordered(b)) << a << " " << b;
        }
        ASSERT_EQ(std::bit_cast<std::uint32_t>(ordered_to_float(float_to_ordered(a))),
                  std::bit_cast<std::uint32_t>(a));
        ASSERT_EQ(float_to_ordered(ordered_to_float(bits(rng) | 1u)) & 1u, 1u);
    }
    EXPECT_GT(compared, 190000);
}

// ---- Morton --------------------------------------------------------------------------------

std::uint64_t naive_interleave(const std::uint32_t q[3], int bits) {
    std::uint64_t code = 0;
    for (int b = bits - 1; b >= 0; --b) {
        for (int axis = 0; axis < 3; ++axis) code = (code << 1) | ((q[axis] >> b) & 1u);
    }
    return code;
}

TEST(Morton, ExpandBitsKnownValues) {
    EXPECT_EQ(expand_bits_10(0u), 0u);
    EXPECT_EQ(expand_bits_10(1u), 1u);
    EXPECT_EQ(expand_bits_10(2u), 8u);
    EXPECT_EQ(expand_bits_10(3u), 9u);
    EXPECT_EQ(expand_bits_10(0x3ffu), 0x09249249u);
    EXPECT_EQ(expand_bits_10(0x200u), 1u << 27);
    EXPECT_EQ(expand_bits_10(0x400u), 0u);  // only the low 10 bits are spread
    EXPECT_EQ(expand_bits_21(1u), 1u);
    EXPECT_EQ(expand_bits_21(0x1fffffu), 0x1249249249249249ull);
    EXPECT_EQ(expand_bits_21(1u << 20), 1ull << 60);
    EXPECT_EQ(expand_bits_21(1u << 21), 0u);
}

TEST(Morton, CodesPutXHighest) {
    const std::uint32_t x[3] = {1, 0, 0}, y[3] = {0, 1, 0}, z[3] = {0, 0, 1};
    EXPECT_EQ(morton30(x), 4u);
    EXPECT_EQ(morton30(y), 2u);
    EXPECT_EQ(morton30(z), 1u);
    EXPECT_EQ(morton63(x), 4u);
    const std::uint32_t top10[3] = {1023, 1023, 1023}, top21[3] = {0x1fffff, 0x1fffff, 0x1fffff};
    EXPECT_EQ(morton30(top10), (1u << 30) - 1);
    EXPECT_EQ(morton63(top21), (1ull << 63) - 1);
    const std::uint32_t mixed[3] = {0x200, 0x001, 0x155};
    EXPECT_EQ(morton30(mixed), naive_interleave(mixed, 10));
    std::mt19937 rng(8);
    for (int i = 0; i < 10000; ++i) {
        std::uint32_t q10[3], q21[3];
        for (int a = 0; a < 3; ++a) {
            q10[a] = rng() & 0x3ffu;
            q21[a] = rng() & 0x1fffffu;
        }
        ASSERT_EQ(morton30(q10), naive_interleave(q10, 10));
        ASSERT_EQ(morton63(q21), naive_interleave(q21, 21));
    }
}

// morton_order (broadphase/structure.hpp) is the order of the boxes' compute_codes, ties by
// index, a permutation of every index; a shuffled 8 x 8 x 8 grid comes back in Morton order.
TEST(Morton, OrderSortsByTheCentresCodes) {
    std::vector<Box> boxes;
    for (std::uint32_t x = 0; x < 8; ++x)
        for (std::uint32_t y = 0; y < 8; ++y)
            for (std::uint32_t z = 0; z < 8; ++z) {
                const Vec3 lo{float(x), float(y), float(z)};
                boxes.push_back({lo, {lo.x + 0.5f, lo.y + 0.5f, lo.z + 0.5f}});
            }
    boxes.push_back(boxes[100]);  // a copy: ties keep the index order
    std::mt19937 rng(21);
    std::shuffle(boxes.begin(), boxes.end() - 1, rng);
    const std::vector<std::uint32_t> order = broadphase::morton_order(boxes);
    ASSERT_EQ(order.size(), boxes.size());
    std::vector<std::uint32_t> seen = order;
    std::sort(seen.begin(), seen.end());
    for (std::uint32_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i);
    const std::vector<std::uint64_t> codes = compute_codes(boxes, CodeKind::morton30);
    for (std::size_t k = 1; k < order.size(); ++k) {
        ASSERT_LE(codes[order[k - 1]], codes[order[k]]);
        if (codes[order[k - 1]] == codes[order[k]]) {
            EXPECT_LT(order[k - 1], order[k]);
        }
    }
    // The grid's cells in Morton order: each step of the first 8 stays inside one 2 x 2 x 2
    // block, x highest.
    for (std::size_t k = 0; k < 8; ++k) {
        const Box& b = boxes[order[k]];
        EXPECT_EQ(b.min.x, float((k >> 2) & 1));
        EXPECT_EQ(b.min.y, float((k >> 1) & 1));
        EXPECT_EQ(b.min.z, float(k & 1));
    }
    EXPECT_TRUE(broadphase::morton_order({}).empty());
}

// ---- Hilbert -------------------------------------------------------------------------------

// Skilling's TransposeToAxes, the inverse of hilbert30's AxesToTranspose, for 10 bits.
void hilbert_inverse(std::uint32_t index, std::uint32_t q[3]) {
    std::uint32_t x[3] = {0, 0, 0};
    for (int b = 9; b >= 0; --b) {
        for (int axis = 0; axis < 3; ++axis) {
            x[axis] |= ((index >> (3 * b + (2 - axis))) & 1u) << b;
        }
    }
    const std::uint32_t n = 2u << 9;
    std::uint32_t t = x[2] >> 1;
    for (int i = 2; i > 0; --i) x[i] ^= x[i - 1];
    x[0] ^= t;
    for (std::uint32_t bit = 2; bit != n; bit <<= 1) {
        const std::uint32_t low = bit - 1;
        for (int i = 2; i >= 0; --i) {
            if (x[i] & bit) {
                x[0] ^= low;
            } else {
                t = (x[0] ^ x[i]) & low;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
    }
    for (int a = 0; a < 3; ++a) q[a] = x[a];
}

std::uint32_t manhattan(const std::uint32_t a[3], const std::uint32_t b[3]) {
    std::uint32_t d = 0;
    for (int i = 0; i < 3; ++i) d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    return d;
}

TEST(Hilbert, SmallGridsAreFilledByAContinuousCurve) {
    // A Hilbert curve starting at the origin fills each cube [0, 2^k)^3 with its first 8^k
    // indices. Invert by brute force on 8^3 and 16^3 cells and walk the curve.
    for (const std::uint32_t side : {2u, 8u, 16u}) {
        const std::uint32_t cells = side * side * side;
        std::vector<std::array<std::uint32_t, 3>> cell_of(cells, {~0u, ~0u, ~0u});
        for (std::uint32_t x = 0; x < side; ++x) {
            for (std::uint32_t y = 0; y < side; ++y) {
                for (std::uint32_t z = 0; z < side; ++z) {
                    const std::uint32_t q[3] = {x, y, z};
                    const std::uint32_t h = hilbert30(q);
                    ASSERT_LT(h, cells) << x << " " << y << " " << z;
                    ASSERT_EQ(cell_of[h][0], ~0u) << "index " << h << " used twice";
                    cell_of[h] = {x, y, z};
                }
            }
        }
        for (std::uint32_t h = 0; h + 1 < cells; ++h) {
            ASSERT_EQ(manhattan(cell_of[h].data(), cell_of[h + 1].data()), 1u)
                << "side " << side << " index " << h;
        }
    }
    const std::uint32_t origin[3] = {0, 0, 0};
    EXPECT_EQ(hilbert30(origin), 0u);
}

TEST(Hilbert, WholeGridConsecutiveIndicesAreNeighbours) {
    std::mt19937 rng(21);
    std::uniform_int_distribution<std::uint32_t> index(0, (1u << 30) - 2);
    std::vector<std::uint32_t> samples = {0u, (1u << 27) - 1, (1u << 29), (1u << 30) - 2};
    for (int i = 0; i < 20000; ++i) samples.push_back(index(rng));
    for (const std::uint32_t h : samples) {
        std::uint32_t a[3], b[3];
        hilbert_inverse(h, a);
        hilbert_inverse(h + 1, b);
        ASSERT_EQ(hilbert30(a), h);
        ASSERT_EQ(hilbert30(b), h + 1);
        ASSERT_EQ(manhattan(a, b), 1u) << h;
    }
    // It is not Morton order: the codes differ somewhere in a small cube.
    int differ = 0;
    for (std::uint32_t i = 0; i < 64; ++i) {
        const std::uint32_t q[3] = {i >> 4, (i >> 2) & 3, i & 3};
        differ += hilbert30(q) != morton30(q);
    }
    EXPECT_GT(differ, 0);
}

// ---- quantiser and codes -------------------------------------------------------------------

TEST(Quantizer, FollowsTheDocumentedFormula) {
    const Box bounds{{0, -2, 5}, {1, 2, 5}};  // z has zero extent; y is the largest (4)
    const Quantizer q(bounds, 10);
    // One scale for every axis (cubic cells), from the largest extent.
    EXPECT_EQ(q.scale.x, 1024.0f * (1.0f / 4.0f));
    EXPECT_EQ(q.scale.y, 1024.0f * (1.0f / 4.0f));
    EXPECT_EQ(q.scale.z, 1024.0f * (1.0f / 4.0f));
    std::uint32_t out[3];
    q.quantize(Box{{0, -2, 5}, {0, -2, 5}}, out);
    EXPECT_EQ(out[0], 0u);
    EXPECT_EQ(out[1], 0u);
    EXPECT_EQ(out[2], 0u);
    q.quantize(Box{{1, 2, 5}, {1, 2, 5}}, out);  // the top edge of y clamps to 2^bits - 1
    EXPECT_EQ(out[0], 256u);                     // x spans a quarter of the cells
    EXPECT_EQ(out[1], 1023u);
    EXPECT_EQ(out[2], 0u);
    q.quantize(Box{{0.25f, -1, 5}, {0.75f, 1, 5}}, out);  // centroid (0.5, 0)
    EXPECT_EQ(out[0], 128u);
    EXPECT_EQ(out[1], 512u);
    const Quantizer flat(Box{{3, 3, 3}, {3, 3, 3}}, 10);  // every extent 0: scale 0
    EXPECT_EQ(flat.scale.x, 0.0f);

    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-3.0f, 7.0f);
    std::vector<Box> boxes;
    for (int i = 0; i < 500; ++i) {
        Box b{{u(rng), u(rng), u(rng)}, {}};
        b.max = {b.min.x + 0.5f, b.min.y + 0.25f, b.min.z};
        boxes.push_back(b);
    }
    const Box cb = centroid_bounds(boxes);
    for (const std::uint32_t bits : {10u, 21u}) {
        const Quantizer qz(cb, bits);
        for (const Box& b : boxes) {
            qz.quantize(b, out);
            const float extent =
                std::max({cb.max.x - cb.min.x, cb.max.y - cb.min.y, cb.max.z - cb.min.z});
            const float scale = float(1u << bits) * (1.0f / extent);
            for (int a = 0; a < 3; ++a) {
                const float c = (b.min[a] + b.max[a]) * 0.5f;
                const auto expect =
                    std::min(static_cast<std::uint32_t>((c - cb.min[a]) * scale), (1u << bits) - 1);
                ASSERT_EQ(out[a], expect);
            }
        }
    }
}

TEST(Codes, CentroidBoundsAndKinds) {
    EXPECT_EQ(centroid_bounds({}), Box{});
    const std::vector<Box> boxes = {{{0, 0, 0}, {2, 2, 2}}, {{-4, 1, 1}, {-2, 1, 3}}};
    const Box cb = centroid_bounds(boxes);
    EXPECT_EQ(cb.min, (Vec3{-3, 1, 1}));
    EXPECT_EQ(cb.max, (Vec3{1, 1, 2}));
    EXPECT_EQ(code_bits(CodeKind::morton30), 30);
    EXPECT_EQ(code_bits(CodeKind::hilbert30), 30);
    EXPECT_EQ(code_bits(CodeKind::morton63), 63);
    auto scene = generate_scene("uniform", 1000);
    ASSERT_TRUE(scene.ok());
    for (const CodeKind kind : {CodeKind::morton30, CodeKind::morton63, CodeKind::hilbert30}) {
        const std::vector<std::uint64_t> codes = compute_codes(scene->boxes, kind);
        ASSERT_EQ(codes.size(), 1000u);
        const Quantizer q(centroid_bounds(scene->boxes), kind == CodeKind::morton63 ? 21 : 10);
        for (std::size_t i = 0; i < codes.size(); ++i) {
            ASSERT_LT(codes[i], 1ull << code_bits(kind));
            std::uint32_t v[3];
            q.quantize(scene->boxes[i], v);
            const std::uint64_t expect = kind == CodeKind::morton30   ? morton30(v)
                                         : kind == CodeKind::morton63 ? morton63(v)
                                                                      : hilbert30(v);
            ASSERT_EQ(codes[i], expect);
        }
    }
}

// ---- adaptive codes (refine_codes) ---------------------------------------------------------

// 60 boxes in a unit cube and 2 boxes 1e7 away: the cube falls into one cell of the first grid.
std::vector<Box> cluster_and_outliers() {
    std::vector<Box> boxes;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (int i = 0; i < 60; ++i) {
        const Vec3 p{unit(rng), unit(rng), unit(rng)};
        boxes.push_back({p, {p.x + 0.05f, p.y + 0.05f, p.z + 0.05f}});
    }
    boxes.push_back({{1e7f, 0, 0}, {1e7f + 1, 1, 1}});
    boxes.push_back({{0, -1e7f, 0}, {1, -1e7f + 1, 1}});
    return boxes;
}

TEST(RefineCodes, RunsAreRecodedInTheirOwnBounds) {
    const std::vector<Box> boxes = cluster_and_outliers();
    for (const CodeKind kind : {CodeKind::morton30, CodeKind::hilbert30}) {
        std::vector<std::uint64_t> codes = compute_codes(boxes, kind);
        std::vector<std::uint32_t> ids = sort_codes(codes);
        const std::vector<std::uint64_t> first = codes;
        const std::uint64_t cube =
            first[std::size_t(std::find(ids.begin(), ids.end(), 0u) - ids.begin())];
        ASSERT_EQ(std::count(first.begin(), first.end(), cube), 60) << "the cube is one run";
        ASSERT_TRUE(refine_codes(boxes, kind, codes, ids));
        // The cluster's second codes are the kind's code in the cluster's own centroid bounds.
        const Quantizer q(centroid_bounds(std::span(boxes).first(60)), 10);
        for (std::size_t p = 0; p < codes.size(); ++p) {
            const std::uint32_t id = ids[p];
            if (id >= 60) continue;
            std::uint32_t v[3];
            q.quantize(boxes[id], v);
            const std::uint64_t second = kind == CodeKind::morton30 ? morton30(v) : hilbert30(v);
            ASSERT_EQ(codes[p], cube << 32 | second) << "box " << id;
        }
        // Sorted by key, then id; ids a permutation.
        for (std::size_t p = 1; p < codes.size(); ++p) {
            ASSERT_TRUE(codes[p - 1] < codes[p] ||
                        (codes[p - 1] == codes[p] && ids[p - 1] < ids[p]));
        }
        std::vector<std::uint32_t> sorted_ids = ids;
        std::sort(sorted_ids.begin(), sorted_ids.end());
        for (std::uint32_t i = 0; i < sorted_ids.size(); ++i) ASSERT_EQ(sorted_ids[i], i);
        // The singleton runs (the outliers) keep a second code of 0: their bounds are a point.
        for (std::size_t p = 0; p < codes.size(); ++p) {
            if (ids[p] >= 60) {
                EXPECT_EQ(codes[p] & 0xffffffffu, 0u);
            }
        }
    }
}

TEST(RefineCodes, ShortRunsOnlyShiftTheCodes) {
    // Runs shorter than kRefineRun: keys become code << 32 and the order stays.
    std::vector<Box> boxes;
    for (std::uint32_t i = 0; i < kRefineRun - 1; ++i) boxes.push_back({{0, 0, 0}, {1, 1, 1}});
    boxes.push_back({{5, 5, 5}, {6, 6, 6}});
    std::vector<std::uint64_t> codes = compute_codes(boxes, CodeKind::morton30);
    std::vector<std::uint32_t> ids = sort_codes(codes);
    const std::vector<std::uint64_t> first = codes;
    const std::vector<std::uint32_t> first_ids = ids;
    EXPECT_FALSE(refine_codes(boxes, CodeKind::morton30, codes, ids));
    EXPECT_EQ(ids, first_ids);
    for (std::size_t p = 0; p < codes.size(); ++p) EXPECT_EQ(codes[p], first[p] << 32);
    // One more equal box makes a run of kRefineRun: refined (all equal centroids: second 0).
    boxes.push_back({{0, 0, 0}, {1, 1, 1}});
    SortedKeys keys = sorted_keys(boxes, CodeKind::morton30);
    EXPECT_TRUE(keys.refined);
    // morton63 is never refined; refine = false leaves the first codes.
    EXPECT_FALSE(sorted_keys(boxes, CodeKind::morton63).refined);
    EXPECT_EQ(sorted_keys(boxes, CodeKind::morton30, false).codes, [&] {
        auto c = compute_codes(boxes, CodeKind::morton30);
        sort_codes(c);
        return c;
    }());
}

// The refinement's effect on the traversal: with it, self-pairs on the far-spread scenes visit
// about as many nodes per box as on uniform; without it, hundreds of times more (the measured
// choice, docs/performance.md). And uniform scenes are left alone.
TEST(RefineCodes, KeepsFarSpreadScenesNearUniformCost) {
    constexpr std::size_t n = 20000;
    auto visits = [&](const char* generator, bool refine, bool* refined = nullptr) {
        auto scene = generate_scene(generator, n);
        EXPECT_TRUE(scene.ok());
        LbvhStructure s(CodeKind::morton30, refine);
        EXPECT_TRUE(s.build(scene->boxes));
        if (refined) *refined = sorted_keys(scene->boxes, CodeKind::morton30, refine).refined;
        s.reset_stats();
        std::vector<Pair> pairs;
        s.self_pairs(pairs);
        return double(s.stats().nodes_visited + s.stats().leaves_visited) / double(n);
    };
    bool refined = true;
    const double uniform = visits("uniform", true, &refined);
    EXPECT_FALSE(refined);
    for (const char* g : {"level", "multiscale", "degenerate"}) {
        const double with = visits(g, true, &refined);
        EXPECT_TRUE(refined) << g;
        EXPECT_LE(with, 2.0 * uniform) << g;
        EXPECT_GE(visits(g, false), 10.0 * uniform) << g << ": the scene no longer needs it";
    }
}

// ---- sort ----------------------------------------------------------------------------------

TEST(SortCodes, StableWithDuplicateCodes) {
    std::vector<std::uint64_t> codes = {5, 3, 5, 3, 1, 5, 0x7fffffffffffffffull, 3};
    const std::vector<std::uint32_t> ids = sort_codes(codes);
    EXPECT_EQ(codes, (std::vector<std::uint64_t>{1, 3, 3, 3, 5, 5, 5, 0x7fffffffffffffffull}));
    EXPECT_EQ(ids, (std::vector<std::uint32_t>{4, 1, 3, 7, 0, 2, 5, 6}));

    std::mt19937_64 rng(17);
    std::vector<std::uint64_t> random(20000);
    for (auto& c : random) c = rng() % 37 + ((rng() % 2) << 40);  // heavy duplicates
    std::vector<std::uint32_t> expect(random.size());
    for (std::uint32_t i = 0; i < expect.size(); ++i) expect[i] = i;
    std::stable_sort(expect.begin(), expect.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return random[a] < random[b]; });
    const std::vector<std::uint64_t> original = random;
    const std::vector<std::uint32_t> got = sort_codes(random);
    EXPECT_EQ(got, expect);
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_EQ(random[k], original[got[k]]);
    std::vector<std::uint64_t> none;
    EXPECT_TRUE(sort_codes(none).empty());
}

// ---- hierarchy -----------------------------------------------------------------------------

// Common prefix of the keys (code, index), as documented.
int prefix(std::span<const std::uint64_t> c, std::int64_t i, std::int64_t j) {
    if (j < 0 || j >= static_cast<std::int64_t>(c.size())) return -1;
    if (c[i] != c[j]) return std::countl_zero(c[i] ^ c[j]);
    return 64 + std::countl_zero(static_cast<std::uint32_t>(i ^ j));
}

// The binary radix tree built top down: a range splits after the last key sharing more than
// the range's common prefix with its first key. Node numbering as Karras: a child range that
// ends (left child) or starts (right child) at the split is numbered by that split position.
std::vector<gpu_layout::uvec4> reference_links(std::span<const std::uint64_t> codes,
                                               std::span<const std::uint32_t> ids) {
    const auto n = static_cast<std::uint32_t>(codes.size());
    std::vector<gpu_layout::uvec4> links(2 * n - 1, {0, 0, kInvalidNode, 0});
    for (std::uint32_t p = 0; p < n; ++p) links[n - 1 + p] = {ids[p], p, kInvalidNode, p};
    if (n == 1) return links;
    std::function<void(std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t)> split =
        [&](std::uint32_t node, std::uint32_t first, std::uint32_t last, std::uint32_t parent) {
            const int common = prefix(codes, first, last);
            std::uint32_t gamma = first;
            for (std::uint32_t k = first; k < last; ++k) {
                if (prefix(codes, first, k) > common) gamma = k;
            }
            const std::uint32_t left = gamma == first ? n - 1 + gamma : gamma;
            const std::uint32_t right = gamma + 1 == last ? n - 1 + gamma + 1 : gamma + 1;
            links[node] = {left, right, parent, last};
            if (gamma == first) {
                links[left].z = node;
            } else {
                split(left, first, gamma, node);
            }
            if (gamma + 1 == last) {
                links[right].z = node;
            } else {
                split(right, gamma + 1, last, node);
            }
        };
    split(0, 0, n - 1, kInvalidNode);
    return links;
}

std::vector<Box> boxes_for(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<Box> boxes(n);
    for (Box& b : boxes) {
        b.min = {u(rng), u(rng), u(rng)};
        b.max = {b.min.x + 0.05f * u(rng), b.min.y + 0.05f * u(rng), b.min.z + 0.05f * u(rng)};
    }
    return boxes;
}

int tree_height(std::span<const LbvhNode> nodes, std::uint32_t n) {
    std::function<int(std::uint32_t)> height = [&](std::uint32_t node) -> int {
        if (node + 1 >= n) return 0;
        return 1 + std::max(height(nodes[node].link.x), height(nodes[node].link.y));
    };
    return height(0);
}

// The two trees are equal byte for byte (links and bounds, the w lanes included).
void expect_same_bytes(const std::vector<LbvhNode>& got, const std::vector<LbvhNode>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& a = got[i].link;
        const auto& b = want[i].link;
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(LbvhNode)), 0)
            << "node " << i << ": (" << a.x << "," << a.y << "," << a.z << "," << a.w
            << ") expected (" << b.x << "," << b.y << "," << b.z << "," << b.w << ")";
    }
}

// Builds a hierarchy over the given (unsorted) codes and checks it against the reference
// radix tree and validate_tree.
std::vector<LbvhNode> check_hierarchy(std::vector<std::uint64_t> codes) {
    const std::vector<std::uint32_t> ids = sort_codes(codes);
    std::vector<LbvhNode> nodes = build_hierarchy(codes, ids);
    const std::vector<gpu_layout::uvec4> expect = reference_links(codes, ids);
    EXPECT_EQ(nodes.size(), expect.size());
    for (std::size_t i = 0; i < std::min(nodes.size(), expect.size()); ++i) {
        const auto& a = nodes[i].link;
        const auto& b = expect[i];
        EXPECT_TRUE(a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w)
            << "node " << i << ": (" << a.x << "," << a.y << "," << a.z << "," << a.w
            << ") expected (" << b.x << "," << b.y << "," << b.z << "," << b.w << ")";
    }
    const std::vector<Box> boxes = boxes_for(codes.size(), 1);
    compute_bounds(nodes, boxes);
    const Status valid = validate_tree(nodes, boxes);
    EXPECT_TRUE(valid.ok()) << valid.error().message;
    expect_same_bytes(build_bottom_up(codes, ids, boxes), nodes);
    return nodes;
}

TEST(Hierarchy, RandomCodesMatchTheTopDownRadixTree) {
    std::mt19937_64 rng(2);
    for (const std::size_t n : {2u, 3u, 4u, 5u, 17u, 100u, 1000u, 4097u}) {
        for (const int bits : {30, 63}) {
            std::vector<std::uint64_t> codes(n);
            for (auto& c : codes) c = rng() >> (64 - bits);
            SCOPED_TRACE("n " + std::to_string(n) + " bits " + std::to_string(bits));
            check_hierarchy(codes);
        }
    }
}

TEST(Hierarchy, AllEqualCodesGiveABalancedTree) {
    for (const std::size_t n : {2u, 3u, 100u, 1024u, 1500u}) {
        SCOPED_TRACE(n);
        const std::vector<LbvhNode> nodes = check_hierarchy(std::vector<std::uint64_t>(n, 42));
        // Equal codes split on the index bits: a complete binary split of the positions.
        EXPECT_LE(tree_height(nodes, static_cast<std::uint32_t>(n)),
                  static_cast<int>(std::ceil(std::log2(double(n)))));
    }
}

TEST(Hierarchy, HeavyDuplicatesAndShallowEnoughForTheGpuStack) {
    std::mt19937_64 rng(9);
    for (const std::uint64_t distinct : {1u, 2u, 5u, 300u}) {
        std::vector<std::uint64_t> codes(5000);
        for (auto& c : codes) c = (rng() % distinct) * 0x123456789ull;
        SCOPED_TRACE(distinct);
        const std::vector<LbvhNode> nodes = check_hierarchy(codes);
        EXPECT_LE(tree_height(nodes, 5000), int(gpu_layout::kTraversalStack));
    }
    // Worst case for depth: codes 0, 1, 2, 4, 8, ... make a chain one level per bit.
    std::vector<std::uint64_t> chain = {0};
    for (int b = 0; b < 63; ++b) chain.push_back(1ull << b);
    const std::vector<LbvhNode> nodes = check_hierarchy(chain);
    EXPECT_EQ(tree_height(nodes, static_cast<std::uint32_t>(chain.size())), 63);
}

TEST(Hierarchy, TinyTreesByHand) {
    const std::vector<Box> one = {{{1, 2, 3}, {4, 5, 6}}};
    std::vector<std::uint64_t> c1 = {7};
    const auto ids1 = sort_codes(c1);
    std::vector<LbvhNode> t1 = build_hierarchy(c1, ids1);
    ASSERT_EQ(t1.size(), 1u);
    EXPECT_EQ(t1[0].link.x, 0u);
    EXPECT_EQ(t1[0].link.y, 0u);
    EXPECT_EQ(t1[0].link.z, kInvalidNode);
    EXPECT_EQ(t1[0].link.w, 0u);
    compute_bounds(t1, one);
    EXPECT_EQ(t1[0].lo.x, 1.0f);
    EXPECT_EQ(t1[0].hi.z, 6.0f);
    EXPECT_EQ(t1[0].hi.w, 0.0f);
    EXPECT_TRUE(validate_tree(t1, one).ok());

    // n = 2, codes out of order: box 1 sorts first.
    std::vector<std::uint64_t> c2 = {9, 2};
    const auto ids2 = sort_codes(c2);
    const std::vector<LbvhNode> t2 = build_hierarchy(c2, ids2);
    ASSERT_EQ(t2.size(), 3u);
    EXPECT_EQ(t2[0].link.x, 1u);
    EXPECT_EQ(t2[0].link.y, 2u);
    EXPECT_EQ(t2[0].link.z, kInvalidNode);
    EXPECT_EQ(t2[0].link.w, 1u);
    EXPECT_EQ(t2[1].link.x, 1u);  // box id of sorted position 0
    EXPECT_EQ(t2[1].link.y, 0u);
    EXPECT_EQ(t2[1].link.z, 0u);
    EXPECT_EQ(t2[2].link.x, 0u);
    EXPECT_EQ(t2[2].link.w, 1u);

    // n = 3, codes 0b000, 0b001, 0b100: positions 0 and 1 pair up under node 1.
    std::vector<std::uint64_t> c3 = {0, 1, 4};
    const auto ids3 = sort_codes(c3);
    const std::vector<LbvhNode> t3 = build_hierarchy(c3, ids3);
    ASSERT_EQ(t3.size(), 5u);
    EXPECT_EQ(t3[0].link.x, 1u);
    EXPECT_EQ(t3[0].link.y, 4u);
    EXPECT_EQ(t3[0].link.w, 2u);
    EXPECT_EQ(t3[1].link.x, 2u);
    EXPECT_EQ(t3[1].link.y, 3u);
    EXPECT_EQ(t3[1].link.z, 0u);
    EXPECT_EQ(t3[1].link.w, 1u);
    EXPECT_EQ(t3[2].link.z, 1u);
    EXPECT_EQ(t3[3].link.z, 1u);
    EXPECT_EQ(t3[4].link.z, 0u);

    std::vector<std::uint64_t> c0;
    EXPECT_TRUE(build_hierarchy(c0, sort_codes(c0)).empty());
    EXPECT_TRUE(validate_tree({}, {}).ok());
}

// The one-pass bottom-up build (the twin of shaders/lbvh/lbvh_build.comp) equals the Karras
// hierarchy plus bottom-up bounds byte for byte on the edge cases: 1, 2 and 3 leaves in every
// code order, all-equal codes (ties split by index), runs of repeats, 64-bit keys whose high
// words differ or tie (the refined 2-word keys), and the one-bit-per-level chain.
TEST(BottomUp, EqualsHierarchyPlusBoundsOnEdgeCases) {
    std::vector<std::vector<std::uint64_t>> cases = {{7},       {9, 2},    {2, 2},    {0, 1, 4},
                                                     {4, 1, 0}, {1, 0, 1}, {5, 5, 5}, {0, 4, 1}};
    for (const std::size_t n : {4u, 5u, 31u, 32u, 33u, 257u, 1000u}) {
        cases.push_back(std::vector<std::uint64_t>(n, 0x2a));
    }
    std::mt19937_64 rng(15);
    for (const std::uint64_t distinct : {1u, 2u, 3u, 7u, 64u}) {
        std::vector<std::uint64_t> c(3000);
        for (auto& x : c) x = rng() % distinct;
        cases.push_back(c);
        // 2-word keys: the first code in the high word, a second code below it.
        for (auto& x : c) x = x << 32 | (rng() % (distinct + 1));
        cases.push_back(c);
    }
    for (const int bits : {30, 63, 64}) {
        std::vector<std::uint64_t> c(2049);
        for (auto& x : c) x = bits == 64 ? rng() : rng() >> (64 - bits);
        cases.push_back(c);
    }
    std::vector<std::uint64_t> chain = {0};
    for (int b = 0; b < 64; ++b) chain.push_back(1ull << b);
    cases.push_back(chain);
    for (std::vector<std::uint64_t>& codes : cases) {
        SCOPED_TRACE("n " + std::to_string(codes.size()));
        const std::vector<std::uint32_t> ids = sort_codes(codes);
        const std::vector<Box> boxes = boxes_for(codes.size(), 3);
        std::vector<LbvhNode> want = build_hierarchy(codes, ids);
        compute_bounds(want, boxes);
        const std::vector<LbvhNode> got = build_bottom_up(codes, ids, boxes);
        expect_same_bytes(got, want);
        EXPECT_TRUE(validate_tree(got, boxes).ok());
    }
    EXPECT_TRUE(build_bottom_up({}, {}, {}).empty());
}

// The tree of `boxes` step by step, without refinement: Morton-30 codes, sorted, the hierarchy
// over them, its bounds.
std::vector<LbvhNode> morton30_tree(std::span<const Box> boxes) {
    std::vector<std::uint64_t> codes = compute_codes(boxes, CodeKind::morton30);
    const std::vector<std::uint32_t> ids = sort_codes(codes);
    std::vector<LbvhNode> nodes = build_hierarchy(codes, ids);
    compute_bounds(nodes, boxes);
    return nodes;
}

TEST(Bounds, InternalNodesAreTheUnionOfTheirChildren) {
    const std::vector<Box> boxes = boxes_for(777, 12);
    const std::vector<LbvhNode> nodes = morton30_tree(boxes);
    Box all = boxes[0];
    for (const Box& b : boxes) all = merge(all, b);
    EXPECT_EQ(nodes[0].lo.x, all.min.x);
    EXPECT_EQ(nodes[0].lo.y, all.min.y);
    EXPECT_EQ(nodes[0].hi.z, all.max.z);
    for (std::uint32_t i = 0; i + 1 < boxes.size(); ++i) {
        const LbvhNode& a = nodes[nodes[i].link.x];
        const LbvhNode& b = nodes[nodes[i].link.y];
        ASSERT_EQ(nodes[i].lo.x, std::min(a.lo.x, b.lo.x));
        ASSERT_EQ(nodes[i].hi.y, std::max(a.hi.y, b.hi.y));
        ASSERT_EQ(nodes[i].lo.w, 0.0f);
    }
}

// ---- validate_tree -------------------------------------------------------------------------

TEST(ValidateTree, CatchesEachKindOfCorruption) {
    const std::vector<Box> boxes = boxes_for(200, 3);
    const std::vector<LbvhNode> good = morton30_tree(boxes);
    ASSERT_TRUE(validate_tree(good, boxes).ok());
    const std::uint32_t n = 200;

    // Find an internal node whose children are both internal, and a leaf.
    std::uint32_t inner = 0;
    for (std::uint32_t i = 1; i + 1 < n; ++i) {
        if (good[i].link.x < n - 1 && good[i].link.y < n - 1) inner = i;
    }
    ASSERT_NE(inner, 0u);
    const std::uint32_t leaf = n - 1 + 57;

    const std::vector<std::pair<std::string, std::function<void(std::vector<LbvhNode>&)>>>
        corruptions = {
            {"swapped children", [&](auto& t) { std::swap(t[inner].link.x, t[inner].link.y); }},
            {"child out of range", [&](auto& t) { t[inner].link.y = 5000; }},
            {"child pointing at root", [&](auto& t) { t[inner].link.x = 0; }},
            {"wrong parent",
             [&](auto& t) { t[t[inner].link.x].link.z = n - 2 == inner ? 1 : n - 2; }},
            {"root with parent", [&](auto& t) { t[0].link.z = 3; }},
            {"wrong last position", [&](auto& t) { t[inner].link.w += 1; }},
            {"duplicate box id", [&](auto& t) { t[leaf].link.x = t[leaf + 1].link.x; }},
            {"wrong leaf position", [&](auto& t) { t[leaf].link.y = 3; }},
            {"shrunk internal bounds", [&](auto& t) { t[inner].hi.x = t[inner].lo.x; }},
            {"leaf bounds not its box", [&](auto& t) { t[leaf].lo.y -= 0.5f; }},
            {"nonzero w", [&](auto& t) { t[inner].lo.w = 1.0f; }},
            {"node shared by two parents", [&](auto& t) { t[inner].link.x = t[inner].link.y; }},
            {"missing node", [&](auto& t) { t.pop_back(); }},
        };
    for (const auto& [what, corrupt] : corruptions) {
        std::vector<LbvhNode> bad = good;
        corrupt(bad);
        const Status st = validate_tree(bad, boxes);
        EXPECT_FALSE(st.ok()) << what;
        if (!st.ok()) {
            EXPECT_NE(st.error().message.find("node"), std::string::npos) << st.error().message;
        }
    }
}

// ---- self-pairs and the Structure ----------------------------------------------------------

TEST(SelfPairs, MatchBruteForceForEveryCodeKind) {
    for (const char* gen : {"uniform", "clustered", "xline", "mixed_sizes", "degenerate"}) {
        for (const std::size_t count : {1u, 2u, 3u, 64u, 2500u}) {
            auto scene = generate_scene(gen, count);
            ASSERT_TRUE(scene.ok());
            const std::vector<Pair> expect = brute_pairs(scene->boxes);
            for (const CodeKind kind :
                 {CodeKind::morton30, CodeKind::morton63, CodeKind::hilbert30}) {
                SCOPED_TRACE(scene->name + " kind " + std::to_string(int(kind)));
                const SortedKeys keys = sorted_keys(scene->boxes, kind);
                std::vector<LbvhNode> nodes = build_hierarchy(keys.codes, keys.ids);
                compute_bounds(nodes, scene->boxes);
                ASSERT_TRUE(validate_tree(nodes, scene->boxes).ok());
                std::vector<Pair> pairs;
                QueryStats stats;
                self_pairs(nodes, scene->boxes, pairs, &stats);
                std::sort(pairs.begin(), pairs.end());
                ASSERT_EQ(pairs, expect);
                if (count >= 64) {
                    EXPECT_GT(stats.nodes_visited, 0u);
                }

                LbvhStructure s(kind);
                ASSERT_TRUE(s.build(scene->boxes).ok());
                ASSERT_TRUE(s.validate().ok());
                EXPECT_EQ(sorted_pairs(s), expect);
                // The structure is exactly the step-by-step pipeline.
                ASSERT_EQ(s.nodes().size(), nodes.size());
                for (std::size_t i = 0; i < nodes.size(); ++i) {
                    ASSERT_EQ(std::memcmp(&s.nodes()[i], &nodes[i], sizeof(LbvhNode)), 0);
                }
            }
        }
    }
}

TEST(SelfPairs, PrunesWork) {
    auto scene = generate_scene("uniform", 20000);
    ASSERT_TRUE(scene.ok());
    LbvhStructure s;
    ASSERT_TRUE(s.build(scene->boxes).ok());
    const std::vector<Pair> pairs = broadphase::testing::counted_self_pairs(s);
    // Far fewer box tests than the n^2 / 2 of brute force.
    EXPECT_LT(s.stats().box_tests, 20000ull * 200ull);
    EXPECT_GT(s.stats().box_tests, pairs.size());
}

}  // namespace
}  // namespace broadphase::lbvh
