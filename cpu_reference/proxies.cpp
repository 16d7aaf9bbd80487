// The CPU proxy world (broadphase/proxies.hpp): Box2D's proxies (b2DynamicTree's
// CreateProxy/DestroyProxy/MoveProxy under handles from a LIFO free list) with b2Filter's
// category, mask and group. The bodies live in one PairTracker (broadphase/pair_tracker.hpp),
// static ones flagged so that they never meet each other (btDbvtBroadphase's rule for its fixed
// tree): each step applies the bodies changed since the last one and takes the pairs that began
// and ended from them alone, so that bodies at rest cost nothing.
#include "broadphase/proxies.hpp"

#include <algorithm>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "broadphase/pair_tracker.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"

namespace broadphase {

// ---- HandlePool ----

ProxyHandle HandlePool::acquire() {
    ProxyHandle handle = 0;
    if (!free_.empty()) {
        handle = free_.back();
        free_.pop_back();
    } else {
        handle = static_cast<ProxyHandle>(live_.size());
        live_.push_back(false);
    }
    live_[handle] = true;
    ++count_;
    return handle;
}

void HandlePool::release(ProxyHandle handle) {
    if (!live(handle)) return;
    live_[handle] = false;
    --count_;
    released_.push_back(handle);
}

void HandlePool::end_frame() {
    // In release order, so that the last one released is the first one reused.
    free_.insert(free_.end(), released_.begin(), released_.end());
    released_.clear();
}

void HandlePool::clear() {
    live_.clear();
    free_.clear();
    released_.clear();
    count_ = 0;
}

// ---- diff_sorted_pairs ----

void diff_sorted_pairs(const std::vector<Pair>& before, const std::vector<Pair>& now,
                       std::vector<Pair>& began, std::vector<Pair>& ended) {
    began.clear();
    ended.clear();
    std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                        std::back_inserter(began));
    std::set_difference(before.begin(), before.end(), now.begin(), now.end(),
                        std::back_inserter(ended));
}

// ---- ProxyWorld ----

namespace {

struct Body {
    Box box;
    Filter filter;
    BodyKind kind = BodyKind::dynamic_body;
};

Error not_live(const char* what, ProxyHandle handle) {
    return Error{ErrorCode::invalid_argument,
                 std::string(what) + ": handle " + std::to_string(handle) + " is not live", handle};
}

/// validate_box's error, reworded to name the call and the handle instead of a box index.
Status check_box(const Box& box, const char* what, std::optional<ProxyHandle> handle) {
    Status status = validate_box(box, handle.value_or(0));
    if (status) return status;
    std::string detail = status.error().message;
    detail.erase(0, detail.find(": ") + 2);  // validate_box's "box N: " prefix
    std::string message = std::string(what) + ": ";
    if (handle) message += "handle " + std::to_string(*handle) + ": ";
    return Error{ErrorCode::invalid_box, message + detail,
                 handle ? std::optional<std::size_t>(*handle) : std::nullopt};
}

/// fn(), with running out of memory returned as an error naming the call and the handle.
template <class Fn>
Status guarded(const char* what, ProxyHandle handle, Fn&& fn) {
    try {
        return fn();
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory,
                 std::string("out of memory in ") + what + " of handle " + std::to_string(handle),
                 handle};
}

Result<std::unique_ptr<Structure>> make_dynamic(std::string_view method, const char* role) {
    auto made = make_structure(method);
    if (!made) return made.error();
    if (!made.value()->is_dynamic())
        return Error{ErrorCode::invalid_argument,
                     std::string("proxy world: the method of the ") + role + " bodies, '" +
                         std::string(method) +
                         "', is not a dynamic structure (it cannot insert, remove or move boxes)"};
    return made;
}

}  // namespace

struct ProxyWorld::Impl {
    // Every live body, static ones flagged (never paired with each other), ids = handles: its
    // pairs kept from the bodies changed since the last step alone.
    std::unique_ptr<PairTracker> tracker;
    std::string method;
    HandlePool pool;
    std::vector<Body> bodies;  // by handle; meaningful where pool.live()

    Status check_live(const char* what, ProxyHandle handle) const {
        if (!pool.live(handle)) return not_live(what, handle);
        return Status::success();
    }
};

