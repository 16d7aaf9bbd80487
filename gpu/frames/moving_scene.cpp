// Moving scenes on the GPU (include/broadphase/gpu/moving_scene.hpp): per-frame LBVH refit or
// rebuild, chosen on the GPU by the refitted tree's normalised SAH cost (Kopta et al., I3D 2012)
// and by the previous frame's traversal work, then all pairs, their radix sort and the difference
// of consecutive frames' sorted pairs both ways. MovingScene owns its Impl
// (gpu/frames/moving_scene_impl.hpp): a frame is recorded by gpu/frames/frame_recorder.cpp, which
// ProxyScene shares, and submitted and read back by the host helper gpu/frames/frame_helper.cpp.
// This file: the class's methods, the Impl's creation (make_frames) and the frame's instruments
// (its traffic model and last_report).
#include <algorithm>
#include <bit>
#include <cassert>
#include <chrono>
#include <cstring>

#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "frames/moving_scene_impl.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

// The memory traffic of each stage of a frame (gpu/instruments/traffic.hpp), from the kernels'
// access patterns. Static parts follow n; the dynamic parts use the frame's own counts, read back
// after the frame (FrameCounts: the pairs stored, the previous frame's, the nodes the
// traversal expanded, the began and ended sizes, whether it rebuilt and refined).
//   refit + cost + decision (refit frames only)
//     lbvh_refit   reads each leaf's box id and parent (4 + 4 B) and its box (32 B), writes its
//                  bounds (32 B); per internal node two arrivals at its counter (4 + 4 B
//                  each), and the second reads its link (16 B) and both children's bounds
//                  (64 B) and writes its bounds (32 B) and its children's bounds in its
//                  LbvhWideNode (48 B; the links stay). The counters end zero: no fill.
//     lbvh_sah     reads every internal node's bounds and the root's again (32 B each), writes
//                  one partial per tile and the root's area (4 B);
//     frame_policy reads the partials, the status (48 B) and the previous traversal's status
//                  (64 B), and the armed table (4 B per word) when it rebuilds; writes the
//                  status (48 B, counted whole) and the gate's table (4 B per word).
//   rebuild + cost (gated)  the build's model (gpu/lbvh/lbvh.cpp stage_traffic, refined or not)
//                  with its scratch fills, lbvh_sah and the commit (reads the partials, writes
//                  16 B of status), when the frame rebuilt; on a refit frame the rebuild's
//                  dispatches are emptied (no traffic), but its transfer fills still run.
//   all pairs      lbvh_pairs as in gpu/lbvh/lbvh.cpp (pairs_traffic: 48 B per leaf, 64 B per
//                  expanded node, 48 B per leaf of each resumed item's group, 8 B per stored
//                  pair) and its status fill (64 B). ProxyScene's appended passes (filters,
//                  handles, cross trees) count no visits and are not modelled, but the
//                  status's resumed items include theirs.
//   pair keys      the pairs pass writes the keys itself (kPairsKeys): what is left is the
//                  copy of the count into the status (4, 4 B), the update of its capacity word
//                  (4 B written), and count_args (reads the count, writes two dispatch slots:
//                  4, 24 B).
//   sort           RadixSort::traffic of the stored keys (2 words, 2 b key bits, keys only).
//   differences    each way (began: now \ previous, ended: previous \ now): the counter fill
//                  (4 B, recorded before the pairs pass so that its barrier covers it);
//                  pair_diff_append reads both counts, every key of A and (once) of B (8 B
//                  each; the binary search's re-reads are cached, not counted) and writes each
//                  kept key (8 B) and its counter (4 + 4 B per append); count_args (4, 24 B);
//                  RadixSort::traffic of the kept keys; pair_unpack reads the count and every
//                  kept key, writes every pair (8 B) and one status word.
std::array<Traffic, kFrameStages> frame_traffic(const FrameCounts& c, const Lbvh& lbvh,
                                                SortPath path, std::uint32_t* sort_passes) {
    std::array<Traffic, kFrameStages> t{};
    *sort_passes = 0;
    const std::uint64_t n = c.n;
    if (n == 0) return t;
    const std::uint64_t internal = n - 1;
    const std::uint64_t tiles = std::max<std::uint64_t>(div_up(internal, kWorkgroupSize), 1);
    const Traffic sah{32 * internal + 32, 4 * (tiles + 1)};
    const bool refit = !c.rebuild_always;
    if (refit) {
        t[0] = {40 * n, 32 * n};
        if (n > 1) {
            t[0] += {(8 + 16 + 64) * internal, (8 + 32 + 48) * internal};
            t[0] += sah;
            const std::uint64_t table = c.rebuilt && c.gated ? 4ull * c.gate_words : 0;
            t[0] += {4 * (tiles + 1) + 48 + 64 + table, 48 + 4ull * c.gate_words};
        }
    }
    if (c.rebuild_always || c.gated) {
        if (c.rebuild_always || c.rebuilt) {
            t[1] += build_traffic(lbvh, c.n, c.refined, nullptr);
            if (n > 1) {
                t[1] += sah;
                t[1] += {4 * (tiles + 1), 16};
            }
        }
        t[1] += build_fill_traffic(lbvh, c.n);
    }
    if (!c.pairs) return t;
    t[2] = pairs_traffic(n, c.visits, c.resumed, c.stored);
    t[2].written += 64;
    t[3] = {4 + 4, 4 + 4 + 24};
    t[4] = RadixSort::traffic(static_cast<std::uint32_t>(c.stored), 2, 2 * c.key_bits, true, path,
                              sort_passes);
    if (c.first) return t;
    auto diff = [&](std::uint64_t a, std::uint64_t b, std::uint64_t kept) {
        t[5] += {0, 4};
        t[5] += {8 + 8 * a + 8 * b + 4 * kept, 12 * kept};
        t[5] += {4, 24};
        t[5] += RadixSort::traffic(static_cast<std::uint32_t>(kept), 2, 2 * c.key_bits, true, path);
        t[5] += {4 + 8 * kept, 8 * kept + 4};
    };
    diff(c.stored, c.previous, c.began);
    diff(c.previous, c.stored, c.ended);
    return t;
}

}  // namespace

