// What `broadphase events --script` drives: a proxy world behind one small interface, so that
// every method answers the same script the same way. Dynamic CPU structures run the library's
// ProxyWorld (bodies inserted, removed and moved in place); the other CPU structures, and any
// method under --rebuild, a world rebuilt over its live bodies each frame. The GPU's
// gpu::ProxyScene has ProxyWorld's calls, so WorldBackend<gpu::ProxyScene> is its backend.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "broadphase/proxies.hpp"

namespace broadphase::tool {

/// A proxy world: ProxyWorld's calls and meaning (handles from HandlePool, frames of sorted
/// pairs, began and ended).
class ProxyBackend {
public:
    virtual ~ProxyBackend() = default;
    virtual Result<ProxyHandle> add(const Box& box, const Filter& filter, BodyKind kind) = 0;
    virtual Status remove(ProxyHandle handle) = 0;
    virtual Status move(ProxyHandle handle, const Box& box) = 0;
    virtual Status set_filter(ProxyHandle handle, const Filter& filter) = 0;
    virtual Result<ProxyFrame> step() = 0;
};

/// A backend forwarding to a World with ProxyWorld's calls (ProxyWorld, gpu::ProxyScene).
/// `keep` outlives the world (gpu::ProxyScene's Context); `check`, when given, runs after each
/// step, and its error fails that step (the validation layer's count, for the GPU).
template <class World>
class WorldBackend final : public ProxyBackend {
public:
    explicit WorldBackend(std::unique_ptr<World> world, std::shared_ptr<void> keep = {},
                          std::function<Status()> check = {})
        : keep_(std::move(keep)), world_(std::move(world)), check_(std::move(check)) {}
    Result<ProxyHandle> add(const Box& box, const Filter& filter, BodyKind kind) override {
        return world_->add(box, filter, kind);
    }
    Status remove(ProxyHandle handle) override { return world_->remove(handle); }
    Status move(ProxyHandle handle, const Box& box) override { return world_->move(handle, box); }
    Status set_filter(ProxyHandle handle, const Filter& filter) override {
        return world_->set_filter(handle, filter);
    }
    Result<ProxyFrame> step() override {
        auto frame = world_->step();
        if (frame && check_) {
            if (Status s = check_(); !s) return s.error();
        }
        return frame;
    }

private:
    std::shared_ptr<void> keep_;  // declared first: destroyed last
    std::unique_ptr<World> world_;
    std::function<Status()> check_;
};

/// The backend of a CPU `method`: ProxyWorld for a dynamic structure unless `rebuild`, else a
/// world whose two structures (dynamic and static bodies) are built again at every step. An
/// unknown method is an error naming it.
Result<std::unique_ptr<ProxyBackend>> make_cpu_proxy_backend(std::string_view method, bool rebuild);

}  // namespace broadphase::tool
