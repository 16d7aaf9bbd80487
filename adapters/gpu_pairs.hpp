// adapters::GpuPairs: gpu_lbvh's side of an engine adapter. The adapter's slots are the bodies
// of a gpu::ProxyScene; one GPU step per call of the engine's pair update applies the slots
// changed since the last one and returns the pairs that began and ended, so that the engine's
// pair cache follows the changes, not the whole pair set. The current pairs are kept on the
// host from those events (a set keyed by the scene's handles), for the rare full comparison
// of a cache that drifted.
//
// A slot whose proxy is destroyed leaves the scene at once (drop): its pairs end at the next
// step without being reported, since the engine removed them itself, and a proxy created in
// the same slot before that step is a new body with a new handle, whose pairs begin.
//
// Built with the GPU part; without it, create() returns `unsupported`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::gpu {
class Context;
}

namespace broadphase::adapters {

struct GpuPairsOptions {
    /// Each step downloads every pair (pairs() reads them in the scene's order), where an
    /// engine that needs them all at each query (FCL's self collide) wants them; otherwise
    /// only the began and ended pairs come back, and pairs() is kept from them.
    bool keep_pairs = false;
};

/// What the scene should hold for a slot at the next step.
struct GpuSlot {
    bool live = false;  ///< a proxy with a valid box: a body of the scene
    Box box;
    Filter filter;
};

class GpuPairs {
public:
    /// Whether the GPU part is built (else create() returns `unsupported`).
    static bool available();
    /// Over `context` (null: one of its own, with gpu::ContextOptions' defaults, made now),
    /// which must outlive it. The scene is made by the first step, sized for the bodies it
    /// then holds (a quarter more, for those to come).
    static Result<std::unique_ptr<GpuPairs>> create(gpu::Context* context,
                                                    const GpuPairsOptions& options = {});
    ~GpuPairs();

    /// Slot s changed (its box, its filter, or its proxy came or went): read at the next step.
    void touch(std::uint32_t s);
    /// Slot s's body leaves the scene now (its proxy is destroyed); see the file comment.
    Status drop(std::uint32_t s);
    /// True when touched slots wait for a step.
    bool pending() const;

    /// Applies the touched slots (`slot_of(s)` says what each should be) and runs one GPU
    /// step. Appends the pairs that began and ended, as slots (smaller first), leaving out
    /// those of dropped bodies, to `began` and `ended` when they are given (with keep_pairs a
    /// caller that reads pairs() alone passes neither).
    Status step(const std::function<GpuSlot(std::uint32_t)>& slot_of,
                std::vector<Pair>* began = nullptr, std::vector<Pair>* ended = nullptr);

    /// Every pair after the last step, as slots (smaller first): sorted, or with keep_pairs in
    /// the scene's order. Replaces `out`.
    void pairs(std::vector<Pair>& out) const;
    /// The number of pairs after the last step (those of dropped bodies included until the
    /// step after their drop).
    std::uint64_t pair_count() const;
    /// GPU steps run.
    std::uint64_t steps() const;
    /// Forgets every body (the engine's resetPool); the scene keeps its buffers.
    Status clear();
    /// Checks that each slot's handle names the slot back.
    Status validate() const;

    struct Impl;

private:
    explicit GpuPairs(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::adapters