Result<std::vector<StageReport>> MovingScene::Impl::report() {
    static constexpr const char* kNames[kFrameStages] = {"refit + cost + decision",
                                                         "rebuild (gated)",
                                                         "all pairs",
                                                         "pair keys",
                                                         "sort",
                                                         "differences"};
    std::uint32_t passes = 0;
    const auto traffic = frame_traffic(counts, *lbvh, sort.path(), &passes);
    std::vector<StageReport> out;
    for (std::uint32_t k = 0; k < kFrameStages; ++k) {
        StageReport r;
        r.name = kNames[k];
        r.dispatches = static_cast<std::uint32_t>(marks[k + 1] - marks[k]);
        if (k >= kFrameStages - kRepairStages)
            r.dispatches += repair_dispatches[k - (kFrameStages - kRepairStages)];
        r.bytes_read = traffic[k].read;
        r.bytes_written = traffic[k].written;
        r.ms = stage_ms[k];
        r.passes = k == 4 ? passes : 0;
        out.push_back(r);
    }
    return out;
}

MovingScene::MovingScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MovingScene::~MovingScene() = default;

Result<std::unique_ptr<MovingScene>> MovingScene::create(Context& context,
                                                         const MovingSceneOptions& options) {
    if (!(options.rebuild_ratio > 0))
        return Error{ErrorCode::invalid_argument, "rebuild_ratio must be positive"};
    if (!(options.rebuild_work_ratio >= 0))
        return Error{ErrorCode::invalid_argument, "rebuild_work_ratio must be 0 (off) or positive"};
    auto impl = make_frames(context, options, false);
    if (!impl) return impl.error();
    return std::unique_ptr<MovingScene>(new MovingScene(std::move(impl.value())));
}

