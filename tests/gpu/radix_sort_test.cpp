// GPU radix sort and scan against std::stable_sort / std::exclusive_scan, on both sort paths
// (onesweep and reduce_then_scan, forced): random, sorted, reversed and all-equal keys; 32- and
// 64-bit keys, keys only and key-value, any key_bits; sizes around every tile boundary; dynamic
// counts, gated dispatches, repeated sorts; the modelled traffic, passes and dispatches. The main
// cases rank each tile both ways (in shared memory, with subgroup ballots: radix_rank.glsl).
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "device/context_impl.hpp"
#include "gpu_test_env.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::testing {
namespace {

using gpu::BufferRange;

enum class Pattern { random, sorted, reversed, all_equal, few_distinct };

std::vector<std::uint64_t> make_keys(std::size_t n, Pattern pattern, std::uint64_t mask,
                                     std::uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = rng() & mask;
    switch (pattern) {
        case Pattern::random:
            break;
        case Pattern::sorted:
            std::sort(keys.begin(), keys.end());
            break;
        case Pattern::reversed:
            std::sort(keys.rbegin(), keys.rend());
            break;
        case Pattern::all_equal:
            std::fill(keys.begin(), keys.end(), 0x2a2a2a2a2a2a2a2aull & mask);
            break;
        case Pattern::few_distinct:
            for (auto& k : keys) k = (k % 5) * (mask / 7);
            break;
    }
    return keys;
}

constexpr gpu::SortPath kPaths[] = {gpu::SortPath::onesweep, gpu::SortPath::reduce_then_scan};
constexpr gpu::SortRank kRanks[] = {gpu::SortRank::shared, gpu::SortRank::subgroup};

std::string path_name(gpu::SortPath path) {
    return gpu::sort_path_name(path);
}

std::uint64_t low_bits(std::uint32_t bits) {
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

// Device buffers of a sort of n (key, index) pairs (keys only: no value buffers).
struct SortData {
    std::uint32_t n = 0, key_words = 1;
    bool keys_only = false;
    VkDeviceSize key_bytes = 4, value_bytes = 4;
    gpu::Buffer keys, values, keys_tmp, values_tmp, scratch;

    gpu::SortBuffers buffers() const {
        gpu::SortBuffers b{};
        b.keys = {keys.handle(), 0, key_bytes};
        b.keys_tmp = {keys_tmp.handle(), 0, key_bytes};
        if (!keys_only) {
            b.values = {values.handle(), 0, value_bytes};
            b.values_tmp = {values_tmp.handle(), 0, value_bytes};
        }
        b.scratch = {scratch.handle(), 0, scratch.size()};
        return b;
    }
};

// Allocates and uploads keys (key_words words each, low word first) and values 0..n-1.
void upload(const std::vector<std::uint64_t>& keys, std::uint32_t key_words, bool keys_only,
            SortData& d) {
    gpu::Context& ctx = gpu_context();
    d.n = static_cast<std::uint32_t>(keys.size());
    d.key_words = key_words;
    d.keys_only = keys_only;
    std::vector<std::uint32_t> words(std::size_t(d.n) * key_words);
    for (std::uint32_t i = 0; i < d.n; ++i) {
        words[i * key_words] = static_cast<std::uint32_t>(keys[i]);
        if (key_words == 2) words[i * 2 + 1] = static_cast<std::uint32_t>(keys[i] >> 32);
    }
    std::vector<std::uint32_t> values(d.n);
    std::iota(values.begin(), values.end(), 0u);
    d.key_bytes = std::max<VkDeviceSize>(words.size() * 4, 4);
    d.value_bytes = std::max<VkDeviceSize>(d.n * 4ull, 4);
    auto make = [&](VkDeviceSize bytes, gpu::Buffer& out) {
        auto b = ctx.create_buffer(bytes, gpu::MemoryKind::device);
        ASSERT_TRUE(b) << b.error().message;
        out = std::move(b.value());
    };
    make(d.key_bytes, d.keys);
    make(d.key_bytes, d.keys_tmp);
    make(d.value_bytes, d.values);
    make(d.value_bytes, d.values_tmp);
    make(gpu::RadixSort::scratch_size(d.n), d.scratch);
    if (d.n == 0) return;
    ASSERT_TRUE(ctx.upload(d.keys, words.data(), words.size() * 4));
    ASSERT_TRUE(ctx.upload(d.values, values.data(), d.n * 4ull));
}

// The keys and values a sort left in d.
void download(const SortData& d, std::vector<std::uint64_t>& keys,
              std::vector<std::uint32_t>& values) {
    gpu::Context& ctx = gpu_context();
    std::vector<std::uint32_t> words(std::size_t(d.n) * d.key_words);
    keys.assign(d.n, 0);
    values.assign(d.n, 0);
    if (d.n == 0) return;
    ASSERT_TRUE(ctx.download(d.keys, words.data(), words.size() * 4));
    if (!d.keys_only) {
        ASSERT_TRUE(ctx.download(d.values, values.data(), d.n * 4ull));
    }
    for (std::uint32_t i = 0; i < d.n; ++i)
        keys[i] =
            d.key_words == 2 ? (std::uint64_t(words[2 * i + 1]) << 32 | words[2 * i]) : words[i];
}

// Sorts `keys` (key_words words each, values 0..n-1 unless keys_only) on the GPU: uploaded, sorted
// by `sort` between compute barriers in one submission, and downloaded into got_keys and
// got_values.
void gpu_sort(gpu::RadixSort& sort, const std::vector<std::uint64_t>& keys, std::uint32_t key_words,
              std::uint32_t key_bits, bool keys_only, std::vector<std::uint64_t>& got_keys,
              std::vector<std::uint32_t>& got_values) {
    SortData d;
    upload(keys, key_words, keys_only, d);
    ASSERT_TRUE(d.scratch.handle());
    ASSERT_TRUE(gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        sort.record(cmd, d.buffers(), d.n, key_words, key_bits);
        gpu::compute_barrier(cmd);
    }));
    download(d, got_keys, got_values);
}

