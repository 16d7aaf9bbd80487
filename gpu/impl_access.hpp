// The library's own way into the Impl behind a public GPU class (Context, Lbvh): the public
// headers keep `struct Impl` private and name ImplAccess their friend, so that callers see no
// Impl while gpu/ and the tests reach it through impl_of(object).
#pragma once

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

class Context;
class Lbvh;
/// The Impls by name, for the library's own declarations.
using ContextImpl = ImplAccess::impl_type<Context>;
using LbvhImpl = ImplAccess::impl_type<Lbvh>;

/// The Impl of a Context or Lbvh (its definition comes from gpu/context_impl.hpp or
/// gpu/lbvh.cpp).
template <class T>
decltype(auto) impl_of(T& object) {
    return ImplAccess::of(object);
}

}  // namespace broadphase::gpu