ProxyWorld::ProxyWorld(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProxyWorld::~ProxyWorld() = default;

Result<std::unique_ptr<ProxyWorld>> ProxyWorld::create(std::string_view method,
                                                       std::string_view static_method) {
    try {
        auto impl = std::make_unique<Impl>();
        auto dynamic = make_dynamic(method, "dynamic");
        if (!dynamic) return dynamic.error();
        auto statics = make_dynamic(static_method.empty() ? method : static_method, "static");
        if (!statics) return statics.error();
        PairTracker::Config config;
        config.method = std::string(method);
        auto tracker = PairTracker::create(config);
        if (!tracker) return tracker.error();
        impl->tracker = std::move(tracker.value());
        impl->method = std::string(method);
        return std::unique_ptr<ProxyWorld>(new ProxyWorld(std::move(impl)));
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory,
                     "out of memory making a proxy world of " + std::string(method)};
    }
}

Result<ProxyHandle> ProxyWorld::add(const Box& box, const Filter& filter, BodyKind kind) {
    Impl& w = *impl_;
    if (Status s = check_box(box, "add", std::nullopt); !s) return s.error();
    try {
        const ProxyHandle handle = w.pool.acquire();
        if (handle >= w.bodies.size()) w.bodies.resize(std::size_t{handle} + 1);
        w.bodies[handle] = Body{box, filter, kind};
        if (Status s = w.tracker->insert(handle, box, filter, kind == BodyKind::static_body); !s) {
            w.pool.release(handle);
            return s.error();
        }
        return handle;
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory,
                     "out of memory adding a body (" + std::to_string(w.pool.count()) + " live)"};
    }
}

Status ProxyWorld::remove(ProxyHandle handle) {
    Impl& w = *impl_;
    if (Status s = w.check_live("remove", handle); !s) return s;
    return guarded("remove", handle, [&] {
        if (Status s = w.tracker->remove(handle); !s) return s;
        w.pool.release(handle);
        return Status::success();
    });
}

Status ProxyWorld::move(ProxyHandle handle, const Box& box) {
    Impl& w = *impl_;
    if (Status s = w.check_live("move", handle); !s) return s;
    if (Status s = check_box(box, "move", handle); !s) return s;
    return guarded("move", handle, [&] {
        if (Status s = w.tracker->move(handle, box); !s) return s;
        w.bodies[handle].box = box;
        return Status::success();
    });
}

Status ProxyWorld::set_filter(ProxyHandle handle, const Filter& filter) {
    Impl& w = *impl_;
    if (Status s = w.check_live("set_filter", handle); !s) return s;
    return guarded("set_filter", handle, [&] {
        if (Status s = w.tracker->set_filter(handle, filter); !s) return s;
        w.bodies[handle].filter = filter;
        return Status::success();
    });
}

Result<ProxyFrame> ProxyWorld::step() {
    Impl& w = *impl_;
    try {
        ProxyFrame frame;
        if (Status s = w.tracker->update(frame.began, frame.ended); !s) return s.error();
        std::sort(frame.began.begin(), frame.began.end());
        std::sort(frame.ended.begin(), frame.ended.end());
        const std::span<const Pair> pairs = w.tracker->pairs();
        frame.pairs.assign(pairs.begin(), pairs.end());
        std::sort(frame.pairs.begin(), frame.pairs.end());
        frame.pair_count = frame.pairs.size();
        w.pool.end_frame();
        return frame;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "out of memory finding the pairs of " +
                                               std::to_string(w.pool.count()) + " bodies in " +
                                               w.method};
}

std::uint32_t ProxyWorld::size() const {
    return impl_->pool.count();
}

Status ProxyWorld::validate() const {
    const Impl& w = *impl_;
    auto broken = [](const std::string& what, std::optional<std::size_t> handle = std::nullopt) {
        return Error{ErrorCode::invariant_violated, "proxy world: " + what, handle};
    };
    for (ProxyHandle h = 0; h < w.pool.extent(); ++h) {
        if (!w.pool.live(h)) continue;
        if (Status s = check_box(w.bodies[h].box, "validate", h); !s) return s;
        if (!w.tracker->contains(h))
            return broken("handle " + std::to_string(h) + " is missing from the tracker", h);
    }
    if (w.tracker->size() != w.pool.count())
        return broken("the tracker holds " + std::to_string(w.tracker->size()) + " bodies, " +
                      std::to_string(w.pool.count()) + " are live");
    return w.tracker->validate();
}

}  // namespace broadphase
