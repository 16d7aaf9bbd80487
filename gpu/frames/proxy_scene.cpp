// gpu::ProxyScene (include/broadphase/gpu/proxy_scene.hpp): bodies in slots with empty boxes for
// the free ones, a MovingScene frame over the dynamic slots (gpu/frames/frame_recorder.cpp)
// whose pairs pass filters by ProxySlot and writes handles, passes of the fresh and static trees
// appended to it, and the frame's batch scattered on the GPU (shaders/frames/proxy_update.comp).
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>

#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#include "broadphase/scene.hpp"
#include "device/impl_access.hpp"
#include "frames/moving_scene_impl.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

namespace {

constexpr std::uint32_t kDefaultCapacity = 1024;
// Kinds of slots: the dynamic tree's, the static tree's, and the fresh tree's (dynamic bodies
// added since the last migration).
constexpr int kDynamic = 0, kStatic = 1, kFresh = 2, kKinds = 3;
// Timestamps of the batch: before the scatter [0], after the static tree [1].
constexpr std::uint32_t kBatchQueries = 2;
// One batch record: slot, box lo, box hi, ProxySlot (four uvec4; proxy_update.comp).
constexpr VkDeviceSize kRecordBytes = 64;

GpuBox empty_box() {
    const float inf = std::numeric_limits<float>::infinity();
    return {{inf, inf, inf, 0}, {-inf, -inf, -inf, 0}};
}

GpuBox gpu_box(const Box& b) {
    return {{b.min.x, b.min.y, b.min.z, 0}, {b.max.x, b.max.y, b.max.z, 0}};
}

ProxySlot proxy_slot(const Filter& f, ProxyHandle handle) {
    return {f.category, f.mask, std::bit_cast<std::uint32_t>(f.group), handle};
}

// The smallest power of two >= max(want, floor), at least 2.
std::uint32_t grown_capacity(std::uint32_t now, std::uint32_t want) {
    std::uint64_t c = std::max<std::uint32_t>(now, 2);
    while (c < want) c *= 2;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(c, 1u << 31));
}

// The slots of one kind of body: host mirrors of the GPU's boxes and ProxySlots (what the
// last step left there, with this frame's batch applied), the free slots, and the batch: the
// slots written since the last step, once each, with what they held before.
struct Slots {
    std::vector<GpuBox> boxes;
    std::vector<ProxySlot> proxies;
    std::vector<std::uint32_t> free;  // last in, first out
    std::uint32_t live = 0, live_before = 0;
    std::uint32_t high = 0;  // every slot at or above is free (a tree may be built below it)
    std::vector<std::uint32_t> dirty;
    std::vector<GpuBox> boxes_before;
    std::vector<ProxySlot> proxies_before;
    std::vector<bool> is_dirty;

    std::uint32_t extent() const { return static_cast<std::uint32_t>(boxes.size()); }

    std::uint32_t acquire() {
        ++live;
        std::uint32_t s = extent();
        if (!free.empty()) {
            s = free.back();
            free.pop_back();
        } else {
            boxes.push_back(empty_box());
            proxies.push_back({});
            is_dirty.push_back(false);
        }
        high = std::max(high, s + 1);
        return s;
    }
    // With every slot free: the next acquires take the lowest slots first, so that `high`
    // stays at the live count until slots are released again.
    void restart_from_bottom() {
        std::sort(free.begin(), free.end(), std::greater<>());
        high = 0;
    }
    void release(std::uint32_t s) {
        --live;
        free.push_back(s);
        write(s, empty_box(), {});
    }
    void write(std::uint32_t s, const GpuBox& box, const ProxySlot& proxy) {
        if (!is_dirty[s]) {
            is_dirty[s] = true;
            dirty.push_back(s);
            // A slot first used in this frame held an empty box before it.
            boxes_before.push_back(boxes[s]);
            proxies_before.push_back(proxies[s]);
        }
        boxes[s] = box;
        proxies[s] = proxy;
    }
    // The state of the last step: the mirrors with the batch undone.
    void previous(std::vector<GpuBox>& b, std::vector<ProxySlot>& p) const {
        b = boxes;
        p = proxies;
        for (std::size_t k = 0; k < dirty.size(); ++k) {
            b[dirty[k]] = boxes_before[k];
            p[dirty[k]] = proxies_before[k];
        }
    }
    void commit() {
        for (std::uint32_t s : dirty) is_dirty[s] = false;
        dirty.clear();
        boxes_before.clear();
        proxies_before.clear();
        live_before = live;
    }
};

