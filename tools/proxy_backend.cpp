// The CPU backends of `events --script` (see proxy_backend.hpp). RebuildWorld is ProxyWorld
// for structures that cannot insert, remove or move: each step builds the method over the live
// dynamic bodies (filters set by the built ids) and over the static ones, then finds the pairs
// as ProxyWorld does (self pairs of the dynamic bodies, each dynamic body's box queried against
// the static ones, should_collide), under the same handles (HandlePool).
#include "proxy_backend.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"

namespace broadphase::tool {
namespace {

class RebuildWorld final : public ProxyBackend {
public:
    RebuildWorld(std::unique_ptr<Structure> dynamic, std::unique_ptr<Structure> statics)
        : dynamic_(std::move(dynamic)), statics_(std::move(statics)) {}

    Result<ProxyHandle> add(const Box& box, const Filter& filter, BodyKind kind) override {
        if (Status s = validate_box(box, pool_.extent()); !s) return s.error();
        const ProxyHandle handle = pool_.acquire();
        if (handle >= bodies_.size()) bodies_.resize(std::size_t{handle} + 1);
        bodies_[handle] = {box, filter, kind};
        return handle;
    }
    Status remove(ProxyHandle handle) override {
        if (Status s = check_live("remove", handle); !s) return s;
        pool_.release(handle);
        return Status::success();
    }
    Status move(ProxyHandle handle, const Box& box) override {
        if (Status s = check_live("move", handle); !s) return s;
        if (Status s = validate_box(box, handle); !s) return s;
        bodies_[handle].box = box;
        return Status::success();
    }
    Status set_filter(ProxyHandle handle, const Filter& filter) override {
        if (Status s = check_live("set_filter", handle); !s) return s;
        bodies_[handle].filter = filter;
        return Status::success();
    }

    Result<ProxyFrame> step() override {
        try {
            return find_frame();
        } catch (const std::bad_alloc&) {
        } catch (const std::length_error&) {
        }
        return Error{ErrorCode::out_of_memory, "out of memory finding the pairs of " +
                                                   std::to_string(pool_.count()) + " bodies in " +
                                                   std::string(dynamic_->name())};
    }

private:
    struct Body {
        Box box;
        Filter filter;
        BodyKind kind = BodyKind::dynamic_body;
    };
    /// The live bodies of one kind, compacted: built id k is handles[k].
    struct Side {
        std::vector<Box> boxes;
        std::vector<ProxyHandle> handles;
    };

    Status check_live(const char* what, ProxyHandle handle) const {
        if (pool_.live(handle)) return Status::success();
        return Error{ErrorCode::invalid_argument,
                     std::string(what) + ": handle " + std::to_string(handle) + " is not live",
                     handle};
    }

    Result<ProxyFrame> find_frame() {
        for (Side* side : {&dynamic_side_, &static_side_}) {
            side->boxes.clear();
            side->handles.clear();
        }
        for (ProxyHandle h = 0; h < pool_.extent(); ++h) {
            if (!pool_.live(h)) continue;
            Side& side = bodies_[h].kind == BodyKind::dynamic_body ? dynamic_side_ : static_side_;
            side.boxes.push_back(bodies_[h].box);
            side.handles.push_back(h);
        }
        if (Status s = dynamic_->build(dynamic_side_.boxes); !s) return s.error();
        if (Status s = statics_->build(static_side_.boxes); !s) return s.error();
        dynamic_->clear_filters();
        for (std::size_t k = 0; k < dynamic_side_.handles.size(); ++k) {
            const Filter& filter = bodies_[dynamic_side_.handles[k]].filter;
            if (filter != Filter{}) dynamic_->set_filter(static_cast<std::uint32_t>(k), filter);
        }

        ProxyFrame frame;
        found_.clear();
        dynamic_->self_pairs(found_);
        for (const Pair& p : found_) {
            const ProxyHandle a = dynamic_side_.handles[p.i], b = dynamic_side_.handles[p.j];
            frame.pairs.push_back(a < b ? Pair{a, b} : Pair{b, a});
        }
        if (!static_side_.handles.empty()) {
            for (std::size_t k = 0; k < dynamic_side_.handles.size(); ++k) {
                const ProxyHandle d = dynamic_side_.handles[k];
                hits_.clear();
                statics_->query_box(dynamic_side_.boxes[k], hits_);
                for (const std::uint32_t hit : hits_) {
                    const ProxyHandle s = static_side_.handles[hit];
                    if (should_collide(bodies_[d].filter, bodies_[s].filter))
                        frame.pairs.push_back(d < s ? Pair{d, s} : Pair{s, d});
                }
            }
        }
        std::sort(frame.pairs.begin(), frame.pairs.end());
        diff_sorted_pairs(previous_, frame.pairs, frame.began, frame.ended);
        previous_ = frame.pairs;
        pool_.end_frame();
        frame.pair_count = frame.pairs.size();
        return frame;
    }

    std::unique_ptr<Structure> dynamic_, statics_;
    HandlePool pool_;
    std::vector<Body> bodies_;  // by handle; meaningful where pool_.live()
    Side dynamic_side_, static_side_;
    std::vector<Pair> found_, previous_;
    std::vector<std::uint32_t> hits_;
};

}  // namespace

Result<std::unique_ptr<ProxyBackend>> make_cpu_proxy_backend(std::string_view method,
                                                             bool rebuild) {
    auto dynamic = make_structure(method);
    if (!dynamic) return dynamic.error();
    if (dynamic.value()->is_dynamic() && !rebuild) {
        auto world = ProxyWorld::create(method);
        if (!world) return world.error();
        return std::unique_ptr<ProxyBackend>(
            std::make_unique<WorldBackend<ProxyWorld>>(std::move(world.value())));
    }
    auto statics = make_structure(method);
    if (!statics) return statics.error();
    return std::unique_ptr<ProxyBackend>(
        std::make_unique<RebuildWorld>(std::move(dynamic.value()), std::move(statics.value())));
}

}  // namespace broadphase::tool
