// Buffer ranges of the public recorders (gpu::BufferRange): every recorder refuses a range
// that is too small or misaligned with an error naming it and the sizes (or the offset and
// the alignment), and records nothing (every byte of the buffer keeps its sentinel); every
// recorder works on ranges suballocated at aligned nonzero offsets of one shared buffer, with
// the sentinel bytes between the ranges untouched and results equal to the CPU references
// (brute force, the LBVH twin); buffers sized by another Lbvh's requirements are refused when
// too small. The fixture fails any test during which the validation layer reported an error.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "cull_gpu_test_util.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh.hpp"
#include "lbvh_cull.hpp"
#include "lbvh_refit.hpp"

namespace broadphase::testing {
namespace {

using gpu::BufferRange;
using gpu_layout::GpuBox;
using gpu_layout::GpuRay;
using gpu_layout::GpuRayHit;
using gpu_layout::LbvhNode;
using gpu_layout::TraversalStatus;

constexpr std::uint32_t kSentinel = 0xa5a5a5a5u;

VkDeviceSize alignment() {
    return gpu_context().info().range_alignment;
}

VkDeviceSize node_bytes(std::uint32_t n) {
    return (2ull * std::max<std::uint32_t>(n, 1) - 1) * sizeof(LbvhNode);
}

// A whole tree's node range: the nodes, then the wide records (gpu/device/buffer_sizing.hpp).
VkDeviceSize tree_bytes(std::uint32_t n) {
    return gpu::lbvh_tree_bytes(n);
}

// Several ranges of one device buffer: the first at a nonzero offset, each at a multiple of
// DeviceInfo::range_alignment, with at least one alignment unit of sentinel bytes before,
// between and after them. Every byte starts as the sentinel.
class Suballocation {
public:
    explicit Suballocation(std::vector<VkDeviceSize> sizes) : sizes_(std::move(sizes)) {
        const VkDeviceSize a = alignment();
        VkDeviceSize at = a;
        for (VkDeviceSize size : sizes_) {
            offsets_.push_back(at);
            at = gpu::align_up(at + size + a, a);
        }
        total_ = at + a;
        auto buffer = gpu_context().create_buffer(total_, gpu::MemoryKind::device);
        EXPECT_TRUE(buffer) << (buffer ? "" : buffer.error().message);
        if (!buffer) return;
        buffer_ = std::move(buffer.value());
        const std::vector<std::uint32_t> sentinel(total_ / 4, kSentinel);
        EXPECT_TRUE(gpu_context().upload(buffer_, sentinel.data(), total_));
    }

    BufferRange range(std::size_t i) const { return {buffer_.handle(), offsets_[i], sizes_[i]}; }
    std::vector<BufferRange> ranges() const {
        std::vector<BufferRange> out;
        for (std::size_t i = 0; i < sizes_.size(); ++i) out.push_back(range(i));
        return out;
    }

    template <class T>
    void upload(std::size_t i, std::span<const T> data) {
        ASSERT_LE(data.size_bytes(), sizes_[i]);
        if (data.empty()) return;
        ASSERT_TRUE(gpu_context().upload(buffer_, data.data(), data.size_bytes(), offsets_[i]));
    }

    template <class T>
    std::vector<T> download(std::size_t i, std::size_t count) const {
        std::vector<T> out(count);
        EXPECT_LE(count * sizeof(T), sizes_[i]);
        if (count > 0) {
            EXPECT_TRUE(
                gpu_context().download(buffer_, out.data(), count * sizeof(T), offsets_[i]));
        }
        return out;
    }