struct Body {
    int kind = kDynamic;  // kDynamic, kStatic or kFresh
    std::uint32_t slot = 0;
};

bool empty(const GpuBox& b) {
    return b.lo.x > b.hi.x;
}

Error bad_handle(const char* call, ProxyHandle handle) {
    return Error{ErrorCode::invalid_argument, std::string("ProxyScene::") + call + ": handle " +
                                                  std::to_string(handle) + " is not a live body"};
}

Status check_box(const Box& box, const std::string& what) {
    Status s = validate_box(box, 0);
    if (s) return s;
    std::string message = s.error().message;
    const std::string prefix = "box 0: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    return Error{ErrorCode::invalid_box, what + ": " + message};
}

}  // namespace

struct ProxyScene::Impl {
    Context* context = nullptr;
    ProxySceneOptions options;
    std::unique_ptr<MovingSceneImpl> frames;  // the dynamic tree and the frames
    HandlePool handles;
    std::vector<Body> bodies;  // by handle
    Slots kinds[kKinds];
    std::uint32_t capacity[kKinds] = {0, 0, 0};
    std::uint32_t handle_capacity = 0;
    bool started = false;
    // Slots and trees of the static and fresh kinds: boxes, ProxySlots, nodes, build scratch
    // (the dynamic kind's boxes and nodes are the frames'; its ProxySlots are dynamic_slots).
    Buffer dynamic_slots;
    Buffer boxes[kKinds], slots[kKinds], nodes[kKinds], scratch[kKinds];
    Buffer updates, staging;
    Kernel update;
    Timestamps stamps;
    FrameTimes times;
    ProxyStepInfo info;

    Status ensure_staging(VkDeviceSize bytes) {
        return frames->ensure_host(staging, bytes, MemoryKind::upload);
    }

    const Buffer& box_buffer(int k) const { return k == kDynamic ? frames->boxes : boxes[k]; }
    const Buffer& slot_buffer(int k) const { return k == kDynamic ? dynamic_slots : slots[k]; }
    // The leaves of the static and fresh trees as last recorded: their slots below this (the
    // others are free), at least 2, at most the capacity.
    std::uint32_t leaves[kKinds] = {0, 0, 0};
    LbvhTree tree(int k) const {
        return {whole(k == kDynamic ? frames->nodes : nodes[k]),
                k == kDynamic ? capacity[k] : leaves[k]};
    }
    // The leaves a build of kind k needs now: the slots below its high mark.
    std::uint32_t leaves_needed(int k) const {
        return std::min(capacity[k], std::max(kinds[k].high, 2u));
    }

    // Records the build of the static or fresh tree over its first leaves[k] slots.
    Status record_tree(VkCommandBuffer cmd, int k) const {
        Status s = frames->lbvh->record_build(
            cmd, {whole(boxes[k]), whole(nodes[k]), whole(scratch[k])}, leaves[k]);
        compute_barrier(cmd);
        return s;
    }

    // The frame's pair passes for a state with these live counts: the dynamic tree's own
    // pairs, then dynamic x static, fresh x fresh, fresh x dynamic, fresh x static, each only
    // when both sides have bodies, all appended to one list.
    void set_pairs(std::uint32_t static_live, std::uint32_t fresh_live) {
        frames->proxy_slots = whole(dynamic_slots);
        frames->extra_passes.clear();
        auto pass = [&](int query, bool cross, int other) {
            ProxyPairs p;
            p.slots = whole(slot_buffer(query));
            p.append = true;
            p.cross = cross;
            if (cross) {
                p.other = tree(other);
                p.other_slots = whole(slot_buffer(other));
            }
            frames->extra_passes.emplace_back(tree(query), p);
        };
        if (static_live > 0) pass(kDynamic, true, kStatic);
        if (fresh_live > 0) {
            pass(kFresh, false, kFresh);
            pass(kFresh, true, kDynamic);
            if (static_live > 0) pass(kFresh, true, kStatic);
        }
        frames->key_bound = handle_capacity;
    }

