// broadphase_simulation: a GPU-resident simulation (simulation.hpp). Boxes move on the GPU by
// the example's own kernel; every frame's overlap events come from gpu::MovingScene recorded in
// the same command buffer; the host reads the last frame of each batch only.
//
//   broadphase_simulation [--boxes N] [--frames F] [--batch K] [--seed S] [--device D]
//                         [--validation]
// (CLI11: --help lists them; a bad or unknown option exits with 2, naming it.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "../../tools/cli_options.hpp"
#include "simulation.hpp"

using namespace broadphase;

int main(int argc, char** argv) {
    simulation::SimulationOptions options;
    std::uint32_t frames = 60, batch = 10;
    CLI::App app{
        "A GPU-resident simulation: the boxes move on the GPU, and each frame's overlap "
        "events come from gpu::MovingScene recorded in the same command buffer",
        "broadphase_simulation"};
    app.formatter(std::make_shared<cli::HelpFormatter>());
    app.set_help_flag("-h,--help", "print this help and exit");
    app.option_defaults()->disable_flag_override();
    auto with_default = [](const char* text, std::uint32_t value) {
        return std::string(text) + " (default " + std::to_string(value) + ")";
    };
    app.add_option(
           "--boxes", options.boxes,
           with_default("boxes of a uniform scene in the unit cube (1..50000000)", options.boxes))
        ->type_name("N")
        ->transform(cli::integer_in(1, 50000000));
    app.add_option("--frames", frames, with_default("frames to run (1..1000000)", frames))
        ->type_name("F")
        ->transform(cli::integer_in(1, 1000000));
    app.add_option("--batch", batch,
                   with_default("frames recorded into one submit (1..100000)", batch))
        ->type_name("K")
        ->transform(cli::integer_in(1, 100000));
    app.add_option(
           "--seed", options.seed,
           with_default("seed of the scene and the velocities (0..4294967295)", options.seed))
        ->type_name("S")
        ->transform(cli::integer_in(0, 4294967295));
    app.add_option("--device", options.device,
                   "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or the "
                   "first)")
        ->type_name("D");
    app.add_flag("--validation", options.validation,
                 "turn on the Vulkan validation layer (also BROADPHASE_VALIDATION=1)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::report(app, e);
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
