// adapters::GpuPairs (gpu_pairs.hpp): gpu_lbvh's side of the engine adapters.
#include "gpu_pairs.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

#if BROADPHASE_HAS_GPU
#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#endif

namespace broadphase::adapters {

namespace {
constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;

[[maybe_unused]] std::uint64_t key_of(std::uint32_t a, std::uint32_t b) {
    if (a > b) std::swap(a, b);
    return (std::uint64_t(a) << 32) | b;
}
}  // namespace

struct GpuPairs::Impl {
#if BROADPHASE_HAS_GPU
    std::unique_ptr<gpu::Context> own_context;  // declared before the scene: destroyed after it
    gpu::Context* context = nullptr;
    std::unique_ptr<gpu::ProxyScene> scene;  // made by the first step
#endif
    GpuPairsOptions options;
    std::vector<Pair> kept;                     // keep_pairs: the last step's pairs, as handles
    std::vector<std::uint32_t> handle_of;       // slot -> handle or kNoSlot
    std::vector<Filter> applied;                // slot -> the filter the scene has
    std::vector<std::uint32_t> slot_of_handle;  // handle -> slot, kNoSlot once dropped
    std::vector<std::uint8_t> touched_flag;
    std::vector<std::uint32_t> touched;
    std::vector<std::uint32_t> retired;  // handles removed by step(), unmapped after it
    // Without keep_pairs: the scene's pairs, as handle pairs, kept from the events.
    std::unordered_set<std::uint64_t> current;
    std::uint64_t steps = 0;

    void grow(std::uint32_t s) {
        if (s < handle_of.size()) return;
        const std::size_t n = std::max<std::size_t>(s + 1, handle_of.size() * 3 / 2);
        handle_of.resize(n, kNoSlot);
        applied.resize(n);
        touched_flag.resize(n, 0);
    }

    /// The slot of a handle's body, kNoSlot when it was dropped.
    std::uint32_t slot(std::uint32_t handle) const {
        return handle < slot_of_handle.size() ? slot_of_handle[handle] : kNoSlot;
    }