    // Moves every fresh body into free dynamic slots once the fresh tree holds more than an
    // eighth of the dynamic slots (at least 256), so that the dynamic tree is rebuilt with
    // them (ProxyStepInfo::migrated). Host work only: the moves are part of the batch.
    bool migrate() {
        Slots& fresh = kinds[kFresh];
        const std::uint32_t most = std::max<std::uint32_t>(256, capacity[kDynamic] / 8);
        if (fresh.live <= most) return false;
        for (std::uint32_t s = 0; s < fresh.extent(); ++s) {
            if (empty(fresh.boxes[s])) continue;
            const ProxySlot proxy = fresh.proxies[s];
            const GpuBox box = fresh.boxes[s];
            const std::uint32_t to = kinds[kDynamic].acquire();
            kinds[kDynamic].write(to, box, proxy);
            fresh.release(s);
            bodies[proxy.handle] = {kDynamic, to};
        }
        fresh.restart_from_bottom();
        return true;
    }

    bool needs_growth() const {
        for (int k = 0; k < kKinds; ++k)
            if (kinds[k].extent() > capacity[k]) return true;
        return !started || handles.extent() > handle_capacity;
    }

    Status grow();

    // A frame's batch, staged: records per kind, and which trees the frame builds.
    struct Batch {
        std::uint32_t counts[kKinds] = {0, 0, 0}, first_record[kKinds] = {0, 0, 0};
        VkDeviceSize bytes = 0;
        bool rebuild_static = false, build_fresh = false;
        double upload_ms = 0;
    };
    Batch last_batch;       // the last frame's batch, for its report
    bool migrated = false;  // the fresh bodies moved since the last recorded frame
    bool pending = false;   // record_step recorded a frame that read_step has not read
    Batch pending_batch;
    Status built;  // the batch's tree builds, as recorded

    Error pending_error(const char* call) const {
        return Error{ErrorCode::invalid_argument,
                     std::string("ProxyScene::") + call +
                         ": a frame recorded by record_step is pending: call read_step() after "
                         "its submit has completed"};
    }
    Result<Batch> prepare(bool may_grow);
    void record_batch(VkCommandBuffer cmd, const Batch& batch);
    ProxyFrame finish(const Batch& batch, FrameResult& r);
    Result<ProxyFrame> run_frame();
};

