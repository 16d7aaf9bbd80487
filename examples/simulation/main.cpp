// broadphase_simulation: a GPU-resident simulation (simulation.hpp). Boxes move on the GPU by
// the example's own kernel; every frame's overlap events come from gpu::MovingScene recorded in
// the same command buffer; the host reads the last frame of each batch only.
//
//   broadphase_simulation [--boxes N] [--frames F] [--batch K] [--seed S] [--device D]
//                         [--validation]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "simulation.hpp"

using namespace broadphase;

int main(int argc, char** argv) {
    simulation::SimulationOptions options;
    std::uint32_t frames = 60, batch = 10;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--boxes" && has_value) {
            options.boxes = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--frames" && has_value) {
            frames = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--batch" && has_value) {
            batch = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--seed" && has_value) {
            options.seed = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--device" && has_value) {
            options.device = argv[++i];
        } else if (a == "--validation") {
            options.validation = true;
        } else {
            std::fprintf(stderr,
                         "usage: broadphase_simulation [--boxes N] [--frames F] [--batch K] "
                         "[--seed S] [--device D] [--validation]\n");
            return 2;
        }
    }
    if (frames == 0 || batch == 0) {
        std::fprintf(stderr, "broadphase_simulation: --frames and --batch must be positive\n");
        return 2;
    }
    auto sim = simulation::Simulation::create(options);
    if (!sim) {
        std::fprintf(stderr, "broadphase_simulation: %s\n", sim.error().message.c_str());
        return 1;
    }
    std::printf("device: %s; %u boxes, %u frames, %u per submit\n",
                sim.value()->context().info().name.c_str(), options.boxes, frames, batch);
    for (std::uint32_t done = 0; done < frames;) {
        const std::uint32_t k = std::min(batch, frames - done);
        const auto start = std::chrono::steady_clock::now();
        auto r = sim.value()->run(k);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (!r) {
            std::fprintf(stderr, "broadphase_simulation: %s\n", r.error().message.c_str());
            return 1;
        }
        done += k;
        std::printf("frame %4u: %s, %u pairs, %zu began, %zu ended (%.2f ms per frame, wall)\n",
                    done, r->path == gpu::FramePath::rebuild ? "rebuild" : "refit  ", r->pair_count,
                    r->began.size(), r->ended.size(), ms / k);
    }
    if (sim.value()->context().validation_errors() > 0) {
        std::fprintf(stderr, "broadphase_simulation: %llu Vulkan validation errors\n",
                     static_cast<unsigned long long>(sim.value()->context().validation_errors()));
        return 1;
    }
    return 0;
}