// The stable sort of (key, index) by the low key_bits bits of the key (higher bits ride along).
void expected_sort(const std::vector<std::uint64_t>& keys, std::uint32_t key_bits,
                   std::vector<std::uint64_t>& out_keys, std::vector<std::uint32_t>& out_values) {
    const std::uint64_t mask = low_bits(key_bits);
    out_values.resize(keys.size());
    std::iota(out_values.begin(), out_values.end(), 0u);
    std::stable_sort(out_values.begin(), out_values.end(), [&](std::uint32_t a, std::uint32_t b) {
        return (keys[a] & mask) < (keys[b] & mask);
    });
    out_keys.resize(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) out_keys[i] = keys[out_values[i]];
}

struct SortCase {
    std::size_t n;
    Pattern pattern;
    std::uint32_t key_words;
    std::uint32_t key_bits;
    bool keys_only = false;
    // Random bits above key_bits (up to the key's words), which the sort must ignore.
    bool high_bits = false;
};

class RadixSortTest
    : public GpuTest,
      public ::testing::WithParamInterface<std::tuple<SortCase, gpu::SortPath, gpu::SortRank>> {};

// Each case, on each path, each tile ranked in shared memory or with subgroup ballots: the GPU
// result equals a stable sort by key of (key, index), keys and values (keys only: the keys).
TEST_P(RadixSortTest, MatchesStableSort) {
    const auto& [c, path, rank] = GetParam();
    SCOPED_TRACE(path_name(path));
    const bool subgroup = rank == gpu::SortRank::subgroup;
    SCOPED_TRACE(subgroup ? "subgroup ranks" : "shared-memory ranks");
    if (subgroup && !gpu_context().info().subgroup_ballot) {
        // A device without subgroup ballot refuses ballot ranks, saying so.
        auto refused = gpu::RadixSort::create(gpu_context(), path, rank);
        ASSERT_FALSE(refused);
        EXPECT_EQ(refused.error().code, ErrorCode::unsupported);
        return;
    }
    const std::uint64_t mask = low_bits(c.key_bits);
    auto keys = make_keys(c.n, c.pattern, c.high_bits ? low_bits(32 * c.key_words) : mask,
                          static_cast<std::uint32_t>(c.n * 31 + c.key_bits));
    std::vector<std::uint64_t> expected_keys;
    std::vector<std::uint32_t> expected_values;
    expected_sort(keys, c.key_bits, expected_keys, expected_values);

    auto sort = gpu::RadixSort::create(gpu_context(), path, rank);
    ASSERT_TRUE(sort) << sort.error().message;
    EXPECT_EQ(sort->path(), path);
    EXPECT_EQ(sort->subgroup_rank(), subgroup);
    std::vector<std::uint64_t> got_keys;
    std::vector<std::uint32_t> got_values;
    ASSERT_NO_FATAL_FAILURE(
        gpu_sort(*sort, keys, c.key_words, c.key_bits, c.keys_only, got_keys, got_values));
    ASSERT_EQ(got_keys.size(), c.n);
    EXPECT_EQ(got_keys, expected_keys);
    if (!c.keys_only) {
        EXPECT_EQ(got_values, expected_values);
    }
}