// Sizes every buffer for the capacities the batch needs, then runs the previous step's state
// as a first frame at those sizes (the trees built, its pairs the baseline of the next diff).
Status ProxyScene::Impl::grow() {
    const std::uint32_t first[kKinds] = {
        options.initial_dynamic_capacity > 0 ? options.initial_dynamic_capacity : kDefaultCapacity,
        options.initial_static_capacity > 0 ? options.initial_static_capacity : kDefaultCapacity,
        0};
    std::uint32_t cap[kKinds];
    for (int k : {kDynamic, kStatic})
        cap[k] = grown_capacity(started ? capacity[k] : first[k], kinds[k].extent());
    // The fresh tree holds at most an eighth of the dynamic slots between migrations, and
    // what one frame adds.
    cap[kFresh] = grown_capacity(
        std::max<std::uint32_t>(started ? capacity[kFresh] : 0, std::max(cap[kDynamic] / 8, 256u)),
        kinds[kFresh].extent());
    const std::uint32_t first_handles =
        options.initial_handle_capacity > 0 ? options.initial_handle_capacity : kDefaultCapacity;
    handle_capacity =
        grown_capacity(started ? handle_capacity : first_handles, std::max(handles.extent(), 2u));
    if (Status s = frames->check_limits(std::max({cap[0], cap[1], cap[2]})); !s) return s;
    frames->cur = 0;
    frames->capacity = 0;
    if (Status s = frames->allocate(cap[kDynamic]); !s) return s;
    frames->base_cost = 0;
    for (int k = 0; k < kKinds; ++k) capacity[k] = cap[k];
    if (Status s = frames->ensure(dynamic_slots, cap[kDynamic] * VkDeviceSize(sizeof(ProxySlot)));
        !s)
        return s;
    for (int k : {kStatic, kFresh}) {
        const LbvhRequirements req = frames->lbvh->requirements(cap[k]);
        if (Status s = frames->ensure(boxes[k], cap[k] * VkDeviceSize(sizeof(GpuBox))); !s)
            return s;
        if (Status s = frames->ensure(slots[k], cap[k] * VkDeviceSize(sizeof(ProxySlot))); !s)
            return s;
        if (Status s = frames->ensure_unbound(nodes[k], req.nodes); !s) return s;
        if (Status s = frames->ensure_unbound(scratch[k], req.scratch); !s) return s;
    }

    // The previous step's state, whole: each kind's boxes and ProxySlots, padded with free
    // slots to its capacity, copied into its buffers.
    std::vector<GpuBox> b[kKinds];
    std::vector<ProxySlot> p[kKinds];
    VkDeviceSize bytes = 0;
    for (int k = 0; k < kKinds; ++k) {
        kinds[k].previous(b[k], p[k]);
        b[k].resize(capacity[k], empty_box());
        p[k].resize(capacity[k], ProxySlot{});
        bytes += capacity[k] * VkDeviceSize(sizeof(GpuBox) + sizeof(ProxySlot));
    }
    if (Status s = ensure_staging(bytes); !s) return s;
    char* out = static_cast<char*>(staging.mapped());
    std::vector<VkBufferCopy> copies[2 * kKinds];
    const Buffer* targets[2 * kKinds];
    VkDeviceSize at = 0;
    for (int k = 0; k < kKinds; ++k) {
        const VkDeviceSize box_bytes = capacity[k] * VkDeviceSize(sizeof(GpuBox));
        const VkDeviceSize slot_bytes = capacity[k] * VkDeviceSize(sizeof(ProxySlot));
        std::memcpy(out + at, b[k].data(), box_bytes);
        copies[2 * k] = {{at, 0, box_bytes}};
        targets[2 * k] = &box_buffer(k);
        at += box_bytes;
        std::memcpy(out + at, p[k].data(), slot_bytes);
        copies[2 * k + 1] = {{at, 0, slot_bytes}};
        targets[2 * k + 1] = &slot_buffer(k);
        at += slot_bytes;
    }
    leaves[kStatic] = capacity[kStatic];  // the previous state's slots, wherever they are
    leaves[kFresh] = capacity[kFresh];
    set_pairs(kinds[kStatic].live_before, kinds[kFresh].live_before);
    Status trees;
    frames->prologue = [&](VkCommandBuffer cmd) {
        for (int c = 0; c < 2 * kKinds; ++c)
            vkCmdCopyBuffer(cmd, staging.handle(), targets[c]->handle(), 1, copies[c].data());
        compute_barrier(cmd);
        for (int k : {kStatic, kFresh})
            if (trees) trees = record_tree(cmd, k);
    };
    auto r = frames->frame(whole(frames->boxes), true, false);
    frames->prologue = nullptr;
    if (!trees) return trees;
    if (!r) return r.error();
    started = true;
    info.grown = true;
    return {};
}

