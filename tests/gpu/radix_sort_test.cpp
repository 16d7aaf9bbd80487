// GPU radix sort and scan against std::stable_sort / std::exclusive_scan: random, sorted,
// reversed and all-equal keys; 32- and 64-bit keys; sizes around every tile boundary.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "gpu_test_env.hpp"
#include "radix_sort.hpp"

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

// Sorts (key, index) on the GPU and returns (keys, values) as the GPU left them.
void gpu_sort(const std::vector<std::uint64_t>& keys, std::uint32_t key_words,
              std::uint32_t key_bits, std::vector<std::uint64_t>& out_keys,
              std::vector<std::uint32_t>& out_values) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx);
    ASSERT_TRUE(sort) << sort.error().message;
    auto n = static_cast<std::uint32_t>(keys.size());
    std::vector<std::uint32_t> words(std::size_t(n) * key_words);
    for (std::uint32_t i = 0; i < n; ++i) {
        words[i * key_words] = static_cast<std::uint32_t>(keys[i]);
        if (key_words == 2) words[i * 2 + 1] = static_cast<std::uint32_t>(keys[i] >> 32);
    }
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    VkDeviceSize key_bytes = std::max<VkDeviceSize>(words.size() * 4, 4);
    VkDeviceSize value_bytes = std::max<VkDeviceSize>(n * 4ull, 4);
    auto kb = ctx.create_buffer(key_bytes, gpu::MemoryKind::device);
    auto vb = ctx.create_buffer(value_bytes, gpu::MemoryKind::device);
    auto kt = ctx.create_buffer(key_bytes, gpu::MemoryKind::device);
    auto vt = ctx.create_buffer(value_bytes, gpu::MemoryKind::device);
    auto scratch = ctx.create_buffer(gpu::RadixSort::scratch_size(n), gpu::MemoryKind::device);
    ASSERT_TRUE(kb && vb && kt && vt && scratch);
    ASSERT_TRUE(ctx.upload(*kb, words.data(), words.size() * 4));
    ASSERT_TRUE(ctx.upload(*vb, values.data(), n * 4ull));
    gpu::SortBuffers buffers{{kb->handle(), 0, key_bytes},
                             {vb->handle(), 0, value_bytes},
                             {kt->handle(), 0, key_bytes},
                             {vt->handle(), 0, value_bytes},
                             {scratch->handle(), 0, scratch->size()}};
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        sort->record(cmd, buffers, n, key_words, key_bits);
        gpu::compute_barrier(cmd);
    }));
    ASSERT_TRUE(ctx.download(*kb, words.data(), words.size() * 4));
    out_values.resize(n);
    ASSERT_TRUE(ctx.download(*vb, out_values.data(), n * 4ull));
    out_keys.resize(n);
    for (std::uint32_t i = 0; i < n; ++i)
        out_keys[i] =
            key_words == 2 ? (std::uint64_t(words[2 * i + 1]) << 32 | words[2 * i]) : words[i];
}

struct SortCase {
    std::size_t n;
    Pattern pattern;
    std::uint32_t key_words;
    std::uint32_t key_bits;
};

class RadixSortTest : public GpuTest, public ::testing::WithParamInterface<SortCase> {};