constexpr std::size_t kTile = gpu_layout::kSortTile;
constexpr std::size_t kGroup = gpu_layout::kWorkgroupSize;

INSTANTIATE_TEST_SUITE_P(
    Sizes, RadixSortTest,
    ::testing::Combine(
        ::testing::Values(
            SortCase{0, Pattern::random, 1, 32}, SortCase{1, Pattern::random, 1, 32},
            SortCase{2, Pattern::reversed, 1, 32}, SortCase{7, Pattern::random, 1, 32},
            SortCase{kGroup, Pattern::random, 1, 32}, SortCase{kGroup + 1, Pattern::random, 1, 32},
            SortCase{kTile - 1, Pattern::random, 1, 32}, SortCase{kTile, Pattern::random, 1, 32},
            SortCase{kTile + 1, Pattern::random, 1, 32},
            SortCase{2 * kTile - 1, Pattern::random, 2, 64},
            SortCase{2 * kTile + 1, Pattern::random, 1, 32},
            SortCase{200003, Pattern::random, 1, 32}, SortCase{7, Pattern::random, 2, 64},
            SortCase{kTile + 1, Pattern::random, 2, 64}, SortCase{100001, Pattern::random, 2, 63},
            SortCase{50000, Pattern::random, 1, 30}),
        ::testing::ValuesIn(kPaths), ::testing::ValuesIn(kRanks)));

INSTANTIATE_TEST_SUITE_P(
    Patterns, RadixSortTest,
    ::testing::Combine(::testing::Values(SortCase{30000, Pattern::sorted, 1, 32},
                                         SortCase{30000, Pattern::reversed, 1, 32},
                                         SortCase{30000, Pattern::all_equal, 1, 32},
                                         SortCase{30000, Pattern::few_distinct, 1, 32},
                                         SortCase{30000, Pattern::sorted, 2, 64},
                                         SortCase{30000, Pattern::reversed, 2, 64},
                                         SortCase{30000, Pattern::all_equal, 2, 64},
                                         SortCase{30000, Pattern::few_distinct, 2, 63}),
                       ::testing::ValuesIn(kPaths), ::testing::ValuesIn(kRanks)));

// Only the low key_bits bits order the keys (partial last digits, digits of the high word),
// whatever the bits above hold; keys only and key-value.
INSTANTIATE_TEST_SUITE_P(
    KeyBits, RadixSortTest,
    ::testing::Combine(::testing::Values(SortCase{10007, Pattern::random, 1, 1, false, true},
                                         SortCase{10007, Pattern::random, 1, 7, true, true},
                                         SortCase{10007, Pattern::random, 1, 8, false, true},
                                         SortCase{10007, Pattern::random, 1, 9, true, true},
                                         SortCase{10007, Pattern::few_distinct, 1, 17, false, true},
                                         SortCase{10007, Pattern::random, 1, 24, true, false},
                                         SortCase{10007, Pattern::random, 1, 31, false, true},
                                         SortCase{10007, Pattern::random, 2, 33, false, true},
                                         SortCase{10007, Pattern::random, 2, 40, true, true},
                                         SortCase{10007, Pattern::reversed, 2, 47, false, true},
                                         SortCase{10007, Pattern::random, 2, 56, true, false},
                                         SortCase{10007, Pattern::random, 2, 62, false, true},
                                         SortCase{10007, Pattern::all_equal, 2, 64, true, false},
                                         SortCase{30000, Pattern::few_distinct, 2, 64, true,
                                                  false}),
                       ::testing::ValuesIn(kPaths), ::testing::ValuesIn(kRanks)));