    // Empty when every byte outside the ranges (with `everywhere`, every byte) still holds the
    // sentinel; else the first byte that does not.
    std::string untouched(bool everywhere) const {
        std::vector<std::uint32_t> words(total_ / 4);
        if (!gpu_context().download(buffer_, words.data(), total_)) return "download failed";
        for (std::size_t w = 0; w < words.size(); ++w) {
            if (words[w] == kSentinel) continue;
            const VkDeviceSize at = w * 4;
            bool inside = false;
            for (std::size_t i = 0; i < sizes_.size(); ++i)
                inside = inside || (at >= offsets_[i] && at < offsets_[i] + sizes_[i]);
            if (everywhere || !inside)
                return "byte " + std::to_string(at) + (inside ? " (inside a range)" : "") +
                       " changed";
        }
        return "";
    }

private:
    std::vector<VkDeviceSize> sizes_;
    std::vector<VkDeviceSize> offsets_;
    VkDeviceSize total_ = 0;
    gpu::Buffer buffer_;
};

// A recorder under test: its name as its errors give it, the names and needed sizes of the
// ranges it checks, and a call that records it over given ranges (in that order).
struct Recorder {
    std::string name;
    std::vector<std::string> ranges;
    std::vector<VkDeviceSize> sizes;
    std::function<Status(VkCommandBuffer, const std::vector<BufferRange>&)> record;
};

// For each range of the recorder: 4 bytes short, then half an alignment unit off. Each call
// must fail naming the range with the sizes (or the offset and the alignment), and no byte of
// the buffer may change.
void expect_refusals(const Recorder& r) {
    const VkDeviceSize a = alignment();
    for (std::size_t i = 0; i < r.ranges.size(); ++i) {
        for (bool misaligned : {false, true}) {
            SCOPED_TRACE(r.name + ", " + r.ranges[i] + (misaligned ? " misaligned" : " short"));
            Suballocation sub(r.sizes);
            std::vector<BufferRange> ranges = sub.ranges();
            BufferRange& bad = ranges[i];
            if (misaligned)
                bad.offset += a / 2;
            else
                bad.size -= 4;
            Status recorded;
            ASSERT_TRUE(gpu_context().submit_and_wait(
                [&](VkCommandBuffer cmd) { recorded = r.record(cmd, ranges); }));
            ASSERT_FALSE(recorded);
            const std::string& m = recorded.error().message;
            EXPECT_EQ(recorded.error().code, ErrorCode::invalid_argument) << m;
            EXPECT_EQ(m.rfind(r.name + ": ", 0), 0u) << m;
            const std::string want = misaligned
                                         ? r.ranges[i] + " offset " + std::to_string(bad.offset) +
                                               " is not a multiple of " + std::to_string(a)
                                         : r.ranges[i] + " holds " + std::to_string(bad.size) +
                                               " bytes, needs " + std::to_string(r.sizes[i]);
            EXPECT_NE(m.find(want), std::string::npos) << m;
            EXPECT_NE(m.find("nothing was recorded"), std::string::npos) << m;
            EXPECT_EQ(sub.untouched(true), "");
        }
    }
}

std::unique_ptr<gpu::Lbvh> make_lbvh(const gpu::LbvhOptions& options = {}) {
    auto lbvh = gpu::Lbvh::create(gpu_context(), options);
    EXPECT_TRUE(lbvh) << (lbvh ? "" : lbvh.error().message);
    return lbvh ? std::move(lbvh.value()) : nullptr;
}

// Records, in one submission, a build of `lbvh` over the ranges boxes, nodes and scratch of
// `sub` (indices 0, 1, 2), a barrier, then `next(cmd)` over the built tree; the first refusal
// stops the recording and is returned.
template <class Next>
Status build_then(gpu::Lbvh& lbvh, Suballocation& sub, std::uint32_t n, Next next) {
    Status recorded;
    EXPECT_TRUE(gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        recorded = lbvh.record_build(cmd, {sub.range(0), sub.range(1), sub.range(2)}, n);
        if (!recorded) return;
        gpu::compute_barrier(cmd);
        recorded = next(cmd);
    }));
    return recorded;
}

// The all-pairs pass's output on ranges of `sub`: its TraversalStatus in range `status` raises no
// flag and counts exactly `expected` pairs, and the pairs in range `pairs`, sorted, equal them.
void expect_pairs(const Suballocation& sub, std::size_t pairs, std::size_t status,
                  const std::vector<Pair>& expected) {
    const auto st = sub.download<TraversalStatus>(status, 1)[0];
    EXPECT_EQ(st.flags, 0u);
    ASSERT_EQ(st.count, expected.size());
    auto got = sub.download<Pair>(pairs, st.count);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected);
}

// Nodes equal: links bit for bit, bounds by float equality (min/max may pick either zero).
std::string same_nodes(const std::vector<LbvhNode>& got, const std::vector<LbvhNode>& want) {
    if (got.size() != want.size()) return "node counts differ";
    auto same = [](const gpu_layout::vec4& a, const gpu_layout::vec4& b) {
        return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
    };
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i].link, &want[i].link, sizeof(got[i].link)) != 0 ||
            !same(got[i].lo, want[i].lo) || !same(got[i].hi, want[i].hi))
            return "node " + std::to_string(i) + " differs";
    }
    return "";
}

Frustum frustum_over(std::span<const Box> boxes) {
    Box b = boxes[0];
    for (const Box& box : boxes) b = merge(b, box);
    const Vec3 c{(b.min.x + b.max.x) / 2, (b.min.y + b.max.y) / 2, (b.min.z + b.max.z) / 2};
    Camera camera;
    camera.eye = {b.min.x - 0.5f * (b.max.x - b.min.x), c.y, c.z - 0.2f * (b.max.z - b.min.z)};
    camera.target = c;
    camera.up = {0, 1, 0};
    camera.fovy_deg = 50;
    camera.aspect = 1.3f;
    camera.near = 0.01f;
    camera.far = 2.0f * (b.max.x - b.min.x);
    auto f = Frustum::from_camera(camera);
    EXPECT_TRUE(f) << (f ? "" : f.error().message);
    return f ? f.value() : Frustum{};
}

