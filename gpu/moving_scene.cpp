// Moving scenes on the GPU (include/broadphase/gpu_frames.hpp): per-frame LBVH refit
// (shaders/lbvh_refit.comp + lbvh_bounds.comp) or rebuild (Lbvh::record_build), chosen by the
// refitted tree's normalised SAH cost (shaders/lbvh_sah.comp; Kopta et al., I3D 2012), then
// all pairs (Lbvh::record_pairs, grown until they fit), a 64-bit radix sort of the pairs
// (shaders/pair_keys.comp, RadixSort) and the difference of consecutive frames' sorted pairs
// both ways (shaders/pair_diff_mark.comp, exclusive scan, shaders/pair_diff_compact.comp).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>

#include "broadphase/gpu_frames.hpp"
#include "broadphase/scene.hpp"
#include "radix_sort.hpp"
#include "shaders.hpp"
#include "timestamps.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

std::uint32_t groups(std::uint64_t count) {
    return static_cast<std::uint32_t>(div_up(count, kWorkgroupSize));
}

VkDeviceSize nodes_bytes(std::uint32_t n) {
    return std::max<VkDeviceSize>(2ull * std::max<std::uint32_t>(n, 1) - 1, 1) * sizeof(LbvhNode);
}

BufferRange whole(const Buffer& b, VkDeviceSize size) {
    return {b.handle(), 0, std::max<VkDeviceSize>(size, 4)};
}

Error limit(const std::string& what) {
    return Error{ErrorCode::limit_exceeded, what, {}, {}};
}

// Timestamp queries of a frame: refit [0, 1], rebuild and pairs [2, 3, 4], sort and diff
// [5, 6, 7].
constexpr std::uint32_t kFrameQueries = 8;

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

}  // namespace

struct MovingScene::Impl {
    Context* context = nullptr;
    MovingSceneOptions options;
    std::unique_ptr<Lbvh> lbvh;
    RadixSort sort;
    Kernel refit, node_bounds, sah, pair_keys, diff_mark, diff_compact;
    Timestamps timestamps;
    FrameTimes times;

    std::uint32_t n = 0;
    bool ready = false;
    double base_cost = 0;
    // Scene and tree.
    Buffer boxes, nodes, scratch, flags, partials;
    // Pairs of the current frame (unsorted, as appended) and their count.
    Buffer pair_buffer, counts;  // counts: pairs at 0, began at 256, ended at 512 (bytes)
    std::uint32_t pair_capacity = 0;
    // Sorted keys of the previous (index prev) and current frame.
    Buffer keys[2];
    std::uint32_t key_count[2] = {0, 0};
    int prev = 0;
    Buffer values, keys_tmp, values_tmp, sort_scratch, marks, scan_scratch, began, ended;

    Status ensure(Buffer& buffer, VkDeviceSize size) {
        size = std::max<VkDeviceSize>(size, 8);
        if (buffer.handle() && buffer.size() >= size) return {};
        if (size > context->info().max_storage_buffer_range)
            return limit(std::to_string(size) +
                         " bytes for one buffer exceed the device's maxStorageBufferRange");
        buffer = Buffer();
        auto b = context->create_buffer(size, MemoryKind::device);
        if (!b) return b.error();
        buffer = std::move(b.value());
        return {};
    }

    LbvhBuildBuffers build_buffers(VkBuffer box_buffer) const {
        return {box_buffer, nodes.handle(), scratch.handle()};
    }

    void record_sah(VkCommandBuffer cmd) const {
        PushConstants pc{};
        pc.count = n;
        pc.tiles = std::max<std::uint32_t>(groups(n > 1 ? n - 1 : 0), 1);
        sah.dispatch(cmd, {whole(nodes, nodes_bytes(n)), whole(partials, (pc.tiles + 1) * 4ull)},
                     pc, pc.tiles);
    }

    // Normalised SAH cost from the partial sums of the last record_sah.
    Result<double> read_cost() {
        std::uint32_t tiles = std::max<std::uint32_t>(groups(n > 1 ? n - 1 : 0), 1);
        std::vector<float> p(tiles + 1);
        if (Status s = context->download(partials, p.data(), p.size() * 4); !s) return s.error();
        double sum = 0;
        for (std::uint32_t i = 0; i < tiles; ++i) sum += p[i];
        double root = p[tiles];
        return root > 0 ? sum / root : 0.0;
    }