    /// Slot s's body out of the scene. `unmap`: its handle forgets the slot at once (a
    /// dropped body, whose ending pairs nobody is told of), else after the next step's events
    /// (a body whose box became invalid: its pairs end for the caller too).
    Status remove(std::uint32_t s, bool unmap) {
#if BROADPHASE_HAS_GPU
        const std::uint32_t handle = handle_of[s];
        if (scene)  // (a handle exists only once the scene does)
            if (Status st = scene->remove(handle); !st) return st;
        if (unmap) {
            slot_of_handle[handle] = kNoSlot;
        } else {
            retired.push_back(handle);
        }
#else
        (void)unmap;
#endif
        handle_of[s] = kNoSlot;
        return Status::success();
    }
};

GpuPairs::GpuPairs(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuPairs::~GpuPairs() = default;

bool GpuPairs::available() {
#if BROADPHASE_HAS_GPU
    return true;
#else
    return false;
#endif
}

Result<std::unique_ptr<GpuPairs>> GpuPairs::create(gpu::Context* context,
                                                   const GpuPairsOptions& options) {
#if BROADPHASE_HAS_GPU
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->context = context;
    if (!impl->context) {
        auto made = gpu::Context::create();
        if (!made) return made.error();
        impl->own_context = std::move(made.value());
        impl->context = impl->own_context.get();
    }
    return std::unique_ptr<GpuPairs>(new GpuPairs(std::move(impl)));
#else
    (void)context;
    (void)options;
    return Error{ErrorCode::unsupported, "gpu_lbvh: built without the GPU part of broadphase"};
#endif
}

void GpuPairs::touch(std::uint32_t s) {
    Impl& m = *impl_;
    m.grow(s);
    if (m.touched_flag[s]) return;
    m.touched_flag[s] = 1;
    m.touched.push_back(s);
}

Status GpuPairs::drop(std::uint32_t s) {
    Impl& m = *impl_;
    m.grow(s);
    touch(s);  // a proxy created in the slot before the next step is added then
    if (m.handle_of[s] == kNoSlot) return Status::success();
    return m.remove(s, true);
}

bool GpuPairs::pending() const {
    return !impl_->touched.empty();
}

Status GpuPairs::step(const std::function<GpuSlot(std::uint32_t)>& slot_of,
                      std::vector<Pair>* began, std::vector<Pair>* ended) {
#if BROADPHASE_HAS_GPU
    Impl& m = *impl_;
    if (!m.scene) {  // sized for the bodies of the first step, a quarter more for those to come
        gpu::ProxySceneOptions options;
        const auto capacity = static_cast<std::uint32_t>(
            std::max<std::size_t>(1024, m.touched.size() + m.touched.size() / 4));
        options.initial_dynamic_capacity = options.initial_handle_capacity = capacity;
        options.frames.return_pairs = m.options.keep_pairs;
        auto scene = gpu::ProxyScene::create(*m.context, options);
        if (!scene) return scene.error();
        m.scene = std::move(scene.value());
    }
    for (const std::uint32_t s : m.touched) {
        m.touched_flag[s] = 0;
        const GpuSlot want = slot_of(s);
        const std::uint32_t handle = m.handle_of[s];
        if (want.live && handle != kNoSlot) {
            if (Status st = m.scene->move(handle, want.box); !st) return st;
            if (!(m.applied[s] == want.filter)) {
                if (Status st = m.scene->set_filter(handle, want.filter); !st) return st;
                m.applied[s] = want.filter;
            }
        } else if (want.live) {
            auto added = m.scene->add(want.box, want.filter);
            if (!added) return added.error();
            m.handle_of[s] = added.value();
            m.applied[s] = want.filter;
            if (m.slot_of_handle.size() <= added.value())
                m.slot_of_handle.resize(std::size_t(added.value()) + 1, kNoSlot);
            m.slot_of_handle[added.value()] = s;
        } else if (handle != kNoSlot) {
            if (Status st = m.remove(s, false); !st) return st;
        }
    }
    m.touched.clear();
    auto frame = m.scene->step();
    if (!frame) return frame.error();
    ++m.steps;
    if (m.options.keep_pairs) {
        m.kept = std::move(frame->pairs);
    } else {
        for (const Pair& p : frame->ended) m.current.erase(key_of(p.i, p.j));
        for (const Pair& p : frame->began) m.current.insert(key_of(p.i, p.j));
    }
    // The events as slots; a dropped body's are left out: the engine removed them itself.
    const auto as_slots = [&m](const std::vector<Pair>& events, std::vector<Pair>* out) {
        if (!out) return;
        for (const Pair& p : events) {
            const std::uint32_t a = m.slot(p.i), b = m.slot(p.j);
            if (a != kNoSlot && b != kNoSlot) out->push_back(a < b ? Pair{a, b} : Pair{b, a});
        }
    };
    as_slots(frame->ended, ended);
    as_slots(frame->began, began);
    for (const std::uint32_t handle : m.retired) m.slot_of_handle[handle] = kNoSlot;
    m.retired.clear();
    return Status::success();
#else
    (void)slot_of;
    (void)began;
    (void)ended;
    return Error{ErrorCode::unsupported, "gpu_lbvh: built without the GPU part of broadphase"};
#endif
}

void GpuPairs::pairs(std::vector<Pair>& out) const {
    const Impl& m = *impl_;
    out.clear();
    if (m.options.keep_pairs) {
        out.reserve(m.kept.size());
        for (const Pair& p : m.kept) {
            const std::uint32_t a = m.slot(p.i), b = m.slot(p.j);
            if (a == kNoSlot || b == kNoSlot) continue;
            out.push_back(a < b ? Pair{a, b} : Pair{b, a});
        }
        return;
    }
    out.reserve(m.current.size());
    for (const std::uint64_t key : m.current) {
        const std::uint32_t a = m.slot(std::uint32_t(key >> 32));
        const std::uint32_t b = m.slot(std::uint32_t(key));
        if (a == kNoSlot || b == kNoSlot) continue;
        out.push_back(a < b ? Pair{a, b} : Pair{b, a});
    }
    std::sort(out.begin(), out.end());
}

std::uint64_t GpuPairs::pair_count() const {
    return impl_->options.keep_pairs ? impl_->kept.size() : impl_->current.size();
}

Status GpuPairs::validate() const {
    const Impl& m = *impl_;
    for (std::uint32_t s = 0; s < m.handle_of.size(); ++s) {
        const std::uint32_t handle = m.handle_of[s];
        if (handle != kNoSlot && m.slot(handle) != s)
            return Error{
                ErrorCode::invariant_violated,
                "gpu_lbvh: the handle of slot " + std::to_string(s) + " names another slot", s};
    }
    return Status::success();
}

std::uint64_t GpuPairs::steps() const {
    return impl_->steps;
}

Status GpuPairs::clear() {
    Impl& m = *impl_;
    for (std::uint32_t s = 0; s < m.handle_of.size(); ++s) {
        if (m.handle_of[s] == kNoSlot) continue;
        if (Status st = m.remove(s, true); !st) return st;
    }
    for (const std::uint32_t s : m.touched) m.touched_flag[s] = 0;
    m.touched.clear();
    return Status::success();
}

}  // namespace broadphase::adapters