// Each case: the GPU result equals a stable sort by key of (key, index).
TEST_P(RadixSortTest, MatchesStableSort) {
    const SortCase& c = GetParam();
    std::uint64_t mask = c.key_bits == 64 ? ~0ull : (1ull << c.key_bits) - 1;
    auto keys = make_keys(c.n, c.pattern, mask, static_cast<std::uint32_t>(c.n * 31 + c.key_bits));
    std::vector<std::uint32_t> expected_values(c.n);
    std::iota(expected_values.begin(), expected_values.end(), 0u);
    std::stable_sort(expected_values.begin(), expected_values.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
    std::vector<std::uint64_t> expected_keys(c.n);
    for (std::size_t i = 0; i < c.n; ++i) expected_keys[i] = keys[expected_values[i]];

    std::vector<std::uint64_t> got_keys;
    std::vector<std::uint32_t> got_values;
    gpu_sort(keys, c.key_words, c.key_bits, got_keys, got_values);
    ASSERT_EQ(got_keys.size(), c.n);
    EXPECT_EQ(got_keys, expected_keys);
    EXPECT_EQ(got_values, expected_values);
}

constexpr std::size_t kTile = gpu_layout::kSortTile;
constexpr std::size_t kGroup = gpu_layout::kWorkgroupSize;

INSTANTIATE_TEST_SUITE_P(
    Sizes, RadixSortTest,
    ::testing::Values(
        SortCase{0, Pattern::random, 1, 32}, SortCase{1, Pattern::random, 1, 32},
        SortCase{7, Pattern::random, 1, 32}, SortCase{kGroup, Pattern::random, 1, 32},
        SortCase{kGroup + 1, Pattern::random, 1, 32}, SortCase{kTile, Pattern::random, 1, 32},
        SortCase{kTile + 1, Pattern::random, 1, 32}, SortCase{200003, Pattern::random, 1, 32},
        SortCase{7, Pattern::random, 2, 64}, SortCase{kTile + 1, Pattern::random, 2, 64},
        SortCase{100001, Pattern::random, 2, 63}, SortCase{50000, Pattern::random, 1, 30}));

INSTANTIATE_TEST_SUITE_P(Patterns, RadixSortTest,
                         ::testing::Values(SortCase{30000, Pattern::sorted, 1, 32},
                                           SortCase{30000, Pattern::reversed, 1, 32},
                                           SortCase{30000, Pattern::all_equal, 1, 32},
                                           SortCase{30000, Pattern::few_distinct, 1, 32},
                                           SortCase{30000, Pattern::sorted, 2, 64},
                                           SortCase{30000, Pattern::reversed, 2, 64},
                                           SortCase{30000, Pattern::all_equal, 2, 64},
                                           SortCase{30000, Pattern::few_distinct, 2, 63}));

class RadixSortModesTest : public GpuTest {
protected:
    // 64-bit keys of 40 random bits in device buffers, with the ping-pong and scratch of a
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
            std::uint64_t v = rng() & ((1ull << 40) - 1);
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

// Keys only, with the count read on the GPU (and the sort's workgroups launched indirectly
// from it): the first min(count, capacity) keys come out sorted, for counts of zero, inside a
// tile, across tiles, the capacity and beyond it.
TEST_F(RadixSortModesTest, KeysOnlyWithDynamicCount) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx);
    ASSERT_TRUE(sort);
    const std::uint32_t capacity = 3 * gpu_layout::kSortTile + 5;
    for (std::uint32_t count : {0u, 1u, gpu_layout::kSortTile - 1, 2 * gpu_layout::kSortTile + 3,
                                capacity, capacity + 100}) {
        SCOPED_TRACE("count " + std::to_string(count));
        Keys k = make(capacity, count + 1);
        ASSERT_TRUE(k.keys.handle());
        ASSERT_TRUE(ctx.upload(k.count, &count, 4));
        gpu::SortBuffers b = k.buffers();
        b.count = {k.count.handle(), 0, 4};
        b.args = {k.args.handle(), 0, k.args.size()};
        ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            sort->record_count_args(cmd, b.count, capacity, b.args);
            sort->record(cmd, b, capacity, 2, 40);
        }));
        // The arguments launch the tiles the count fills, and at least one element workgroup.
        VkDispatchIndirectCommand args[gpu_layout::kArgsSlots];
        ASSERT_TRUE(ctx.download(k.args, args, sizeof(args)));
        const std::uint32_t m32 = std::min(count, capacity);
        EXPECT_EQ(args[gpu_layout::kArgsSortTiles].x * args[gpu_layout::kArgsSortTiles].y,
                  (m32 + gpu_layout::kSortTile - 1) / gpu_layout::kSortTile);
        EXPECT_EQ(args[gpu_layout::kArgsElements].x * args[gpu_layout::kArgsElements].y,
                  std::max<std::uint32_t>(
                      (m32 + gpu_layout::kWorkgroupSize - 1) / gpu_layout::kWorkgroupSize, 1));
        std::vector<std::uint32_t> got(k.words.size());
        ASSERT_TRUE(ctx.download(k.keys, got.data(), got.size() * 4));
        const std::size_t m = std::min(count, capacity);
        std::vector<std::uint64_t> expected = as_keys(k.words, 0, m);
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(as_keys(got, 0, m), expected);
    }
}

// A gated sort: captured once (dispatched directly, sorting), then replayed as indirect
// dispatches whose arguments are the captured table (sorts again) or zeros (changes nothing).
TEST_F(RadixSortModesTest, GatedDispatches) {
    gpu::Context& ctx = gpu_context();
    auto sort = gpu::RadixSort::create(ctx);
    ASSERT_TRUE(sort);
    const std::uint32_t n = 2 * gpu_layout::kSortTile + 17;
    gpu::DispatchGate gate;
    Keys k = make(n, 5);
    ASSERT_TRUE(k.keys.handle());
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        sort->record(cmd, k.buffers(), n, 2, 40, &gate);
    }));
    std::vector<std::uint64_t> expected = as_keys(k.words, 0, n);
    std::sort(expected.begin(), expected.end());
    std::vector<std::uint32_t> got(k.words.size());
    ASSERT_TRUE(ctx.download(k.keys, got.data(), got.size() * 4));
    EXPECT_EQ(as_keys(got, 0, n), expected);
    ASSERT_GE(gate.counts.size(), 20u);  // 10 passes of histogram, scan and scatter

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
            sort->record(cmd, fresh.buffers(), n, 2, 40, &replay);
        }));
        EXPECT_EQ(replay.next, gate.counts.size());
        ASSERT_TRUE(ctx.download(fresh.keys, got.data(), got.size() * 4));
        std::vector<std::uint64_t> want = as_keys(fresh.words, 0, n);
        if (armed) std::sort(want.begin(), want.end());
        EXPECT_EQ(as_keys(got, 0, n), want);
    }
}

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