class RadixSortPathTest : public GpuTest, public ::testing::WithParamInterface<gpu::SortPath> {};

// Many sorts of many tiles, one after another in one command buffer and over several
// submissions: every one equals the stable sort (the one-sweep path's tile numbers, look-back
// rows and counters start afresh each time).
TEST_P(RadixSortPathTest, RepeatedSorts) {
    const gpu::SortPath path = GetParam();
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx, path);
    ASSERT_TRUE(sort);
    for (std::uint32_t round = 0; round < 3; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        std::vector<SortData> data(4);
        std::vector<std::vector<std::uint64_t>> keys(data.size());
        const std::size_t sizes[] = {40000, 13 * kTile - 1, 9 * kTile + 1, 24577};
        for (std::size_t k = 0; k < data.size(); ++k) {
            keys[k] = make_keys(sizes[k], k == 3 ? Pattern::few_distinct : Pattern::random,
                                low_bits(32), round * 10 + static_cast<std::uint32_t>(k));
            upload(keys[k], 1, false, data[k]);
            ASSERT_TRUE(data[k].scratch.handle());
        }
        ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            for (const SortData& d : data) sort->record(cmd, d.buffers(), d.n, 1, 32);
        }));
        for (std::size_t k = 0; k < data.size(); ++k) {
            std::vector<std::uint64_t> want_keys, got_keys;
            std::vector<std::uint32_t> want_values, got_values;
            expected_sort(keys[k], 32, want_keys, want_values);
            download(data[k], got_keys, got_values);
            EXPECT_EQ(got_keys, want_keys);
            EXPECT_EQ(got_values, want_values);
        }
    }
}

// One sort of a look-back test: n keys of `pattern` with key_bits of key_words words, keys only
// or with values, through `sort`, equal to the stable sort.
struct LookBackCase {
    std::size_t n;
    Pattern pattern;
    std::uint32_t key_words, key_bits;
    bool keys_only;
};

void expect_stable_sort(gpu::RadixSort& sort, const LookBackCase& c) {
    SCOPED_TRACE("n " + std::to_string(c.n) + ", " + std::to_string(c.key_bits) + " bits");
    auto keys = make_keys(c.n, c.pattern, low_bits(32 * c.key_words),
                          static_cast<std::uint32_t>(c.n + c.key_bits));
    std::vector<std::uint64_t> want_keys, got_keys;
    std::vector<std::uint32_t> want_values, got_values;
    expected_sort(keys, c.key_bits, want_keys, want_values);
    ASSERT_NO_FATAL_FAILURE(
        gpu_sort(sort, keys, c.key_words, c.key_bits, c.keys_only, got_keys, got_values));
    EXPECT_EQ(got_keys, want_keys);
    if (!c.keys_only) {
        EXPECT_EQ(got_values, want_values);
    }
}

// The one-sweep look-back's fallback (a waiting tile counts a silent predecessor's keys
// itself), forced for every predecessor: keys only and key-value, 32- and 64-bit keys, full and
// partial last tiles, all-equal keys; equal to the stable sort and to the published look-back.
TEST(RadixSortFallbackTest, CountingEveryPredecessorGivesTheSameSort) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx, gpu::SortPath::onesweep);
    ASSERT_TRUE(sort);
    sort->set_fallback_only(true);
    for (const LookBackCase& c : {LookBackCase{7 * kTile + 1, Pattern::random, 1, 32, false},
                                  LookBackCase{5 * kTile, Pattern::few_distinct, 2, 64, false},
                                  LookBackCase{6 * kTile - 1, Pattern::random, 2, 40, true},
                                  LookBackCase{3 * kTile + 5, Pattern::all_equal, 1, 30, false},
                                  LookBackCase{kTile + 1, Pattern::reversed, 1, 17, true}})
        expect_stable_sort(*sort, c);
}