// Migrates, grows (when `may_grow`; otherwise a frame that needs more capacity is an error),
// and writes the batch into the staging buffer; the trees' leaf counts and the pair passes are
// set for the frame.
Result<ProxyScene::Impl::Batch> ProxyScene::Impl::prepare(bool may_grow) {
    info = {};
    // A refused frame keeps its batch (and any migration) for the next step.
    migrated = migrate() || migrated;
    if (needs_growth()) {
        if (!may_grow)
            return Error{ErrorCode::limit_exceeded,
                         "ProxyScene::record_step: the frame needs more slots or handles than the "
                         "scene holds (" +
                             std::to_string(capacity[kDynamic]) + " dynamic, " +
                             std::to_string(capacity[kStatic]) + " static, " +
                             std::to_string(capacity[kFresh]) + " fresh, " +
                             std::to_string(handle_capacity) +
                             " handles); growing takes a submit of its own: call step() for this "
                             "frame, or create the scene with larger initial capacities"};
        if (Status s = grow(); !s) return s.error();
    }
    if (Status s = update.ready(); !s) return s.error();
    const std::uint32_t most_leaves =
        std::max({capacity[kDynamic], capacity[kStatic], capacity[kFresh]});
    if (Status s = ready_lbvh_kernels(*frames->lbvh, most_leaves); !s) return s.error();
    const auto start = std::chrono::steady_clock::now();
    // The batch: each kind's records in turn.
    Batch batch;
    std::uint32_t records = 0;
    for (int k = 0; k < kKinds; ++k) {
        batch.first_record[k] = records;
        batch.counts[k] = static_cast<std::uint32_t>(kinds[k].dirty.size());
        records += batch.counts[k];
    }
    batch.bytes = records * kRecordBytes;
    if (Status s = ensure_staging(batch.bytes); !s) return s.error();
    if (Status s = frames->ensure(updates, batch.bytes, "the update buffer of the batch"); !s)
        return s.error();
    auto* record = static_cast<std::uint32_t*>(staging.mapped());
    for (int k = 0; k < kKinds; ++k) {
        for (std::uint32_t s : kinds[k].dirty) {
            record[0] = s;
            record[1] = record[2] = record[3] = 0;
            std::memcpy(record + 4, &kinds[k].boxes[s], sizeof(GpuBox));
            std::memcpy(record + 12, &kinds[k].proxies[s], sizeof(ProxySlot));
            record += 16;
        }
    }
    batch.upload_ms = ms_since(start);
    batch.rebuild_static = batch.counts[kStatic] > 0;
    batch.build_fresh = kinds[kFresh].live > 0;
    if (batch.rebuild_static) leaves[kStatic] = leaves_needed(kStatic);
    if (batch.build_fresh) leaves[kFresh] = leaves_needed(kFresh);
    set_pairs(kinds[kStatic].live, kinds[kFresh].live);
    frames->force_rebuild = migrated;
    info.migrated = migrated;
    return batch;
}

// Records the batch: its copy from the staging buffer, the scatter into the slots, and the
// static and fresh trees' builds (their status in `built`).
void ProxyScene::Impl::record_batch(VkCommandBuffer cmd, const Batch& batch) {
    stamps.reset(cmd, 0, kBatchQueries);
    compute_barrier(cmd);
    stamps.write(cmd, 0);
    if (batch.bytes > 0) {
        const VkBufferCopy copy{0, 0, batch.bytes};
        vkCmdCopyBuffer(cmd, staging.handle(), updates.handle(), 1, &copy);
        compute_barrier(cmd);
    }
    for (int k = 0; k < kKinds; ++k) {
        if (batch.counts[k] == 0) continue;
        PushConstants pc{};
        pc.count = batch.counts[k];
        pc.offset = batch.first_record[k];
        update.dispatch(
            cmd,
            {first_bytes(whole(updates), batch.bytes), whole(box_buffer(k)), whole(slot_buffer(k))},
            pc, workgroups(batch.counts[k]));
    }
    compute_barrier(cmd);
    built = {};
    if (batch.rebuild_static) built = record_tree(cmd, kStatic);
    if (batch.build_fresh && built) built = record_tree(cmd, kFresh);
    stamps.write(cmd, 1);
}