// Every box moved by a small step that depends on its id (same count, same ids).
std::vector<Box> moved(std::span<const Box> boxes, int frame) {
    std::vector<Box> out(boxes.begin(), boxes.end());
    for (std::size_t k = 0; k < out.size(); ++k) {
        const float d = 0.004f * float(frame) * float(int(k % 7) - 3);
        out[k].min.x += d;
        out[k].max.x += d;
        out[k].min.y -= d / 2;
        out[k].max.y -= d / 2;
    }
    return out;
}

// A recorder's refusal of a tree of `n` boxes whose node array is over the range of the context
// (capped, splitting off): limit_exceeded, naming the node buffer's size.
void expect_nodes_over_one_binding(const Status& recorded, std::uint32_t n) {
    ASSERT_FALSE(recorded);
    EXPECT_EQ(recorded.error().code, ErrorCode::limit_exceeded) << recorded.error().message;
    EXPECT_NE(
        recorded.error().message.find("the node buffer needs " + std::to_string(node_bytes(n)) +
                                      " bytes bound as one storage buffer"),
        std::string::npos)
        << recorded.error().message;
}

class BufferRangeTest : public GpuTest {};

// Test 1: build and all pairs, each range short or misaligned in turn: refused, nothing
// written.
TEST_F(BufferRangeTest, BuildAndPairsRefuseBadRanges) {
    auto lbvh = make_lbvh();
    ASSERT_TRUE(lbvh);
    const std::uint32_t n = 1000, capacity = 64, work = 256;
    const gpu::LbvhRequirements req = lbvh->requirements(n);
    EXPECT_EQ(req.boxes, n * sizeof(GpuBox));
    EXPECT_EQ(req.nodes, tree_bytes(n));
    expect_refusals({"Lbvh::record_build",
                     {"boxes", "nodes", "scratch"},
                     {req.boxes, req.nodes, req.scratch},
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return lbvh->record_build(cmd, {r[0], r[1], r[2]}, n);
                     }});
    expect_refusals(
        {"Lbvh::record_pairs",
         {"nodes", "pairs", "status", "work"},
         {req.nodes, capacity * 8ull, sizeof(TraversalStatus), gpu::traversal_work_bytes(work)},
         [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
             return lbvh->record_pairs(cmd, {r[0], n}, {r[1], capacity, r[2], {r[3], work}});
         }});
}

// Test 2: the culler, each range short or misaligned in turn.
TEST_F(BufferRangeTest, CullRefusesBadRanges) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    const std::uint32_t n = 1000, capacity = 100;
    const Box unit{{0, 0, 0}, {1, 1, 1}};
    const Frustum f = frustum_over(std::span<const Box>(&unit, 1));
    gpu::Culler& c = *culler;
    expect_refusals({"Culler::record",
                     {"nodes", "scratch", "visible_ids", "draw_commands", "draw_count"},
                     {tree_bytes(n), c.scratch_size(n), capacity * 4ull,
                      capacity * sizeof(VkDrawIndexedIndirectCommand), 8},
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return c.record(cmd, {r[0], n}, f, CullOrder::exact, r[1],
                                         {r[2], r[3], r[4], capacity});
                     }});
}