    // Runs the pairs pass (after `first`, recorded before it in the same submit), growing the
    // pair buffer until every pair fits. Returns the exact pair count.
    template <class F>
    Result<std::uint32_t> find_pairs(VkBuffer box_buffer, F&& first) {
        const VkDeviceSize max_pairs = context->info().max_storage_buffer_range / 8;
        if (pair_capacity == 0) {
            pair_capacity = static_cast<std::uint32_t>(
                std::min<VkDeviceSize>(std::max<VkDeviceSize>(4ull * n, 1024), max_pairs));
            if (Status s = ensure(pair_buffer, pair_capacity * 8ull); !s) return s.error();
        }
        bool with_first = true;
        while (true) {
            LbvhPairBuffers out{pair_buffer.handle(), pair_capacity, counts.handle()};
            Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
                timestamps.reset(cmd, 2, 3);
                compute_barrier(cmd);
                timestamps.write(cmd, 2);
                if (with_first) first(cmd);
                compute_barrier(cmd);
                timestamps.write(cmd, 3);
                lbvh->record_pairs(cmd, build_buffers(box_buffer), n, out);
                compute_barrier(cmd);
                timestamps.write(cmd, 4);
            });
            if (!s) return s.error();
            if (with_first && times.path == FramePath::rebuild) times.rebuild = timestamps.ms(2, 3);
            times.pairs += timestamps.ms(3, 4);
            with_first = false;
            std::uint32_t found = 0;
            if (Status d = context->download(counts, &found, 4); !d) return d.error();
            if (found <= pair_capacity) return found;
            if (found > max_pairs)
                return limit(std::to_string(found) +
                             " pairs do not fit one storage buffer (device limit " +
                             std::to_string(max_pairs) + " pairs)");
            pair_capacity =
                static_cast<std::uint32_t>(std::min<VkDeviceSize>(found + found / 4, max_pairs));
            pair_buffer = Buffer();
            if (Status e = ensure(pair_buffer, pair_capacity * 8ull); !e) return e.error();
        }
    }

    // Sorts the m pairs of pair_buffer into keys[cur] (64-bit keys, low word j).
    Status ensure_sort_buffers(int cur, std::uint32_t m) {
        if (Status s = ensure(keys[cur], m * 8ull); !s) return s;
        if (Status s = ensure(keys_tmp, m * 8ull); !s) return s;
        if (Status s = ensure(values, m * 4ull); !s) return s;
        if (Status s = ensure(values_tmp, m * 4ull); !s) return s;
        return ensure(sort_scratch, RadixSort::scratch_size(m));
    }

    void record_sort(VkCommandBuffer cmd, int cur, std::uint32_t m) const {
        if (m == 0) return;
        PushConstants pc{};
        pc.count = m;
        pair_keys.dispatch(
            cmd,
            {whole(pair_buffer, m * 8ull), whole(keys[cur], m * 8ull), whole(values, m * 4ull)}, pc,
            groups(m));
        compute_barrier(cmd);
        // Keys are i << 32 | j with i < j < n: the high word needs bit_width(n - 1) bits.
        std::uint32_t key_bits = 32 + std::max<std::uint32_t>(std::bit_width(n - 1), 1);
        sort.record(cmd,
                    {whole(keys[cur], m * 8ull), whole(values, m * 4ull), whole(keys_tmp, m * 8ull),
                     whole(values_tmp, m * 4ull), whole(sort_scratch, RadixSort::scratch_size(m))},
                    m, 2, key_bits);
        compute_barrier(cmd);
    }

    // Records out = A \ B for sorted key lists; the exact count goes to counts at count_offset.
    void record_diff(VkCommandBuffer cmd, const Buffer& a, std::uint32_t ma, const Buffer& b,
                     std::uint32_t mb, const Buffer& out, VkDeviceSize count_offset) const {
        fill(cmd, {counts.handle(), count_offset, 4}, 0u);
        compute_barrier(cmd);
        if (ma == 0) return;
        PushConstants pc{};
        pc.count = ma;
        pc.capacity = mb;
        diff_mark.dispatch(
            cmd, {whole(a, ma * 8ull), whole(b, mb * 8ull), whole(marks, (ma + 1) * 4ull)}, pc,
            groups(ma + 1ull));
        compute_barrier(cmd);
        sort.record_scan(cmd, whole(marks, (ma + 1) * 4ull), ma + 1,
                         whole(scan_scratch, RadixSort::scan_scratch_size(ma + 1)));
        compute_barrier(cmd);
        diff_compact.dispatch(cmd,
                              {whole(a, ma * 8ull),
                               whole(marks, (ma + 1) * 4ull),
                               whole(out, ma * 8ull),
                               {counts.handle(), count_offset, 4}},
                              pc, groups(ma));
        compute_barrier(cmd);
    }

    // Refuses, before allocating anything, a scene whose per-box buffers exceed the device's
    // maxStorageBufferRange (names the buffer and the limit).
    Status check_limits(std::uint32_t count) const {
        const VkDeviceSize range = context->info().max_storage_buffer_range;
        struct Need {
            const char* what;
            VkDeviceSize bytes;
        };
        const Need needs[] = {
            {"the box buffer", count * VkDeviceSize(sizeof(GpuBox))},
            {"the node buffer", nodes_bytes(count)},
            {"the sort-key buffer", count * 8ull},
        };
        for (const Need& need : needs) {
            if (need.bytes > range)
                return limit(std::string(need.what) + " of a moving scene of " +
                             std::to_string(count) + " boxes needs " + std::to_string(need.bytes) +
                             " bytes, over the device's maxStorageBufferRange of " +
                             std::to_string(range));
        }
        return {};
    }

    Status allocate(std::uint32_t count) {
        n = count;
        LbvhRequirements req = Lbvh::requirements(n, options.code);
        if (Status s = ensure(boxes, n * sizeof(GpuBox)); !s) return s;
        if (Status s = ensure(nodes, req.nodes); !s) return s;
        if (Status s = ensure(scratch, req.scratch); !s) return s;
        if (Status s = ensure(flags, std::max<std::uint32_t>(n, 1) * 4ull); !s) return s;
        if (Status s = ensure(partials, (groups(n) + 2) * 4ull); !s) return s;
        return ensure(counts, 1024);
    }

    Result<FrameResult> frame(VkBuffer box_buffer, bool first_frame, MovingScene& self);
};