// After the frame's submit: the step's info and times, the batch committed, released handles
// freed, and the frame in handles.
ProxyFrame ProxyScene::Impl::finish(const Batch& batch, FrameResult& r) {
    last_batch = batch;
    times = frames->times;
    times.upload = batch.upload_ms;
    times.proxies = stamps.ms(0, 1);
    info.path = r.path;
    info.ratio = r.ratio;
    info.work_ratio = r.work_ratio;
    info.regrown = r.regrown;
    info.dynamic_updates = batch.counts[kDynamic] + batch.counts[kFresh];
    info.static_updates = batch.counts[kStatic];
    info.static_rebuilt = batch.rebuild_static;
    info.fresh = kinds[kFresh].live;
    info.fresh_leaves = batch.build_fresh ? leaves[kFresh] : 0;
    handles.end_frame();
    ProxyFrame frame;
    frame.pair_count = r.pair_count;
    frame.pairs = std::move(r.pairs);
    frame.began = std::move(r.began);
    frame.ended = std::move(r.ended);
    return frame;
}

Result<ProxyFrame> ProxyScene::Impl::run_frame() {
    auto batch = prepare(true);
    if (!batch) return batch.error();
    frames->prologue = [&](VkCommandBuffer cmd) { record_batch(cmd, batch.value()); };
    auto r = frames->frame(whole(frames->boxes), false, false);
    frames->prologue = nullptr;
    frames->force_rebuild = false;
    if (!built) return built.error();
    if (!r) return r.error();
    migrated = false;
    for (Slots& k : kinds) k.commit();
    return finish(batch.value(), r.value());
}

ProxyScene::ProxyScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProxyScene::~ProxyScene() = default;

Result<std::unique_ptr<ProxyScene>> ProxyScene::create(Context& context,
                                                       const ProxySceneOptions& options) {
    if (!(options.frames.rebuild_ratio > 0))
        return Error{ErrorCode::invalid_argument, "rebuild_ratio must be positive"};
    if (!(options.frames.rebuild_work_ratio >= 0))
        return Error{ErrorCode::invalid_argument, "rebuild_work_ratio must be 0 (off) or positive"};
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    auto frames = make_frames(context, options.frames, true);
    if (!frames) return frames.error();
    impl->frames = std::move(frames.value());
    impl->update = Kernel(context, shaders::proxy_update, 3, "proxy_update");
    auto stamps = Timestamps::create(context, kBatchQueries);
    if (!stamps) return stamps.error();
    impl->stamps = std::move(stamps.value());
    return std::unique_ptr<ProxyScene>(new ProxyScene(std::move(impl)));
}

Result<ProxyHandle> ProxyScene::add(const Box& box, const Filter& filter, BodyKind kind) {
    Impl& im = *impl_;
    if (im.pending) return im.pending_error("add");
    if (Status s = check_box(box, "ProxyScene::add"); !s) return s.error();
    const ProxyHandle handle = im.handles.acquire();
    // New dynamic bodies go to the fresh tree until the next migration.
    const int k = kind == BodyKind::static_body ? kStatic : kFresh;
    Slots& slots = im.kinds[k];
    const std::uint32_t slot = slots.acquire();
    if (handle >= im.bodies.size()) im.bodies.resize(std::size_t{handle} + 1);
    im.bodies[handle] = {k, slot};
    slots.write(slot, gpu_box(box), proxy_slot(filter, handle));
    return handle;
}

Status ProxyScene::remove(ProxyHandle handle) {
    Impl& im = *impl_;
    if (im.pending) return im.pending_error("remove");
    if (!im.handles.live(handle)) return bad_handle("remove", handle);
    const Body body = im.bodies[handle];
    im.kinds[body.kind].release(body.slot);
    im.handles.release(handle);
    return {};
}

Status ProxyScene::move(ProxyHandle handle, const Box& box) {
    Impl& im = *impl_;
    if (im.pending) return im.pending_error("move");
    if (!im.handles.live(handle)) return bad_handle("move", handle);
    if (Status s = check_box(box, "ProxyScene::move of handle " + std::to_string(handle)); !s)
        return s;
    const Body body = im.bodies[handle];
    Slots& slots = im.kinds[body.kind];
    slots.write(body.slot, gpu_box(box), slots.proxies[body.slot]);
    return {};
}

Status ProxyScene::set_filter(ProxyHandle handle, const Filter& filter) {
    Impl& im = *impl_;
    if (im.pending) return im.pending_error("set_filter");
    if (!im.handles.live(handle)) return bad_handle("set_filter", handle);
    const Body body = im.bodies[handle];
    Slots& slots = im.kinds[body.kind];
    slots.write(body.slot, slots.boxes[body.slot], proxy_slot(filter, handle));
    return {};
}