// Test 3: region queries (count and fill pass) and ray casts, each range short or misaligned
// in turn; the pass that does not use a status is given none.
TEST_F(BufferRangeTest, QueriesRefuseBadRanges) {
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(queries);
    gpu::LbvhQueries& q = **queries;
    const std::uint32_t n = 1000, count = 50, capacity = 200, work = 256;
    const std::vector<std::string> names{"nodes",   "queries", "offsets", "ids",
                                         "scratch", "",        "work"};
    const std::vector<VkDeviceSize> sizes{tree_bytes(n),
                                          count * sizeof(GpuBox),
                                          (count + 1ull) * 4,
                                          capacity * 4ull,
                                          q.scan_scratch_size(count),
                                          sizeof(TraversalStatus),
                                          gpu::traversal_work_bytes(work)};
    std::vector<std::string> count_names = names, fill_names = names;
    count_names[5] = "count_status";
    fill_names[5] = "fill_status";
    expect_refusals({"LbvhQueries::record_region_count", count_names, sizes,
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return q.record_region_count(
                             cmd, {r[0], n},
                             {r[1], r[2], r[3], capacity, r[4], r[5], {}, {r[6], work}}, count);
                     }});
    expect_refusals({"LbvhQueries::record_region_fill", fill_names, sizes,
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return q.record_region_fill(
                             cmd, {r[0], n},
                             {r[1], r[2], r[3], capacity, r[4], {}, r[5], {r[6], work}}, count);
                     }});
    const std::uint32_t rays = 40;
    expect_refusals(
        {"LbvhQueries::record_ray_cast",
         {"nodes", "rays", "hits", "status", "work"},
         {tree_bytes(n), rays * sizeof(GpuRay), rays * sizeof(GpuRayHit), sizeof(TraversalStatus),
          gpu::traversal_work_bytes(work)},
         [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
             return q.record_ray_cast(cmd, {r[0], n}, {r[1], r[2], r[3], {r[4], work}}, rays);
         }});

    // A tree range large enough whose node array is over maxStorageBufferRange: each recorder
    // refuses it (limit_exceeded, the node binding named) before binding anything.
    // Bound whole (split: split_bindings_test.cpp).
    auto capped = capped_context(64 * 1024, false);
    ASSERT_TRUE(capped);
    auto small = gpu::LbvhQueries::create(*capped);
    ASSERT_TRUE(small);
    const std::uint32_t big = 2000;  // 3999 nodes: 191,952 bytes
    std::vector<VkDeviceSize> big_sizes = sizes;
    big_sizes[0] = tree_bytes(big);
    std::vector<gpu::Buffer> buffers;
    std::vector<BufferRange> r;
    for (VkDeviceSize size : big_sizes) {
        auto b = capped->create_buffer(size, gpu::MemoryKind::device);
        ASSERT_TRUE(b);
        buffers.push_back(std::move(b.value()));
        r.push_back(gpu::whole(buffers.back()));
    }
    const gpu::LbvhTree tree{r[0], big};
    for (int kind = 0; kind < 3; ++kind) {
        Status recorded;
        ASSERT_TRUE(capped->submit_and_wait([&](VkCommandBuffer cmd) {
            if (kind == 0)
                recorded = (*small)->record_region_count(
                    cmd, tree, {r[1], r[2], r[3], capacity, r[4], r[5], {}, {r[6], work}}, count);
            else if (kind == 1)
                recorded = (*small)->record_region_fill(
                    cmd, tree, {r[1], r[2], r[3], capacity, r[4], {}, r[5], {r[6], work}}, count);
            else  // the ray buffers fit the region ranges: 40 rays of 32 B, hits of 8 B
                recorded =
                    (*small)->record_ray_cast(cmd, tree, {r[1], r[3], r[5], {r[6], work}}, rays);
        }));
        SCOPED_TRACE(kind);
        expect_nodes_over_one_binding(recorded, big);
    }
    EXPECT_EQ(capped->validation_errors(), 0u);
}

// Test 4: the moving scene's frame and refit, each range short or misaligned in turn; a
// refused frame leaves the scene as it was (the next frame's events are exact).
TEST_F(BufferRangeTest, MovingSceneRefusesBadRanges) {
    auto scene = generate_scene("uniform", 500);
    ASSERT_TRUE(scene);
    auto moving = gpu::MovingScene::create(gpu_context());
    ASSERT_TRUE(moving);
    gpu::MovingScene& ms = **moving;
    ASSERT_TRUE(ms.reset(scene->boxes));
    const std::uint32_t n = ms.size();
    expect_refusals({"MovingScene::record_step",
                     {"boxes"},
                     {n * sizeof(GpuBox)},
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return ms.record_step(cmd, r[0]);
                     }});
    expect_refusals({"MovingScene::record_refit",
                     {"boxes", "nodes", "flags"},
                     {n * sizeof(GpuBox), tree_bytes(n), (n - 1) * 4ull},
                     [&](VkCommandBuffer cmd, const std::vector<BufferRange>& r) {
                         return ms.record_refit(cmd, r[0], {r[1], n}, r[2]);
                     }});
    // The host helper on a caller's range goes through the same check.
    Suballocation sub({n * sizeof(GpuBox) - 32});
    auto stepped = ms.step(sub.range(0));
    ASSERT_FALSE(stepped);
    EXPECT_NE(stepped.error().message.find("boxes holds " + std::to_string(n * 32 - 32) +
                                           " bytes, needs " + std::to_string(n * 32)),
              std::string::npos)
        << stepped.error().message;
    const std::vector<Box> next = moved(scene->boxes, 1);
    auto frame = ms.step(next);
    ASSERT_TRUE(frame) << frame.error().message;
    const std::vector<Pair> before = brute_pairs(scene->boxes), after = brute_pairs(next);
    EXPECT_EQ(frame->pairs, after);
    EXPECT_EQ(frame->began, lbvh::diff_sorted_pairs(after, before));
    EXPECT_EQ(frame->ended, lbvh::diff_sorted_pairs(before, after));
}

