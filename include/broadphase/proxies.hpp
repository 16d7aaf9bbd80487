// Proxies: bodies that come and go between frames under stable handles, each with a collision
// filter, in a world of dynamic bodies beside a static one. The terms are Box2D's
// (b2DynamicTree proxies, b2Filter's category, mask and group) and Bullet's
// (btDbvtBroadphase's separate static and dynamic trees): a physics engine maps its bodies
// onto handles one to one.
//
// Each frame reports every overlapping pair of handles whose filters allow it, dynamic against
// dynamic and dynamic against static (static against static never), each pair once as (a, b)
// with a < b, and the pairs that began and ended since the previous frame. A removed body's
// pairs end in the frame it is removed; an added body's pairs begin in the frame it is added.
// ProxyWorld is the CPU reference over any dynamic structure; gpu::ProxyScene
// (broadphase/gpu/proxy_scene.hpp) is the same on the GPU, and both hand out the same handles for
// the same sequence of calls (HandlePool), so that their frames compare exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

/// A body's handle: valid from add until remove, then reused by a later add.
using ProxyHandle = std::uint32_t;

/// Whether a body moves (dynamic) or belongs to the static world (built once, changed rarely).
enum class BodyKind : std::uint8_t { dynamic_body, static_body };

/// Hands out handles. A new handle is the most recently freed one (Box2D's free list: last
/// in, first out) or, when none is free, the next never-used one (0, 1, 2, ...). A released
/// handle becomes free only at the next end_frame(), so that within one frame's events a
/// removed body and a body added in its place never share a handle.
class HandlePool {
public:
    /// The next handle (see the class comment).
    ProxyHandle acquire();
    /// Marks a live handle as released; it is free from the next end_frame() on. A handle that
    /// is not live is left alone.
    void release(ProxyHandle handle);
    /// Frees the handles released since the last end_frame().
    void end_frame();
    /// True between the acquire of `handle` and its release.
    bool live(ProxyHandle handle) const { return handle < live_.size() && live_[handle]; }
    /// One more than the largest handle ever acquired: handles are below it.
    std::uint32_t extent() const { return static_cast<std::uint32_t>(live_.size()); }
    /// Handles live now.
    std::uint32_t count() const { return count_; }
    /// Forgets every handle.
    void clear();

private:
    std::vector<bool> live_;
    std::vector<ProxyHandle> free_;      // LIFO
    std::vector<ProxyHandle> released_;  // free from the next end_frame()
    std::uint32_t count_ = 0;
};

/// One frame of a proxy world. Every list is sorted ascending, pairs (a, b) of handles, a < b.
struct ProxyFrame {
    std::vector<Pair> pairs;  ///< every overlapping pair the filters allow, now
    std::vector<Pair> began;  ///< in `pairs` and not in the previous frame's
    std::vector<Pair> ended;  ///< in the previous frame's pairs and not in `pairs`
    /// The number of pairs now (gpu::ProxyScene fills it also when it does not download
    /// `pairs`).
    std::uint64_t pair_count = 0;
};

/// The CPU reference proxy world: every body in one PairTracker over a dynamic CPU structure
/// (static bodies never meet each other), each step's pairs kept from the bodies changed since
/// the last one. Not thread-safe.
class ProxyWorld {
public:
    /// A world over `method`, which must be a dynamic structure (Structure::is_dynamic);
    /// otherwise an invalid_argument error names it. `static_method` (empty: the same) is
    /// checked the same way but no longer used: static bodies share the tracker's structure.
    static Result<std::unique_ptr<ProxyWorld>> create(std::string_view method,
                                                      std::string_view static_method = {});
    ~ProxyWorld();

    /// Adds a body; returns its handle (HandlePool's rule). Rejects an invalid box.
    Result<ProxyHandle> add(const Box& box, const Filter& filter = {},
                            BodyKind kind = BodyKind::dynamic_body);
    /// Removes a live body; an error names a handle that is not live.
    Status remove(ProxyHandle handle);
    /// Moves a live body (static ones too: a rare change of the static world).
    Status move(ProxyHandle handle, const Box& box);
    /// Changes a live body's filter.
    Status set_filter(ProxyHandle handle, const Filter& filter);

    /// Ends the frame: its pairs and the differences with the previous step's (the first
    /// step's `began` holds all its pairs). Handles released during the frame become free.
    Result<ProxyFrame> step();

    /// Live bodies.
    std::uint32_t size() const;

    /// Checks the world's invariants (each live body in its kind's structure, with its box and
    /// filter; the structures' own validate()); an error says which failed and for what handle.
    Status validate() const;

    struct Impl;

private:
    explicit ProxyWorld(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The sorted differences of two sorted pair lists: `began` gets now \ before and `ended`
/// before \ now (both cleared first).
void diff_sorted_pairs(const std::vector<Pair>& before, const std::vector<Pair>& now,
                       std::vector<Pair>& began, std::vector<Pair>& ended);

}  // namespace broadphase
