// Bodies that come and go, as a physics loop has them, over gpu::ProxyScene (issue 10's
// proxies): a static world (a ground slab and a few pillars) and dynamic bodies dropped from
// the sky every frame. A body falls under gravity, comes to rest on the ground, and is
// despawned when its life ends, or when it has fallen off the edge of the world. A crate
// whose life ends shatters into debris: pieces that fly apart and meet crates, pillars and the
// ground but never one another (category 2, mask ~2, Box2D's filtering), as debris does in a
// game. Every change is a proxy call (add, remove, move) batched into the frame; the host
// integrates the bodies (the GPU-resident loop is simulation.hpp's).
//
// With SpawnerOptions::check_with set, every call is mirrored into a CPU ProxyWorld over that
// method, and each step compares the GPU frame with the CPU frame exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#include "broadphase/proxies.hpp"

namespace broadphase::simulation {

/// The filters of the spawner's bodies: crates meet everything; debris meets all but debris.
inline constexpr Filter kCrateFilter{1u, 0xFFFFFFFFu, 0};
inline constexpr Filter kDebrisFilter{2u, ~2u, 0};
inline constexpr Filter kWorldFilter{4u, 0xFFFFFFFFu, 0};

struct SpawnerOptions {
    std::uint32_t spawn_per_frame = 100;  ///< crates dropped each frame
    std::uint32_t lifetime = 100;         ///< frames a crate lives (debris: half of it)
    std::uint32_t pieces = 4;             ///< debris pieces a crate shatters into (0: none)
    std::uint32_t seed = 42;              ///< spawn positions, sizes and velocities
    float dt = 1.0f / 60.0f;              ///< time step (gravity 9.81 along -y)
    float world = 50;                     ///< the ground is [-world, world] in x and z
    /// A CPU method (a dynamic structure) to mirror every call into and compare each frame
    /// with; empty: no check.
    std::string check_with;
    bool validation = false;  ///< Khronos validation layer (also BROADPHASE_VALIDATION=1)
    std::string device;       ///< device index or name substring (gpu::ContextOptions)
    gpu::ProxySceneOptions scene{};
};

/// A live body of the spawner.
struct SpawnedBody {
    ProxyHandle handle = 0;
    Box box;
    Vec3 velocity;
    Filter filter;
    BodyKind kind = BodyKind::dynamic_body;
    std::uint32_t age = 0;
    std::uint32_t lifetime = 0;  ///< 0: forever (the static world)
    bool debris = false;
};

/// What one step did.
struct SpawnStep {
    ProxyFrame frame;             ///< pairs, began and ended, in handles
    std::uint32_t spawned = 0;    ///< bodies added this frame (crates and debris)
    std::uint32_t despawned = 0;  ///< bodies removed this frame
    std::uint32_t moved = 0;      ///< bodies moved this frame (resting ones are not)
    std::uint32_t live = 0;       ///< bodies alive after the frame, the static world included
    std::uint32_t debris = 0;     ///< of which debris
};

class Spawner {
public:
    /// Creates the context and the proxy scene, and adds the static world.
    static Result<std::unique_ptr<Spawner>> create(const SpawnerOptions& options = {});
    ~Spawner();
    Spawner(const Spawner&) = delete;
    Spawner& operator=(const Spawner&) = delete;

    /// Ages, integrates and despawns the bodies, shatters the crates whose life ended, drops
    /// new crates, then runs the proxy scene's frame. With check_with, a GPU frame that differs
    /// from the CPU world's is an error saying where.
    Result<SpawnStep> step();

    /// The live bodies after the last step (the static world first).
    const std::vector<SpawnedBody>& bodies() const;
    gpu::Context& context();
    const gpu::ProxyScene& scene() const;

private:
    struct Impl;
    explicit Spawner(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::simulation