// Test 5: what no size or offset can fix: no buffer, VK_WHOLE_SIZE, two ranges sharing bytes,
// and a bound range over maxStorageBufferRange (a context capped at 64 KiB).
TEST_F(BufferRangeTest, RefusesMissingWholeSizeOverlappingAndOverLimit) {
    auto lbvh = make_lbvh();
    ASSERT_TRUE(lbvh);
    const std::uint32_t n = 100;
    const gpu::LbvhRequirements req = lbvh->requirements(n);
    Suballocation sub({req.boxes, req.nodes, req.scratch});
    auto refused = [&](const gpu::LbvhBuildBuffers& b, const std::string& want) {
        Status recorded;
        ASSERT_TRUE(gpu_context().submit_and_wait(
            [&](VkCommandBuffer cmd) { recorded = lbvh->record_build(cmd, b, n); }));
        ASSERT_FALSE(recorded);
        EXPECT_NE(recorded.error().message.find(want), std::string::npos)
            << recorded.error().message;
        EXPECT_EQ(sub.untouched(true), "");
    };
    refused({sub.range(0), {}, sub.range(2)}, "nodes has no buffer (VK_NULL_HANDLE)");
    BufferRange whole_size = sub.range(2);
    whole_size.size = VK_WHOLE_SIZE;
    refused({sub.range(0), sub.range(1), whole_size}, "scratch has size VK_WHOLE_SIZE");
    BufferRange shared = sub.range(1);
    shared.offset = sub.range(0).offset;  // nodes over the boxes
    refused({sub.range(0), shared, sub.range(2)}, "overlap nodes");

    // Bound whole (split: split_bindings_test.cpp).
    auto capped = capped_context(64 * 1024, false);
    ASSERT_TRUE(capped);
    auto small = gpu::Lbvh::create(*capped);
    ASSERT_TRUE(small);
    const std::uint32_t big = 2000;  // 3999 nodes: 191,952 bytes
    const gpu::LbvhRequirements big_req = (*small)->requirements(big);
    std::vector<gpu::Buffer> buffers;
    for (VkDeviceSize size : {big_req.boxes, big_req.nodes, big_req.scratch}) {
        auto b = capped->create_buffer(size, gpu::MemoryKind::device);
        ASSERT_TRUE(b);
        buffers.push_back(std::move(b.value()));
    }
    Status recorded;
    ASSERT_TRUE(capped->submit_and_wait([&](VkCommandBuffer cmd) {
        recorded = (*small)->record_build(
            cmd, {gpu::whole(buffers[0]), gpu::whole(buffers[1]), gpu::whole(buffers[2])}, big);
    }));
    // The node range holds two bindings (nodes, wide records); the nodes are over the limit.
    expect_nodes_over_one_binding(recorded, big);
    EXPECT_EQ(capped->validation_errors(), 0u);
}