// The one-sweep look-back when few tiles publish inclusive prefixes and a few publish nothing
// for a digit (kSortLookbackStress: tile k's prefix of digit d only where (k + d) % 11 == 0,
// nothing where (256 k + d) % 613 == 0): every look-back sums aggregates over several windows
// of kOnesweepWindow tiles, the 256 digits of one window meet their prefixes at different
// tiles, a round stops at the first silent entry of any digit (a digit whose prefix lies beyond
// it must not be done), and silent tiles are counted from their keys. Windows of 1, 3 and 8
// tiles; equal to the stable sort, 32- and 64-bit keys, full and partial last tiles.
TEST(RadixSortLookBackTest, SparseAndSilentEntriesGiveTheSameSort) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx, gpu::SortPath::onesweep);
    ASSERT_TRUE(sort);
    sort->set_lookback_stress(true);
    for (std::uint32_t window : {1u, 3u, gpu_layout::kOnesweepWindow}) {
        SCOPED_TRACE("window " + std::to_string(window));
        sort->set_window(window);
        for (const LookBackCase& c :
             {LookBackCase{24 * kTile + 3, Pattern::random, 1, 32, false},
              LookBackCase{19 * kTile, Pattern::few_distinct, 2, 64, false},
              LookBackCase{13 * kTile - 1, Pattern::random, 2, 40, true},
              LookBackCase{12 * kTile + 5, Pattern::all_equal, 1, 30, false}})
            expect_stable_sort(*sort, c);
    }
}

// The modelled traffic and passes of both paths, worked out by hand from the model in
// gpu/sort/radix_sort.hpp (deterministic: no timing), and the dispatches each path records.
TEST(RadixSortTrafficTest, PassesAndBytes) {
    using gpu::RadixSort;
    using gpu::SortPath;
    std::uint32_t passes = 99;
    // 10000 (key, value) pairs, 30-bit keys: 4 passes, 3 tiles, 768 digit counts.
    // reduce_then_scan, per pass: histogram (40000 read, 3072 written), scan of 768 counts in
    // one tile (3072, 3076), scatter (80000 + 3072, 80000).
    gpu::Traffic t = RadixSort::traffic(10000, 1, 30, false, SortPath::reduce_then_scan, &passes);
    EXPECT_EQ(passes, 4u);
    EXPECT_EQ(t.read, 4u * (40000 + 3072 + 83072));
    EXPECT_EQ(t.written, 4u * (3072 + 3076 + 80000));
    // onesweep: fill of 64 + 2048 + 4 * 3 * 256 words; histogram (40000 + 4 * 3 * 1024 read,
    // 12288 written); per pass tile numbers (12, 12), elements, 3 histogram rows and 2 look-back
    // rows read (80000 + 5120), elements written (80000), 5 look-back rows written (5120).
    t = RadixSort::traffic(10000, 1, 30, false, SortPath::onesweep, &passes);
    EXPECT_EQ(passes, 4u);
    EXPECT_EQ(t.read, 52288u + 4u * (12 + 85120));
    EXPECT_EQ(t.written, 4u * 5184 + 12288u + 4u * (12 + 80000 + 5120));
    // 5000 64-bit keys alone, 40 bits: 5 passes (odd: a copy back of 40000 bytes), 2 tiles.
    t = RadixSort::traffic(5000, 2, 40, true, SortPath::reduce_then_scan, &passes);
    EXPECT_EQ(passes, 5u);
    EXPECT_EQ(t.read, 5u * (20000 + 2048 + 42048) + 40000);
    EXPECT_EQ(t.written, 5u * (2048 + 2052 + 40000) + 40000);
    t = RadixSort::traffic(5000, 2, 40, true, SortPath::onesweep, &passes);
    EXPECT_EQ(passes, 5u);
    EXPECT_EQ(t.read, 50240u + 5u * (8 + 43072) + 40000);
    EXPECT_EQ(t.written, 4u * 4672 + 10240u + 5u * (8 + 40000 + 3072) + 40000);
    // Nothing to sort, nothing moved.
    for (SortPath path : kPaths) {
        for (std::uint32_t n : {0u, 1u}) {
            t = RadixSort::traffic(n, 2, 64, false, path, &passes);
            EXPECT_EQ(passes, 0u);
            EXPECT_EQ(t.read + t.written, 0u);
        }
    }
}