Result<FrameResult> MovingScene::Impl::frame(VkBuffer box_buffer, bool first_frame,
                                             MovingScene& self) {
    FrameResult result;
    const double upload_ms = times.upload;
    times = {};
    times.upload = upload_ms;
    bool rebuild = first_frame || options.policy == RefitPolicy::always_rebuild;
    if (!rebuild && n > 1) {
        Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
            timestamps.reset(cmd, 0, 2);
            compute_barrier(cmd);
            timestamps.write(cmd, 0);
            self.record_refit(cmd, build_buffers(box_buffer), flags.handle(), n);
            compute_barrier(cmd);
            record_sah(cmd);
            compute_barrier(cmd);
            timestamps.write(cmd, 1);
        });
        if (!s) return s.error();
        times.refit = timestamps.ms(0, 1);
        auto cost = read_cost();
        if (!cost) return cost.error();
        result.ratio =
            base_cost > 0 ? cost.value() / base_cost : (cost.value() > 0 ? HUGE_VAL : 1.0);
        rebuild = options.policy == RefitPolicy::by_ratio && result.ratio > options.rebuild_ratio;
    } else if (!rebuild && n == 1) {
        // A single leaf: refit only (no internal nodes, no cost).
        Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
            compute_barrier(cmd);
            self.record_refit(cmd, build_buffers(box_buffer), flags.handle(), n);
            compute_barrier(cmd);
        });
        if (!s) return s.error();
    }
    result.path = rebuild ? FramePath::rebuild : FramePath::refit;
    times.path = result.path;

    std::uint32_t m = 0;
    if (n > 0) {
        auto found = find_pairs(box_buffer, [&](VkCommandBuffer cmd) {
            if (!rebuild) return;
            lbvh->record_build(cmd, build_buffers(box_buffer), n);
            compute_barrier(cmd);
            record_sah(cmd);
        });
        if (!found) return found.error();
        m = found.value();
        if (rebuild) {
            auto cost = read_cost();
            if (!cost) return cost.error();
            base_cost = cost.value();
        }
    }
    result.pair_count = m;

    // Sort this frame's pairs and diff with the previous frame's.
    int cur = prev ^ 1;
    std::uint32_t mp = key_count[prev];
    if (Status s = ensure_sort_buffers(cur, m); !s) return s.error();
    if (Status s = ensure(marks, (std::max(m, mp) + 1) * 4ull); !s) return s.error();
    if (Status s = ensure(scan_scratch, RadixSort::scan_scratch_size(std::max(m, mp) + 1)); !s)
        return s.error();
    if (Status s = ensure(began, m * 8ull); !s) return s.error();
    if (Status s = ensure(ended, mp * 8ull); !s) return s.error();
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        timestamps.reset(cmd, 5, 3);
        compute_barrier(cmd);
        timestamps.write(cmd, 5);
        record_sort(cmd, cur, m);
        timestamps.write(cmd, 6);
        if (!first_frame) {
            record_diff(cmd, keys[cur], m, keys[prev], mp, began, 256);
            record_diff(cmd, keys[prev], mp, keys[cur], m, ended, 512);
        }
        timestamps.write(cmd, 7);
    });
    if (!s) return s.error();
    times.sort = timestamps.ms(5, 6);
    times.diff = timestamps.ms(6, 7);
    key_count[cur] = m;
    prev = cur;
    if (first_frame) return result;

    std::uint32_t event_counts[2] = {0, 0};
    if (Status d = context->download(counts, &event_counts[0], 4, 256); !d) return d.error();
    if (Status d = context->download(counts, &event_counts[1], 4, 512); !d) return d.error();
    result.began.resize(event_counts[0]);
    result.ended.resize(event_counts[1]);
    if (!result.began.empty())
        if (Status d = context->download(began, result.began.data(), result.began.size() * 8); !d)
            return d.error();
    if (!result.ended.empty())
        if (Status d = context->download(ended, result.ended.data(), result.ended.size() * 8); !d)
            return d.error();
    if (options.return_pairs && m > 0) {
        // Sorted keys are (j, i) words; swap to (i, j).
        result.pairs.resize(m);
        if (Status d = context->download(keys[cur], result.pairs.data(), m * 8ull); !d)
            return d.error();
        for (Pair& p : result.pairs) std::swap(p.i, p.j);
    }
    return result;
}