// Test 6: buffers sized by another Lbvh's requirements (the mix-up of code kinds that used to
// go unchecked). A refining morton30 Lbvh needs room for run bounds that a morton63 Lbvh does
// not, and a morton63 Lbvh needs 64-bit keys that an unrefined morton30 one does not: both
// refused, naming scratch and both sizes, nothing written. Larger buffers are accepted.
TEST_F(BufferRangeTest, BuffersSizedForAnotherCodeKindAreRefused) {
    auto scene = generate_scene("clustered", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    auto m30 = make_lbvh({gpu::CodeKind::morton30});
    auto m30_plain = make_lbvh({gpu::CodeKind::morton30, false});
    auto m63 = make_lbvh({gpu::CodeKind::morton63});
    ASSERT_TRUE(m30 && m30_plain && m63);
    struct Mixup {
        gpu::Lbvh* recorder;
        gpu::Lbvh* sized_by;
        bool fits;
    };
    for (const Mixup& mix :
         {Mixup{m30.get(), m63.get(), false}, Mixup{m63.get(), m30_plain.get(), false},
          Mixup{m63.get(), m30.get(), true}}) {
        const gpu::LbvhRequirements given = mix.sized_by->requirements(n);
        const gpu::LbvhRequirements needed = mix.recorder->requirements(n);
        ASSERT_EQ(given.scratch >= needed.scratch, mix.fits);
        Suballocation sub({given.boxes, given.nodes, given.scratch, n * 40ull,
                           sizeof(TraversalStatus), gpu::traversal_work_bytes(1u << 16)});
        const auto gpu_boxes = gpu::to_gpu_boxes(scene->boxes);
        sub.upload<GpuBox>(0, gpu_boxes);
        const Status recorded = build_then(*mix.recorder, sub, n, [&](VkCommandBuffer cmd) {
            return mix.recorder->record_pairs(
                cmd, {sub.range(1), n},
                {sub.range(3), n * 5, sub.range(4), {sub.range(5), 1u << 16}});
        });
        EXPECT_EQ(sub.untouched(false), "");
        if (!mix.fits) {
            ASSERT_FALSE(recorded);
            EXPECT_NE(
                recorded.error().message.find("scratch holds " + std::to_string(given.scratch) +
                                              " bytes, needs " + std::to_string(needed.scratch)),
                std::string::npos)
                << recorded.error().message;
            continue;
        }
        ASSERT_TRUE(recorded) << recorded.error().message;
        expect_pairs(sub, 3, 4, brute_pairs(scene->boxes));
    }
}

// Test 7: build and all pairs on ranges of one shared buffer, for each code kind: the tree
// equals the CPU twin node for node, the pairs equal brute force, the gaps keep their
// sentinel.
TEST_F(BufferRangeTest, BuildAndPairsOnSuballocatedRanges) {
    auto scene = generate_scene("clustered", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    const std::vector<Pair> expected = brute_pairs(scene->boxes);
    ASSERT_GT(expected.size(), 100u);
    const auto capacity = static_cast<std::uint32_t>(expected.size() + 16);
    const std::uint32_t work = 4096;
    for (gpu::CodeKind code :
         {gpu::CodeKind::morton30, gpu::CodeKind::morton63, gpu::CodeKind::hilbert30}) {
        SCOPED_TRACE(int(code));
        auto lbvh = make_lbvh({code});
        ASSERT_TRUE(lbvh);
        const gpu::LbvhRequirements req = lbvh->requirements(n);
        Suballocation sub({req.boxes, req.nodes, req.scratch, capacity * 8ull,
                           sizeof(TraversalStatus), gpu::traversal_work_bytes(work)});
        sub.upload<GpuBox>(0, gpu::to_gpu_boxes(scene->boxes));
        const Status recorded = build_then(*lbvh, sub, n, [&](VkCommandBuffer cmd) {
            return lbvh->record_pairs(cmd, {sub.range(1), n},
                                      {sub.range(3), capacity, sub.range(4), {sub.range(5), work}});
        });
        ASSERT_TRUE(recorded) << recorded.error().message;
        EXPECT_EQ(sub.untouched(false), "");
        EXPECT_EQ(
            same_nodes(sub.download<LbvhNode>(1, 2 * n - 1), lbvh::build_tree(scene->boxes, code)),
            "");
        expect_pairs(sub, 3, 4, expected);
    }
}

// Test 8: build and cull on ranges of one shared buffer, both orders: ids equal the CPU twin's
// cull, each draw command draws its id, the count is exact, the gaps keep their sentinel.
TEST_F(BufferRangeTest, CullOnSuballocatedRanges) {
    auto scene = generate_scene("uniform", 4000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    auto lbvh = make_lbvh();
    auto culler = make_culler();
    ASSERT_TRUE(lbvh && culler);
    const Frustum f = frustum_over(scene->boxes);
    const std::vector<LbvhNode> tree = lbvh::build_tree(scene->boxes, lbvh::CodeKind::morton30);
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        SCOPED_TRACE(order == CullOrder::exact ? "exact" : "approx");
        const std::vector<std::uint32_t> expected = lbvh::cull(tree, n, f, order);
        ASSERT_GT(expected.size(), 10u);
        ASSERT_LT(expected.size(), n);
        const gpu::LbvhRequirements req = lbvh->requirements(n);
        Suballocation sub({req.boxes, req.nodes, req.scratch, culler->scratch_size(n), n * 4ull,
                           n * sizeof(VkDrawIndexedIndirectCommand), 8});
        sub.upload<GpuBox>(0, gpu::to_gpu_boxes(scene->boxes));
        const Status recorded = build_then(*lbvh, sub, n, [&](VkCommandBuffer cmd) {
            return culler->record(cmd, {sub.range(1), n}, f, order, sub.range(3),
                                  {sub.range(4), sub.range(5), sub.range(6), n});
        });
        ASSERT_TRUE(recorded) << recorded.error().message;
        EXPECT_EQ(sub.untouched(false), "");
        const auto counts = sub.download<std::uint32_t>(6, 2);
        EXPECT_EQ(counts[0], expected.size());
        EXPECT_EQ(counts[1], expected.size());
        EXPECT_EQ(sub.download<std::uint32_t>(4, expected.size()), expected);
        const auto commands = sub.download<VkDrawIndexedIndirectCommand>(5, expected.size());
        for (std::size_t i = 0; i < commands.size(); ++i) {
            ASSERT_EQ(commands[i].firstInstance, expected[i]) << i;
            ASSERT_EQ(commands[i].instanceCount, 1u) << i;
        }
    }
}

// Test 9: build, region queries (count, scan, fill) and ray casts on ranges of one shared
// buffer: every hit list equals brute force, every closest hit has brute force's id (t within
// the rounding of GPU division), the gaps keep their sentinel.
TEST_F(BufferRangeTest, QueriesOnSuballocatedRanges) {
    auto scene = generate_scene("mixed_sizes", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    auto lbvh = make_lbvh();
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(lbvh && queries);
    gpu::LbvhQueries& q = **queries;
    auto oracle = make_structure("brute_force");
    ASSERT_TRUE(oracle);
    ASSERT_TRUE((*oracle)->build(scene->boxes));

    // Regions around every 15th box, grown by half its size; rays from below the scene.
    std::vector<Box> regions;
    for (std::uint32_t i = 0; i < n; i += 15) {
        Box b = scene->boxes[i];
        const Vec3 half{(b.max.x - b.min.x) / 2, (b.max.y - b.min.y) / 2, (b.max.z - b.min.z) / 2};
        regions.push_back({{b.min.x - half.x, b.min.y - half.y, b.min.z - half.z},
                           {b.max.x + half.x, b.max.y + half.y, b.max.z + half.z}});
    }
    std::vector<Ray> rays;
    for (std::uint32_t i = 0; i < 200; ++i) {
        const Box& b = scene->boxes[(i * 37) % n];
        rays.push_back({{(b.min.x + b.max.x) / 2, -1.0f, (b.min.z + b.max.z) / 2},
                        {0.01f * float(int(i % 5) - 2), 1.0f, 0.02f},
                        i % 3 == 0 ? 1.5f : std::numeric_limits<float>::infinity()});
    }
    std::vector<std::uint32_t> expected_offsets{0}, expected_ids;
    for (const Box& r : regions) {
        std::vector<std::uint32_t> hits;
        (*oracle)->query_box(r, hits);
        std::sort(hits.begin(), hits.end());
        expected_ids.insert(expected_ids.end(), hits.begin(), hits.end());
        expected_offsets.push_back(static_cast<std::uint32_t>(expected_ids.size()));
    }
    const auto count = static_cast<std::uint32_t>(regions.size());
    const auto r = static_cast<std::uint32_t>(rays.size());
    const auto capacity = static_cast<std::uint32_t>(expected_ids.size());
    const std::uint32_t work = 4096;
    std::vector<GpuRay> gpu_rays;
    for (const Ray& ray : rays)
        gpu_rays.push_back({{ray.origin.x, ray.origin.y, ray.origin.z, ray.tmax},
                            {ray.dir.x, ray.dir.y, ray.dir.z, 0}});

    const gpu::LbvhRequirements req = lbvh->requirements(n);
    enum : std::size_t {
        kBoxes,
        kNodes,
        kScratch,
        kQueries,
        kOffsets,
        kIds,
        kScan,
        kCount,
        kFill,
        kWork,
        kRays,
        kHits,
        kRayStatus
    };
    Suballocation sub({req.boxes, req.nodes, req.scratch, count * sizeof(GpuBox),
                       (count + 1ull) * 4, capacity * 4ull, q.scan_scratch_size(count),
                       sizeof(TraversalStatus), sizeof(TraversalStatus),
                       gpu::traversal_work_bytes(work), r * sizeof(GpuRay), r * sizeof(GpuRayHit),
                       sizeof(TraversalStatus)});
    sub.upload<GpuBox>(kBoxes, gpu::to_gpu_boxes(scene->boxes));
    sub.upload<GpuBox>(kQueries, gpu::to_gpu_boxes(regions));
    sub.upload<GpuRay>(kRays, gpu_rays);
    const gpu::LbvhTree tree{sub.range(kNodes), n};
    const gpu::RegionQueryBuffers region_buffers{
        sub.range(kQueries), sub.range(kOffsets), sub.range(kIds),  capacity,
        sub.range(kScan),    sub.range(kCount),   sub.range(kFill), {sub.range(kWork), work}};
    const Status recorded = build_then(*lbvh, sub, n, [&](VkCommandBuffer cmd) -> Status {
        if (Status s = q.record_region_count(cmd, tree, region_buffers, count); !s) return s;
        if (Status s = q.record_region_fill(cmd, tree, region_buffers, count); !s) return s;
        gpu::compute_barrier(cmd);
        return q.record_ray_cast(
            cmd, tree,
            {sub.range(kRays), sub.range(kHits), sub.range(kRayStatus), {sub.range(kWork), work}},
            r);
    });
    ASSERT_TRUE(recorded) << recorded.error().message;
    EXPECT_EQ(sub.untouched(false), "");
    for (std::size_t k : {kCount, kFill, kRayStatus})
        EXPECT_EQ(sub.download<TraversalStatus>(k, 1)[0].flags, 0u) << k;

    EXPECT_EQ(sub.download<std::uint32_t>(kOffsets, count + 1), expected_offsets);
    std::vector<std::uint32_t> ids = sub.download<std::uint32_t>(kIds, capacity);
    for (std::uint32_t i = 0; i < count; ++i)
        std::sort(ids.begin() + expected_offsets[i], ids.begin() + expected_offsets[i + 1]);
    EXPECT_EQ(ids, expected_ids);

    const auto hits = sub.download<GpuRayHit>(kHits, r);
    std::size_t hit_count = 0;
    for (std::uint32_t i = 0; i < r; ++i) {
        const auto want = (*oracle)->ray_cast(rays[i]);
        ASSERT_EQ(hits[i].id != gpu_layout::kInvalidNode, want.has_value()) << "ray " << i;
        if (!want) continue;
        ++hit_count;
        EXPECT_EQ(hits[i].id, want->id) << "ray " << i;
        float t;
        std::memcpy(&t, &hits[i].t_bits, sizeof(t));
        EXPECT_LE(std::fabs(t - want->t), 1e-5f * std::max(std::fabs(t), std::fabs(want->t)))
            << "ray " << i;
    }
    EXPECT_GT(hit_count, r / 4);
}

// Test 10: moving-scene frames read from ranges of one shared buffer (two frames side by side;
// recorded, and through the host helper): pairs and events equal brute force's, the gaps keep
// their sentinel.
TEST_F(BufferRangeTest, MovingSceneOnSuballocatedRanges) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    auto moving = gpu::MovingScene::create(gpu_context());
    ASSERT_TRUE(moving);
    gpu::MovingScene& ms = **moving;
    ASSERT_TRUE(ms.reset(scene->boxes));
    std::vector<std::vector<Box>> frames{scene->boxes};
    for (int f = 1; f <= 3; ++f) frames.push_back(moved(scene->boxes, f));
    Suballocation sub({n * sizeof(GpuBox), n * sizeof(GpuBox), n * sizeof(GpuBox)});
    for (std::size_t k = 0; k < 3; ++k) sub.upload<GpuBox>(k, gpu::to_gpu_boxes(frames[k + 1]));
    for (std::size_t k = 0; k < 3; ++k) {
        SCOPED_TRACE("frame " + std::to_string(k + 1));
        Result<gpu::FrameResult> frame = Error{};
        if (k < 2) {
            Status recorded;
            ASSERT_TRUE(gpu_context().submit_and_wait(
                [&](VkCommandBuffer cmd) { recorded = ms.record_step(cmd, sub.range(k)); }));
            ASSERT_TRUE(recorded) << recorded.error().message;
            frame = ms.read_step();
        } else {
            frame = ms.step(sub.range(k));
        }
        ASSERT_TRUE(frame) << frame.error().message;
        const std::vector<Pair> before = brute_pairs(frames[k]), after = brute_pairs(frames[k + 1]);
        EXPECT_EQ(frame->pairs, after);
        EXPECT_EQ(frame->began, lbvh::diff_sorted_pairs(after, before));
        EXPECT_EQ(frame->ended, lbvh::diff_sorted_pairs(before, after));
    }
    EXPECT_EQ(sub.untouched(false), "");
}

// Test 11: build, refit for moved boxes and all pairs on ranges of one shared buffer: the
// refitted tree equals the CPU twin's refit node for node, its pairs equal brute force's.
TEST_F(BufferRangeTest, RefitOnSuballocatedRanges) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    const std::vector<Box> next = moved(scene->boxes, 2);
    const std::vector<Pair> expected = brute_pairs(next);
    auto lbvh = make_lbvh();
    auto moving = gpu::MovingScene::create(gpu_context());
    ASSERT_TRUE(lbvh && moving);
    const gpu::LbvhRequirements req = lbvh->requirements(n);
    const auto capacity = static_cast<std::uint32_t>(expected.size() + 16);
    const std::uint32_t work = 4096;
    Suballocation sub({req.boxes, req.boxes, req.nodes, req.scratch, (n - 1) * 4ull,
                       capacity * 8ull, sizeof(TraversalStatus), gpu::traversal_work_bytes(work)});
    sub.upload<GpuBox>(0, gpu::to_gpu_boxes(scene->boxes));
    sub.upload<GpuBox>(1, gpu::to_gpu_boxes(next));
    const gpu::LbvhTree tree{sub.range(2), n};
    Status recorded;
    ASSERT_TRUE(gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        recorded = lbvh->record_build(cmd, {sub.range(0), tree.nodes, sub.range(3)}, n);
        if (!recorded) return;
        gpu::compute_barrier(cmd);
        if (!(recorded = (*moving)->record_refit(cmd, sub.range(1), tree, sub.range(4)))) return;
        gpu::compute_barrier(cmd);
        recorded = lbvh->record_pairs(cmd, tree,
                                      {sub.range(5), capacity, sub.range(6), {sub.range(7), work}});
    }));
    ASSERT_TRUE(recorded) << recorded.error().message;
    EXPECT_EQ(sub.untouched(false), "");
    std::vector<LbvhNode> twin = lbvh::build_tree(scene->boxes, lbvh::CodeKind::morton30);
    lbvh::refit(twin, next);
    EXPECT_EQ(same_nodes(sub.download<LbvhNode>(2, 2 * n - 1), twin), "");
    expect_pairs(sub, 5, 6, expected);
}

}  // namespace
}  // namespace broadphase::testing
