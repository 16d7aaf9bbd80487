// The CPU proxy world (broadphase/proxies.hpp): Box2D's proxies (b2DynamicTree's
// CreateProxy/DestroyProxy/MoveProxy under handles from a LIFO free list) with b2Filter's
// category, mask and group, in Bullet's btDbvtBroadphase arrangement of one structure for the
// dynamic bodies and a second for the static world. Each step reports dynamic-dynamic pairs
// from the dynamic structure's self_pairs (filtered where they are found) and dynamic-static
// pairs by querying each dynamic body's box against the static structure; static bodies never
// meet each other. The events are the sorted differences of consecutive frames' pairs.
#include "broadphase/proxies.hpp"

#include <algorithm>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

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
    std::uint32_t slot = 0;  // index in Impl::dynamic_handles (dynamic bodies)
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
                     std::string("proxy world: the ") + role + " method '" + std::string(method) +
                         "' is not a dynamic structure (it cannot insert, remove or move boxes)"};
    return made;
}

}  // namespace

struct ProxyWorld::Impl {
    std::unique_ptr<Structure> dynamic;  // dynamic bodies, ids = handles
    std::unique_ptr<Structure> statics;  // static bodies, ids = handles
    HandlePool pool;
    std::vector<Body> bodies;                  // by handle; meaningful where pool.live()
    std::vector<ProxyHandle> dynamic_handles;  // the live dynamic bodies, in no order
    std::vector<Pair> previous;                // the last step's pairs
    std::vector<std::uint32_t> hits;           // scratch of the static queries

    Status check_live(const char* what, ProxyHandle handle) const {
        if (!pool.live(handle)) return not_live(what, handle);
        return Status::success();
    }
    Structure& home(const Body& body) const {
        return body.kind == BodyKind::dynamic_body ? *dynamic : *statics;
    }
    void find_pairs(std::vector<Pair>& out) {
        out.clear();
        dynamic->self_pairs(out);
        if (statics->size() > 0) {
            for (const ProxyHandle d : dynamic_handles) {
                const Body& body = bodies[d];
                hits.clear();
                statics->query_box(body.box, hits);
                for (const std::uint32_t s : hits) {
                    if (should_collide(body.filter, bodies[s].filter))
                        out.push_back(d < s ? Pair{d, s} : Pair{s, d});
                }
            }
        }
        std::sort(out.begin(), out.end());
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
        impl->dynamic = std::move(dynamic.value());
        impl->statics = std::move(statics.value());
        if (Status s = impl->dynamic->build({}); !s) return s.error();
        if (Status s = impl->statics->build({}); !s) return s.error();
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
        Body& body = w.bodies[handle];
        body = Body{box, filter, kind, 0};
        Structure& home = w.home(body);
        if (Status s = home.insert(handle, box); !s) {
            w.pool.release(handle);
            return s.error();
        }
        // Filters belong to ids: a reused handle must not keep its last body's filter. Set
        // after the insert, which may replace an empty structure whole (static_aabb_tree).
        home.set_filter(handle, filter);
        if (kind == BodyKind::dynamic_body) {
            body.slot = static_cast<std::uint32_t>(w.dynamic_handles.size());
            w.dynamic_handles.push_back(handle);
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
        const Body& body = w.bodies[handle];
        if (Status s = w.home(body).remove(handle); !s) return s;
        if (body.kind == BodyKind::dynamic_body) {
            const ProxyHandle last = w.dynamic_handles.back();
            w.dynamic_handles[body.slot] = last;
            w.bodies[last].slot = body.slot;
            w.dynamic_handles.pop_back();
        }
        w.pool.release(handle);
        return Status::success();
    });
}

Status ProxyWorld::move(ProxyHandle handle, const Box& box) {
    Impl& w = *impl_;
    if (Status s = w.check_live("move", handle); !s) return s;
    if (Status s = check_box(box, "move", handle); !s) return s;
    return guarded("move", handle, [&] {
        Body& body = w.bodies[handle];
        if (Status s = w.home(body).move(handle, box); !s) return s;
        body.box = box;
        return Status::success();
    });
}

Status ProxyWorld::set_filter(ProxyHandle handle, const Filter& filter) {
    Impl& w = *impl_;
    if (Status s = w.check_live("set_filter", handle); !s) return s;
    return guarded("set_filter", handle, [&] {
        Body& body = w.bodies[handle];
        w.home(body).set_filter(handle, filter);
        body.filter = filter;
        return Status::success();
    });
}

Result<ProxyFrame> ProxyWorld::step() {
    Impl& w = *impl_;
    try {
        ProxyFrame frame;
        w.find_pairs(frame.pairs);
        diff_sorted_pairs(w.previous, frame.pairs, frame.began, frame.ended);
        frame.pair_count = frame.pairs.size();
        w.previous = frame.pairs;
        w.pool.end_frame();
        return frame;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "out of memory finding the pairs of " +
                                               std::to_string(w.pool.count()) + " bodies in " +
                                               std::string(w.dynamic->name())};
}

std::uint32_t ProxyWorld::size() const {
    return impl_->pool.count();
}

Status ProxyWorld::validate() const {
    const Impl& w = *impl_;
    auto broken = [](const std::string& what, std::optional<std::size_t> handle = std::nullopt) {
        return Error{ErrorCode::invariant_violated, "proxy world: " + what, handle};
    };
    std::size_t dynamic_count = 0;
    std::vector<std::uint32_t> found;
    for (ProxyHandle h = 0; h < w.pool.extent(); ++h) {
        if (!w.pool.live(h)) continue;
        const Body& body = w.bodies[h];
        const std::string name = "handle " + std::to_string(h);
        if (Status s = check_box(body.box, "validate", h); !s) return s;
        if (body.kind == BodyKind::dynamic_body) {
            ++dynamic_count;
            if (body.slot >= w.dynamic_handles.size() || w.dynamic_handles[body.slot] != h)
                return broken(name + " is missing from the dynamic bodies' list", h);
        }
        if (w.home(body).filter(h) != body.filter)
            return broken(name + ": its structure holds another filter", h);
        // The body is in its structure at its box: a query of the box finds it.
        found.clear();
        w.home(body).query_box(body.box, found);
        if (std::find(found.begin(), found.end(), h) == found.end())
            return broken(name + " is not found at its box in its structure", h);
    }
    if (dynamic_count != w.dynamic_handles.size())
        return broken("the dynamic bodies' list holds " + std::to_string(w.dynamic_handles.size()) +
                      " handles, " + std::to_string(dynamic_count) + " bodies are dynamic");
    if (w.dynamic->size() + w.statics->size() != w.pool.count())
        return broken("the structures hold " +
                      std::to_string(w.dynamic->size() + w.statics->size()) + " boxes, " +
                      std::to_string(w.pool.count()) + " bodies are live");
    if (Status s = w.dynamic->validate(); !s) return s;
    return w.statics->validate();
}

}  // namespace broadphase