// Dispatches recorded per sort: reduce_then_scan 3 per pass with a one-tile scan (histogram,
// scan_local, scatter), onesweep 1 + 1 per pass, on 30-bit keys (4 passes) and 64-bit (8).
TEST_P(RadixSortPathTest, DispatchesPerPass) {
    const gpu::SortPath path = GetParam();
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx, path);
    ASSERT_TRUE(sort);
    for (std::uint32_t key_words : {1u, 2u}) {
        const std::uint32_t key_bits = key_words == 1 ? 30 : 64, passes = key_bits == 30 ? 4 : 8;
        auto keys = make_keys(10000, Pattern::random, low_bits(key_bits), key_words);
        SortData d;
        upload(keys, key_words, false, d);
        ASSERT_TRUE(d.scratch.handle());
        auto& counter = gpu::impl_of(ctx).dispatches_recorded;
        std::uint64_t before = 0, after = 0;
        ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            before = counter;
            sort->record(cmd, d.buffers(), d.n, key_words, key_bits);
            after = counter;
        }));
        EXPECT_EQ(after - before, path == gpu::SortPath::onesweep ? 1 + passes : 3 * passes);
        std::vector<std::uint64_t> want_keys, got_keys;
        std::vector<std::uint32_t> want_values, got_values;
        expected_sort(keys, key_bits, want_keys, want_values);
        download(d, got_keys, got_values);
        EXPECT_EQ(got_keys, want_keys);
        EXPECT_EQ(got_values, want_values);
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, RadixSortPathTest, ::testing::ValuesIn(kPaths),
                         [](const auto& param_info) { return path_name(param_info.param); });

class RadixSortModesTest : public GpuTest, public ::testing::WithParamInterface<gpu::SortPath> {
protected:
    // 64-bit keys of 48 random bits in device buffers, with the ping-pong and scratch of a
    // sort of `capacity` keys.
    struct Keys {
        std::vector<std::uint32_t> words;
        gpu::Buffer keys, tmp, scratch, count, args;
        gpu::SortBuffers buffers() const {
            gpu::SortBuffers b{};
            b.keys = {keys.handle(), 0, keys.size()};
            b.keys_tmp = {tmp.handle(), 0, tmp.size()};
            b.scratch = {scratch.handle(), 0, scratch.size()};
            return b;
        }
    };
    Keys make(std::uint32_t capacity, std::uint32_t seed) {
        gpu::Context& ctx = gpu_context();
        Keys k;
        std::mt19937_64 rng(seed);
        k.words.resize(2ull * capacity);
        for (std::uint32_t i = 0; i < capacity; ++i) {
            std::uint64_t v = rng() & ((1ull << 48) - 1);
            k.words[2 * i] = static_cast<std::uint32_t>(v);
            k.words[2 * i + 1] = static_cast<std::uint32_t>(v >> 32);
        }
        auto kb = ctx.create_buffer(capacity * 8ull, gpu::MemoryKind::device);
        auto kt = ctx.create_buffer(capacity * 8ull, gpu::MemoryKind::device);
        auto sc =
            ctx.create_buffer(gpu::RadixSort::scratch_size(capacity), gpu::MemoryKind::device);
        auto cb = ctx.create_buffer(4, gpu::MemoryKind::device);
        auto ab = ctx.create_buffer(gpu_layout::kArgsSlots * sizeof(VkDispatchIndirectCommand),
                                    gpu::MemoryKind::device);
        EXPECT_TRUE(kb && kt && sc && cb && ab);
        if (!(kb && kt && sc && cb && ab)) return k;
        k.args = std::move(ab.value());
        k.keys = std::move(kb.value());
        k.tmp = std::move(kt.value());
        k.scratch = std::move(sc.value());
        k.count = std::move(cb.value());
        EXPECT_TRUE(ctx.upload(k.keys, k.words.data(), k.words.size() * 4));
        return k;
    }
    static std::vector<std::uint64_t> as_keys(const std::vector<std::uint32_t>& words,
                                              std::size_t first, std::size_t count) {
        std::vector<std::uint64_t> out(count);
        for (std::size_t i = 0; i < count; ++i)
            out[i] = std::uint64_t(words[2 * (first + i) + 1]) << 32 | words[2 * (first + i)];
        return out;
    }
};

