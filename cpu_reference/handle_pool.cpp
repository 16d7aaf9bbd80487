// HandlePool (broadphase/proxies.hpp): Box2D's proxy-id free list, with releases held back
// until the end of the frame so that one frame's events never mix a removed body with the
// body that takes its handle. Shared by ProxyWorld and gpu::ProxyScene.
#include "broadphase/proxies.hpp"

#include <cassert>

namespace broadphase {

ProxyHandle HandlePool::acquire() {
    ProxyHandle h;
    if (!free_.empty()) {
        h = free_.back();
        free_.pop_back();
        live_[h] = true;
    } else {
        h = static_cast<ProxyHandle>(live_.size());
        live_.push_back(true);
    }
    ++count_;
    return h;
}

void HandlePool::release(ProxyHandle handle) {
    assert(live(handle));
    live_[handle] = false;
    released_.push_back(handle);
    --count_;
}

void HandlePool::end_frame() {
    free_.insert(free_.end(), released_.begin(), released_.end());
    released_.clear();
}

void HandlePool::clear() {
    live_.clear();
    free_.clear();
    released_.clear();
    count_ = 0;
}

}  // namespace broadphase