Result<std::unique_ptr<MovingSceneImpl>> make_frames(Context& context,
                                                     const MovingSceneOptions& options,
                                                     bool empty_slots) {
    using Impl = MovingSceneImpl;
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    LbvhOptions lbvh_options;
    lbvh_options.code = options.code;
    lbvh_options.empty_slots = empty_slots;
    auto lbvh = Lbvh::create(context, lbvh_options);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    // Nothing is compiled here: the kernels on the first frame (record_frame) or refit.
    impl->sort = RadixSort(context);
    impl->refit = Kernel(context, shaders::lbvh_refit, 4, "lbvh_refit");
    impl->refit_soa = Kernel(context, shaders::lbvh_refit_soa, 5, "lbvh_refit_soa",
                             {shaders::lbvh_refit_soa_split, 1u << 1, 0});
    impl->assemble = assemble_kernel(context);
    impl->sah =
        Kernel(context, shaders::lbvh_sah, 2, "lbvh_sah", {shaders::lbvh_sah_split, 1u << 0});
    impl->policy = Kernel(context, shaders::frame_policy, 5, "frame_policy");
    impl->diff_append = Kernel(context, shaders::pair_diff_append, 6, "pair_diff_append");
    impl->unpack = Kernel(context, shaders::pair_unpack, 3, "pair_unpack");
    auto timestamps = Timestamps::create(context, kFrameQueries);
    if (!timestamps) return timestamps.error();
    impl->timestamps = std::move(timestamps.value());
    return impl;
}

Status MovingScene::reset(std::span<const Box> input) {
    Impl& im = *impl_;
    im.ready = false;
    if (Status s = validate_boxes(input); !s) return s;
    if (input.size() >= (1ull << 31)) return limit("at most 2^31 - 1 boxes per moving scene");
    if (Status s = im.check_limits(static_cast<std::uint32_t>(input.size())); !s) return s;
    im.cur = 0;
    im.capacity = 0;
    if (Status s = im.allocate(static_cast<std::uint32_t>(input.size())); !s) return s;
    im.base_cost = 0;
    if (Status s = im.stage(input); !s) return s;
    auto r = im.frame(whole(im.boxes), true, true);
    if (!r) return r.error();
    im.ready = true;
    return {};
}

Result<FrameResult> MovingScene::step(std::span<const Box> new_boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset"};
    if (new_boxes.size() != im.n)
        return Error{ErrorCode::invalid_argument, "step got " + std::to_string(new_boxes.size()) +
                                                      " boxes, the scene has " +
                                                      std::to_string(im.n)};
    if (Status s = validate_boxes(new_boxes); !s) return s.error();
    if (Status s = im.stage(new_boxes); !s) return s.error();
    return im.frame(whole(im.boxes), false, true);
}

Result<FrameResult> MovingScene::step(const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset"};
    return im.frame(boxes, false, false);
}

Status MovingScene::record_step(VkCommandBuffer cmd, const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "record_step before reset"};
    return im.record_frame(cmd, boxes, false, false);
}

Result<FrameResult> MovingScene::read_step() {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "read_step before reset"};
    im.times = {};
    im.stage_ms.fill(0);
    return im.read_step(false);
}

LbvhTree MovingScene::tree() const {
    return {whole(impl_->nodes), impl_->n};
}

FrameBuffers MovingScene::buffers() const {
    const Impl& im = *impl_;
    return {im.status.handle(), im.keys[im.cur].handle(),
            im.began.handle(),  im.ended.handle(),
            im.capacity,        im.key_bits()};
}

Status MovingScene::record_refit(VkCommandBuffer cmd, const BufferRange& boxes,
                                 const LbvhTree& tree, const BufferRange& flags) const {
    return impl_->record_refit(cmd, boxes, tree, flags, true);
}

VkDeviceSize MovingScene::refit_flags_bytes(std::uint32_t n) const {
    return impl_->refit_layout(n).size;
}

const FrameTimes& MovingScene::last_times() const {
    return impl_->times;
}

Result<std::vector<StageReport>> last_report(MovingScene& scene) {
    if (!impl_of(scene).ready)
        return Error{ErrorCode::invalid_argument, "last_report before reset"};
    return impl_of(scene).report();
}

std::uint32_t MovingScene::size() const {
    return impl_->n;
}

double MovingScene::build_cost() const {
    return impl_->base_cost;
}

const Buffer& helper_nodes(const MovingScene& scene) {
    return impl_of(scene).nodes;
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
