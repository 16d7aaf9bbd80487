// A GPU-resident simulation over broadphase, as a physics author would write it: the boxes
// live in a device buffer that the author's own compute kernel (shaders/integrate.comp) moves
// every frame, and each frame's overlap events come from gpu::MovingScene::record_step recorded
// right after it in the same command buffer. Many frames run per submit; the host reads only
// the last frame's results (MovingScene::read_step), never anything between frames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/types.hpp"

namespace broadphase::simulation {

struct SimulationOptions {
    std::uint32_t boxes = 20000;  ///< boxes of a `uniform` scene in the unit cube
    std::uint32_t seed = 42;      ///< scene and velocities
    float dt = 0.01f;             ///< time step; velocities are uniform in [-0.5, 0.5)^3
    bool validation = false;      ///< Khronos validation layer (also BROADPHASE_VALIDATION=1)
    std::string device;           ///< device index or name substring (gpu::ContextOptions)
};

/// A context on `device` (gpu::ContextOptions::device), with the Khronos validation layer when
/// `validation`: the one the simulation and the spawner (spawner.hpp) each create.
Result<std::unique_ptr<gpu::Context>> create_context(bool validation, const std::string& device);

class Simulation {
public:
    /// Creates the context, the integrator pipeline and the buffers, and resets the moving
    /// scene to the initial boxes.
    static Result<std::unique_ptr<Simulation>> create(const SimulationOptions& options = {});
    ~Simulation();
    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    /// Records `frames` frames (integrate, then MovingScene::record_step) into one command
    /// buffer, submits it, waits, and returns the last frame's result (read_step). The boxes
    /// before the last frame's integration are kept aside (previous_boxes).
    Result<gpu::FrameResult> run(std::uint32_t frames);

    /// The boxes now, read back from the GPU.
    Result<std::vector<Box>> boxes();
    /// The boxes of the frame before the last one run, read back from the GPU.
    Result<std::vector<Box>> previous_boxes();

    gpu::Context& context();

private:
    struct Impl;
    explicit Simulation(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::simulation