// Keys only, with the count read on the GPU, with the sort's workgroups launched indirectly
// from it and (without arguments) every tile launched: the first min(count, capacity) keys come
// out sorted, for counts of zero, inside a tile, across tiles, the capacity and beyond it.
TEST_P(RadixSortModesTest, KeysOnlyWithDynamicCount) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx, GetParam());
    ASSERT_TRUE(sort);
    const std::uint32_t capacity = 3 * gpu_layout::kSortTile + 5;
    for (bool with_args : {true, false}) {
        for (std::uint32_t count : {0u, 1u, gpu_layout::kSortTile - 1, gpu_layout::kSortTile,
                                    2 * gpu_layout::kSortTile + 3, capacity, capacity + 100}) {
            SCOPED_TRACE("count " + std::to_string(count) + (with_args ? " args" : " no args"));
            Keys k = make(capacity, count + 1);
            ASSERT_TRUE(k.keys.handle());
            ASSERT_TRUE(ctx.upload(k.count, &count, 4));
            gpu::SortBuffers b = k.buffers();
            b.count = {k.count.handle(), 0, 4};
            if (with_args) b.args = {k.args.handle(), 0, k.args.size()};
            ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
                gpu::compute_barrier(cmd);
                if (with_args) sort->record_count_args(cmd, b.count, capacity, b.args);
                sort->record(cmd, b, capacity, 2, 48);
            }));
            const std::uint32_t m32 = std::min(count, capacity);
            if (with_args) {
                // The arguments launch the tiles the count fills, and at least one element
                // workgroup.
                VkDispatchIndirectCommand args[gpu_layout::kArgsSlots];
                ASSERT_TRUE(ctx.download(k.args, args, sizeof(args)));
                EXPECT_EQ(args[gpu_layout::kArgsSortTiles].x * args[gpu_layout::kArgsSortTiles].y,
                          (m32 + gpu_layout::kSortTile - 1) / gpu_layout::kSortTile);
                EXPECT_EQ(
                    args[gpu_layout::kArgsElements].x * args[gpu_layout::kArgsElements].y,
                    std::max<std::uint32_t>(
                        (m32 + gpu_layout::kWorkgroupSize - 1) / gpu_layout::kWorkgroupSize, 1));
            }
            std::vector<std::uint32_t> got(k.words.size());
            ASSERT_TRUE(ctx.download(k.keys, got.data(), got.size() * 4));
            std::vector<std::uint64_t> expected = as_keys(k.words, 0, m32);
            std::sort(expected.begin(), expected.end());
            EXPECT_EQ(as_keys(got, 0, m32), expected);
        }
    }
}