MovingScene::MovingScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MovingScene::~MovingScene() = default;

Result<std::unique_ptr<MovingScene>> MovingScene::create(Context& context,
                                                         const MovingSceneOptions& options) {
    if (!(options.rebuild_ratio > 0))
        return Error{ErrorCode::invalid_argument, "rebuild_ratio must be positive", {}, {}};
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    auto lbvh = Lbvh::create(context, {options.code});
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    auto sort = RadixSort::create(context);
    if (!sort) return sort.error();
    impl->sort = std::move(sort.value());
    struct Spec {
        Kernel* kernel;
        std::span<const std::uint32_t> spirv;
        std::uint32_t bindings;
        const char* name;
    };
    const Spec specs[] = {
        {&impl->refit, shaders::lbvh_refit, 2, "lbvh_refit"},
        {&impl->node_bounds, shaders::lbvh_bounds, 2, "lbvh_bounds"},
        {&impl->sah, shaders::lbvh_sah, 2, "lbvh_sah"},
        {&impl->pair_keys, shaders::pair_keys, 3, "pair_keys"},
        {&impl->diff_mark, shaders::pair_diff_mark, 3, "pair_diff_mark"},
        {&impl->diff_compact, shaders::pair_diff_compact, 4, "pair_diff_compact"},
    };
    for (const Spec& s : specs) {
        auto k = Kernel::create(context, s.spirv, s.bindings, s.name);
        if (!k) return k.error();
        *s.kernel = std::move(k.value());
    }
    auto timestamps = Timestamps::create(context, kFrameQueries);
    if (!timestamps) return timestamps.error();
    impl->timestamps = std::move(timestamps.value());
    return std::unique_ptr<MovingScene>(new MovingScene(std::move(impl)));
}