Result<ProxyFrame> ProxyScene::step() {
    if (impl_->pending) return impl_->pending_error("step");
    return impl_->run_frame();
}

Status ProxyScene::record_step(VkCommandBuffer cmd) {
    Impl& im = *impl_;
    if (im.pending) return im.pending_error("record_step");
    if (!im.started)
        return Error{ErrorCode::invalid_argument,
                     "ProxyScene::record_step: the first frame sizes the scene's buffers and "
                     "takes a submit of its own: call step() for it"};
    auto batch = im.prepare(false);
    if (!batch) return batch.error();
    im.frames->prologue_marks[0] = impl_of(*im.frames->context).dispatches_recorded;
    im.record_batch(cmd, batch.value());
    im.frames->prologue_marks[1] = impl_of(*im.frames->context).dispatches_recorded;
    if (!im.built) return im.built;
    Status recorded = im.frames->record_frame(cmd, whole(im.frames->boxes), false, false);
    im.frames->force_rebuild = false;
    if (!recorded) return recorded;
    im.migrated = false;
    for (Slots& k : im.kinds) k.commit();
    im.pending = true;
    im.pending_batch = batch.value();
    return {};
}

Result<ProxyFrame> ProxyScene::read_step() {
    Impl& im = *impl_;
    if (!im.pending)
        return Error{ErrorCode::invalid_argument,
                     "ProxyScene::read_step: no frame recorded by record_step is pending"};
    im.pending = false;
    auto r = im.frames->read_step(false);
    if (!r) return r.error();
    return im.finish(im.pending_batch, r.value());
}

const FrameTimes& ProxyScene::last_times() const {
    return impl_->times;
}

// The batch's traffic: proxy_update reads each 64-byte record and writes the slot's box and
// ProxySlot (32 + 16 B); each tree the frame builds adds the build's model (gpu/lbvh/lbvh.cpp,
// refined or not, one word read back per tree) and its scratch fills. The batch's copy from
// the staging buffer is a transfer, not counted.
Result<std::vector<StageReport>> last_report(ProxyScene& scene) {
    ProxySceneImpl& im = impl_of(scene);
    if (!im.started) return Error{ErrorCode::invalid_argument, "last_report before a step"};
    auto frames = im.frames->report();
    if (!frames) return frames.error();
    const ProxySceneImpl::Batch& batch = im.last_batch;
    StageReport r;
    r.name = "batch + trees";
    r.dispatches =
        static_cast<std::uint32_t>(im.frames->prologue_marks[1] - im.frames->prologue_marks[0]);
    std::uint64_t records = 0;
    for (std::uint32_t c : batch.counts) records += c;
    Traffic t{64 * records, 48 * records};
    for (int k : {kStatic, kFresh}) {
        if (!(k == kStatic ? batch.rebuild_static : batch.build_fresh)) continue;
        auto refined = read_build_refined(*im.frames->lbvh, im.scratch[k], im.leaves[k]);
        if (!refined) return refined.error();
        t += build_traffic(*im.frames->lbvh, im.leaves[k], refined.value(), nullptr);
        t += build_fill_traffic(*im.frames->lbvh, im.leaves[k]);
    }
    r.bytes_read = t.read;
    r.bytes_written = t.written;
    r.ms = im.times.proxies;
    std::vector<StageReport> out{r};
    out.insert(out.end(), frames->begin(), frames->end());
    return out;
}

const ProxyStepInfo& ProxyScene::last_info() const {
    return impl_->info;
}

std::uint32_t ProxyScene::size() const {
    return impl_->handles.count();
}

std::uint32_t ProxyScene::dynamic_capacity() const {
    return impl_->capacity[kDynamic];
}

std::uint32_t ProxyScene::static_capacity() const {
    return impl_->capacity[kStatic];
}

std::uint32_t ProxyScene::handle_capacity() const {
    return impl_->handle_capacity;
}

}  // namespace broadphase::gpu
