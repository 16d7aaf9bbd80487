// Proxies on the GPU: bodies that come and go under stable handles, with collision filters, in
// a dynamic tree beside a static one (the CPU reference and the terms: broadphase/proxies.hpp).
//
// Each kind of body lives in slots of its own: a slot holds a box and a gpu_layout::ProxySlot
// (filter and handle), and a free slot holds an empty box (lo = +inf, hi = -inf) that overlaps
// nothing. Three trees, each an LBVH over all the slots of its kind:
// - the dynamic tree, kept by gpu::MovingScene's frame: a move refits its leaf and a remove
//   empties it, so a frame of moves and removes is a refit like any other, rebuilt only when
//   the refit-or-rebuild policy (SAH cost, traversal work) asks for it;
// - the fresh tree of the dynamic bodies added since the last migration, rebuilt every frame
//   over the slots below the highest one in use (it is small: a migration empties it, and it
//   refills from slot 0). A body added into a free leaf of the dynamic tree would stretch that
//   leaf's ancestors across the scene (the leaf sits where a removed body was) and make the
//   policy rebuild almost every frame of churn; in the fresh tree it costs a small build.
//   When the fresh tree holds more than an eighth of the dynamic slots (at least 256), its
//   bodies move into free dynamic slots and that frame rebuilds the dynamic tree
//   (Bullet's btDbvtBroadphase keeps new proxies apart in the same way);
// - the static tree, rebuilt in the frame after a batch that changed it; frames without static
//   changes do not touch it.
// The pairs are the dynamic tree's own, then dynamic x static, fresh x fresh, fresh x dynamic
// and fresh x static, appended to one list.
//
// A frame is one submit: the batch of the frame's changes (one record per changed slot) is
// copied from a host-visible staging buffer and scattered into the slots
// (shaders/frames/proxy_update.comp), the fresh tree is built and the static one rebuilt if needed,
// and the dynamic tree is refitted or rebuilt; then the pair passes run, every one filtering by
// the ProxySlots before anything is appended and writing handles (shaders/lbvh/lbvh_pairs.comp);
// the pairs are sorted and diffed with the previous frame's on the GPU.
//
// Capacities: dynamic slots, static slots and the handle range (the pair keys' width) start at
// the options' values and double (or grow to what a frame needs, if more) when a frame needs
// more; such a frame first rebuilds the previous frame's state at the new sizes (one more
// submit and a host round trip), then runs as usual. Frames within the capacities allocate
// nothing.
#pragma once

#include <cstdint>
#include <memory>

#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/proxies.hpp"

namespace broadphase::gpu {

struct ProxySceneOptions {
    /// The dynamic tree's code, refit-or-rebuild policy, pair buffers and whether frames
    /// download the full pair list (MovingSceneOptions; its reset-related fields apply to the
    /// tree over the dynamic slots).
    MovingSceneOptions frames{};
    /// Slots of each kind and handles the scene holds at first (0: 1024 each).
    std::uint32_t initial_dynamic_capacity = 0;
    std::uint32_t initial_static_capacity = 0;
    std::uint32_t initial_handle_capacity = 0;
};

/// What the last step did besides the MovingScene frame, for inspection and tests.
struct ProxyStepInfo {
    FramePath path = FramePath::refit;  ///< the dynamic tree's path
    double ratio = 1;                   ///< its refitted SAH cost over the last build's
    double work_ratio = 1;              ///< its traversal-work ratio (MovingScene's)
    std::uint32_t dynamic_updates = 0;  ///< dynamic slots the batch wrote
    std::uint32_t static_updates = 0;   ///< static slots the batch wrote
    bool static_rebuilt = false;        ///< the static tree was rebuilt
    bool grown = false;                 ///< a capacity grew (the frame rebuilt everything first)
    /// the fresh bodies moved into the dynamic tree, which this frame rebuilt
    bool migrated = false;
    std::uint32_t fresh = 0;  ///< bodies in the fresh tree after the frame
    /// leaves the fresh tree was built over (its slots below the highest one in use since the
    /// last migration, which empties it and refills it from slot 0; 0: not built)
    std::uint32_t fresh_leaves = 0;
    bool regrown = false;  ///< the pair buffers grew (MovingScene's regrown)
};

/// The GPU proxy world: the same calls and results as broadphase::ProxyWorld (same handles
/// for the same sequence of calls). Owns its device buffers; the Context must outlive it. Not
/// thread-safe.
class ProxyScene {
public:
    /// An empty scene (its kernels are compiled by the first step). Rejects what
    /// MovingScene::create rejects.
    static Result<std::unique_ptr<ProxyScene>> create(Context& context,
                                                      const ProxySceneOptions& options = {});
    ~ProxyScene();

    /// Adds a body; returns its handle (HandlePool's rule). Rejects an invalid box (NaN,
    /// infinity, min > max). Takes effect at the next step.
    Result<ProxyHandle> add(const Box& box, const Filter& filter = {},
                            BodyKind kind = BodyKind::dynamic_body);
    /// Removes a live body; an error names a handle that is not live.
    Status remove(ProxyHandle handle);
    /// Moves a live body (a static one too: its tree is rebuilt at the next step).
    Status move(ProxyHandle handle, const Box& box);
    /// Changes a live body's filter.
    Status set_filter(ProxyHandle handle, const Filter& filter);

    /// Runs the frame: applies the batch on the GPU, then pairs, sort and differences with the
    /// previous step (the first step's `began` holds all its pairs). `pairs` is filled when
    /// ProxySceneOptions::frames.return_pairs (the default).
    Result<ProxyFrame> step();

    /// The same frame recorded into the caller's command buffer (after the caller's own work,
    /// e.g. a kernel that wrote nothing of ours): the batch's copy from a host-visible staging
    /// buffer, its scatter, the trees, the pairs, their sort and differences, with no host
    /// work inside. The batch is captured: changes after this call belong to the next frame,
    /// but none is accepted (add, remove, move, set_filter, step and record_step fail) until
    /// read_step() has read this frame. A frame that needs more slots or handles than the
    /// scene holds is refused (limit_exceeded, naming them): growing needs a submit of its own,
    /// so call step() for that frame. Precondition: `cmd` is recording, on the Context's queue
    /// family. Postcondition: the last command is a compute or transfer command; the
    /// scene's buffers are only touched by that submit.
    Status record_step(VkCommandBuffer cmd);
    /// After the submit holding record_step's commands has completed: the frame, as step()
    /// returns it (a pair buffer that overflowed is grown and the pairs redone here, in a
    /// submit of its own). An error when no frame is pending.
    Result<ProxyFrame> read_step();

    /// GPU times of the last step (FrameTimes::proxies: the batch and the static tree).
    const FrameTimes& last_times() const;
    /// What the last step did.
    const ProxyStepInfo& last_info() const;

    /// Live bodies.
    std::uint32_t size() const;
    /// Slots of each kind, and the handle range, the scene holds now.
    std::uint32_t dynamic_capacity() const;
    std::uint32_t static_capacity() const;
    std::uint32_t handle_capacity() const;

private:
    BROADPHASE_GPU_IMPL(ProxyScene);
};

}  // namespace broadphase::gpu