Status MovingScene::reset(std::span<const Box> input) {
    Impl& im = *impl_;
    im.ready = false;
    if (Status s = validate_boxes(input); !s) return s;
    if (input.size() >= (1ull << 31)) return limit("at most 2^31 - 1 boxes per moving scene");
    if (Status s = im.check_limits(static_cast<std::uint32_t>(input.size())); !s) return s;
    if (Status s = im.allocate(static_cast<std::uint32_t>(input.size())); !s) return s;
    im.key_count[0] = im.key_count[1] = 0;
    im.base_cost = 0;
    im.times.upload = 0;
    if (im.n > 0) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<GpuBox> gpu_boxes = to_gpu_boxes(input);
        if (Status s =
                im.context->upload(im.boxes, gpu_boxes.data(), gpu_boxes.size() * sizeof(GpuBox));
            !s)
            return s;
        im.times.upload = ms_since(start);
    }
    auto r = im.frame(im.boxes.handle(), true, *this);
    if (!r) return r.error();
    im.ready = true;
    return {};
}

Result<FrameResult> MovingScene::step(std::span<const Box> new_boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset", {}, {}};
    if (new_boxes.size() != im.n)
        return Error{ErrorCode::invalid_argument,
                     "step got " + std::to_string(new_boxes.size()) + " boxes, the scene has " +
                         std::to_string(im.n),
                     {},
                     {}};
    if (Status s = validate_boxes(new_boxes); !s) return s.error();
    im.times.upload = 0;
    if (im.n > 0) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<GpuBox> gpu_boxes = to_gpu_boxes(new_boxes);
        if (Status s =
                im.context->upload(im.boxes, gpu_boxes.data(), gpu_boxes.size() * sizeof(GpuBox));
            !s)
            return s.error();
        im.times.upload = ms_since(start);
    }
    return im.frame(im.boxes.handle(), false, *this);
}

Result<FrameResult> MovingScene::step(VkBuffer boxes, std::uint32_t n) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset", {}, {}};
    if (n != im.n)
        return Error{
            ErrorCode::invalid_argument,
            "step got " + std::to_string(n) + " boxes, the scene has " + std::to_string(im.n),
            {},
            {}};
    im.times.upload = 0;
    return im.frame(boxes, false, *this);
}

void MovingScene::record_refit(VkCommandBuffer cmd, const LbvhBuildBuffers& buffers, VkBuffer flags,
                               std::uint32_t n) const {
    if (n == 0) return;
    PushConstants pc{};
    pc.count = n;
    BufferRange nodes{buffers.nodes, 0, nodes_bytes(n)};
    impl_->refit.dispatch(cmd, {{buffers.boxes, 0, n * sizeof(GpuBox)}, nodes}, pc, groups(n));
    if (n < 2) return;
    BufferRange flag_range{flags, 0, (n - 1) * 4ull};
    fill(cmd, flag_range, 0u);
    compute_barrier(cmd);
    impl_->node_bounds.dispatch(cmd, {nodes, flag_range}, pc, groups(n));
}

const FrameTimes& MovingScene::last_times() const {
    return impl_->times;
}

std::uint32_t MovingScene::size() const {
    return impl_->n;
}

double MovingScene::build_cost() const {
    return impl_->base_cost;
}

Result<std::vector<LbvhNode>> MovingScene::nodes() {
    Impl& im = *impl_;
    if (im.n == 0) return std::vector<LbvhNode>{};
    std::vector<LbvhNode> out(2ull * im.n - 1);
    if (Status s = im.context->download(im.nodes, out.data(), out.size() * sizeof(LbvhNode)); !s)
        return s.error();
    return out;
}

}  // namespace broadphase::gpu
