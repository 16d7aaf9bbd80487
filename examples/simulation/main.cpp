// broadphase_simulation: a GPU-resident simulation (simulation.hpp). Boxes move on the GPU by
// the example's own kernel; every frame's overlap events come from gpu::MovingScene recorded in
// the same command buffer; the host reads the last frame of each batch only. With --spawn,
// bodies come and go instead (spawner.hpp): crates dropped every frame onto a static ground,
// shattered into debris that never meets other debris, despawned, all through gpu::ProxyScene.
//
//   broadphase_simulation [--boxes N] [--frames F] [--batch K] [--seed S] [--device D]
//                         [--validation]
//   broadphase_simulation --spawn C [--lifetime L] [--check METHOD] [--frames F] [--seed S]
//                         [--device D] [--validation]
// (CLI11: --help lists them; a bad or unknown option exits with 2, naming it.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../../tools/cli_options.hpp"
#include "broadphase/proxies.hpp"
#include "broadphase/structure.hpp"
#include "simulation.hpp"
#include "spawner.hpp"

using namespace broadphase;

namespace {

// Calls f() and returns its result, with its wall time in `ms`.
template <class F>
auto timed(F&& f, double& ms) {
    const auto start = std::chrono::steady_clock::now();
    auto result = f();
    ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

// --check METHOD: a CPU method of the library (an unknown name gets the nearest known one, as the
// tool's --method does) that ProxyWorld takes, a dynamic structure (its own words otherwise).
CLI::Validator proxy_method_check() {
    std::vector<std::string> names;
    for (std::string_view m : cpu_method_names()) names.emplace_back(m);
    const CLI::Validator known = cli::one_of(names, "method");
    return CLI::Validator(
        [known](std::string& text) -> std::string {
            if (std::string error = known(text); !error.empty()) return error;
            auto world = ProxyWorld::create(text);
            return world ? std::string() : world.error().message;
        },
        "");
}

int fail(const Error& error) {
    std::fprintf(stderr, "broadphase_simulation: %s\n", error.message.c_str());
    return 1;
}

// The --spawn loop: one line per frame.
int run_spawner(const simulation::SpawnerOptions& options, std::uint32_t frames) {
    auto spawner = simulation::Spawner::create(options);
    if (!spawner) return fail(spawner.error());
    simulation::Spawner& world = *spawner.value();
    std::printf("device: %s; %u crates dropped per frame, living %u frames, %u debris each%s%s\n",
                world.context().info().name.c_str(), options.spawn_per_frame, options.lifetime,
                options.pieces, options.check_with.empty() ? "" : ", checked against ",
                options.check_with.c_str());
    for (std::uint32_t f = 0; f < frames; ++f) {
        double ms = 0;
        auto r = timed([&] { return world.step(); }, ms);
        if (!r) return fail(r.error());
        std::printf(
            "frame %4u: %u live (%u debris), +%u -%u bodies, %u moved, %llu pairs, "
            "%zu began, %zu ended (%.2f ms, wall)\n",
            f, r->live, r->debris, r->spawned, r->despawned, r->moved,
            static_cast<unsigned long long>(r->frame.pair_count), r->frame.began.size(),
            r->frame.ended.size(), ms);
    }
    if (world.context().validation_errors() > 0) {
        std::fprintf(stderr, "broadphase_simulation: %llu Vulkan validation errors\n",
                     static_cast<unsigned long long>(world.context().validation_errors()));
        return 1;
    }
    if (!options.check_with.empty())
        std::printf(
            "check: all %u frames agree with the CPU proxy world over %s (pairs, began and "
            "ended, exactly)\n",
            frames, options.check_with.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    simulation::SimulationOptions options;
    std::uint32_t frames = 60, batch = 10;
    CLI::App app{
        "A GPU-resident simulation: the boxes move on the GPU, and each frame's overlap "
        "events come from gpu::MovingScene recorded in the same command buffer",
        "broadphase_simulation"};
    cli::set_conventions(app);
    auto with_default = [](const char* text, std::uint32_t value) {
        return std::string(text) + " (default " + std::to_string(value) + ")";
    };
    cli::add_integer(
        app, "--boxes", options.boxes, "N", 1, 50000000,
        with_default("boxes of a uniform scene in the unit cube (1..50000000)", options.boxes));
    cli::add_integer(app, "--frames", frames, "F", 1, 1000000,
                     with_default("frames to run (1..1000000)", frames));
    cli::add_integer(app, "--batch", batch, "K", 1, 100000,
                     with_default("frames recorded into one submit (1..100000)", batch));
    cli::add_integer(
        app, "--seed", options.seed, "S", 0, 4294967295,
        with_default("seed of the scene and the velocities (0..4294967295)", options.seed));
    app.add_option("--device", options.device,
                   "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or the "
                   "first)")
        ->type_name("D");
    app.add_flag("--validation", options.validation,
                 "turn on the Vulkan validation layer (also BROADPHASE_VALIDATION=1)");
    simulation::SpawnerOptions spawn;
    auto* spawn_option =
        cli::add_integer(app, "--spawn", spawn.spawn_per_frame, "C", 1, 1000000,
                         "bodies that come and go instead: drop C crates per frame onto a static "
                         "ground (gpu::ProxyScene; crates shatter into debris that never meets "
                         "other debris)");
    cli::add_integer(app, "--lifetime", spawn.lifetime, "L", 1, 100000,
                     with_default("with --spawn: frames a crate lives (1..100000)", spawn.lifetime))
        ->needs(spawn_option);
    app.add_option("--check", spawn.check_with,
                   "with --spawn: compare every frame with a CPU proxy world over METHOD (a "
                   "dynamic structure, e.g. dynamic_aabb_tree); then one line says that "
                   "every frame agreed")
        ->type_name("METHOD")
        ->check(proxy_method_check())
        ->needs(spawn_option);
    spawn_option->excludes(app.get_option("--boxes"))->excludes(app.get_option("--batch"));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::report(app, e);
    }
    if (*spawn_option) {
        spawn.seed = options.seed;
        spawn.validation = options.validation;
        spawn.device = options.device;
        return run_spawner(spawn, frames);
    }
    auto sim = simulation::Simulation::create(options);
    if (!sim) return fail(sim.error());
    std::printf("device: %s; %u boxes, %u frames, %u per submit\n",
                sim.value()->context().info().name.c_str(), options.boxes, frames, batch);
    for (std::uint32_t done = 0; done < frames;) {
        const std::uint32_t k = std::min(batch, frames - done);
        double ms = 0;
        auto r = timed([&] { return sim.value()->run(k); }, ms);
        if (!r) return fail(r.error());
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
