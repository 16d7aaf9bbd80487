// The library's own way into the Impl behind a public GPU class (Context, Lbvh, Culler,
// LbvhQueries, MovingScene, ProxyScene): the public
// headers keep `struct Impl` private and name ImplAccess their friend, so that callers see no
// Impl while gpu/ and the tests reach it through impl_of(object).
#pragma once

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/gpu/proxy_scene.hpp"

namespace broadphase::gpu {

struct ImplAccess {
    template <class T>
    using impl_type = typename T::Impl;
    template <class T>
    static typename T::Impl& of(T& object) {
        return *object.impl_;
    }
    template <class T>
    static const typename T::Impl& of(const T& object) {
        return *object.impl_;
    }
};

/// The Impls by name, for the library's own declarations.
using ContextImpl = ImplAccess::impl_type<Context>;
using LbvhImpl = ImplAccess::impl_type<Lbvh>;
using CullerImpl = ImplAccess::impl_type<Culler>;
using LbvhQueriesImpl = ImplAccess::impl_type<LbvhQueries>;
using MovingSceneImpl = ImplAccess::impl_type<MovingScene>;
using ProxySceneImpl = ImplAccess::impl_type<ProxyScene>;

/// The Impl of a GPU class (its definition comes from gpu/device/context_impl.hpp, the class's
/// .cpp, gpu/cull/culler_impl.hpp or gpu/frames/moving_scene_impl.hpp).
template <class T>
decltype(auto) impl_of(T& object) {
    return ImplAccess::of(object);
}

}  // namespace broadphase::gpu