// A gated sort (48-bit keys: an even number of passes, as gated sorts must take): captured
// once (dispatched directly, sorting), then replayed as indirect dispatches whose arguments are
// the captured table (sorts again) or zeros (changes nothing).
TEST_P(RadixSortModesTest, GatedDispatches) {
    gpu::Context& ctx = gpu_context();
    const gpu::SortPath path = GetParam();
    auto sort = gpu::RadixSort::create(ctx, path);
    ASSERT_TRUE(sort);
    const std::uint32_t n = 2 * gpu_layout::kSortTile + 17;
    gpu::DispatchGate gate;
    Keys k = make(n, 5);
    ASSERT_TRUE(k.keys.handle());
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        sort->record(cmd, k.buffers(), n, 2, 48, &gate);
    }));
    std::vector<std::uint64_t> expected = as_keys(k.words, 0, n);
    std::sort(expected.begin(), expected.end());
    std::vector<std::uint32_t> got(k.words.size());
    ASSERT_TRUE(ctx.download(k.keys, got.data(), got.size() * 4));
    EXPECT_EQ(as_keys(got, 0, n), expected);
    // 6 passes: of histogram, one-tile scan and scatter, or one histogram and 6 sweeps.
    EXPECT_EQ(gate.counts.size(), path == gpu::SortPath::onesweep ? 7u : 18u);

    auto args = ctx.create_buffer(gate.counts.size() * sizeof(VkDispatchIndirectCommand),
                                  gpu::MemoryKind::device);
    ASSERT_TRUE(args);
    const std::vector<VkDispatchIndirectCommand> zeros(gate.counts.size(), {0, 0, 0});
    for (bool armed : {false, true}) {
        SCOPED_TRACE(armed ? "armed" : "emptied");
        Keys fresh = make(n, 6);
        ASSERT_TRUE(fresh.keys.handle());
        const auto& table = armed ? gate.counts : zeros;
        ASSERT_TRUE(ctx.upload(args.value(), table.data(), table.size() * sizeof(table[0])));
        gpu::DispatchGate replay;
        replay.mode = gpu::DispatchGate::Mode::indirect;
        replay.args = args->handle();
        replay.counts = gate.counts;
        ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::indirect_barrier(cmd);
            sort->record(cmd, fresh.buffers(), n, 2, 48, &replay);
        }));
        EXPECT_EQ(replay.next, gate.counts.size());
        ASSERT_TRUE(ctx.download(fresh.keys, got.data(), got.size() * 4));
        std::vector<std::uint64_t> want = as_keys(fresh.words, 0, n);
        if (armed) std::sort(want.begin(), want.end());
        EXPECT_EQ(as_keys(got, 0, n), want);
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, RadixSortModesTest, ::testing::ValuesIn(kPaths),
                         [](const auto& param_info) { return path_name(param_info.param); });

class ScanTest : public GpuTest, public ::testing::WithParamInterface<std::size_t> {};

// The multi-level exclusive scan equals std::exclusive_scan, across 1, 2 and 3 levels.
TEST_P(ScanTest, MatchesExclusiveScan) {
    gpu::Context& ctx = gpu_context();
    std::size_t n = GetParam();
    std::mt19937 rng(static_cast<std::uint32_t>(n));
    std::vector<std::uint32_t> data(n);
    for (auto& v : data) v = rng() % 4;
    std::vector<std::uint32_t> expected(n);
    std::exclusive_scan(data.begin(), data.end(), expected.begin(), 0u);
    auto sort = gpu::RadixSort::create(ctx);
    ASSERT_TRUE(sort);
    VkDeviceSize bytes = std::max<VkDeviceSize>(n * 4, 4);
    auto buffer = ctx.create_buffer(bytes, gpu::MemoryKind::device);
    auto scratch = ctx.create_buffer(
        gpu::RadixSort::scan_scratch_size(static_cast<std::uint32_t>(n)), gpu::MemoryKind::device);
    ASSERT_TRUE(buffer && scratch);
    ASSERT_TRUE(ctx.upload(*buffer, data.data(), n * 4));
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        sort->record_scan(cmd, {buffer->handle(), 0, bytes}, static_cast<std::uint32_t>(n),
                          {scratch->handle(), 0, scratch->size()});
    }));
    std::vector<std::uint32_t> got(n);
    ASSERT_TRUE(ctx.download(*buffer, got.data(), n * 4));
    EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ScanTest,
    ::testing::Values(0, 1, 255, 256, gpu_layout::kScanTile - 1, gpu_layout::kScanTile,
                      gpu_layout::kScanTile + 1, 1000000,
                      std::size_t(gpu_layout::kScanTile) * gpu_layout::kScanTile + 5));

}  // namespace
}  // namespace broadphase::testing
