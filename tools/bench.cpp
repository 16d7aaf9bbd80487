// `broadphase bench`: the parent of the benchmark subcommands (bench.hpp), the GPU options they
// share, and the previous release's spellings (`bench --cpu`, `--cull`, `--frames`, `--rays`),
// which still work for one release with a deprecation line.
#include "bench.hpp"

#include <cstdio>
#include <string_view>

#include "broadphase/gpu/layout/common.h"

namespace broadphase::tool {

void add_bench_gpu_options(CLI::App& c, BenchGpuOptions& o) {
    add_scene(c, o.scene)->required();
    add_device(c, o.gpu.device);
    add_validation(c, o.gpu.validation);
    c.add_option("--warm-up", o.warm_up_ms,
                 "milliseconds of copy kernels submitted before each timed run, so that it starts "
                 "with the GPU's clocks up (0..10000; default " +
                     std::to_string(int(kBenchWarmUpMs)) + " on GPUs, 0 on CPU devices)")
        ->type_name("MS")
        ->check(CLI::Range(0.0, 10000.0));
    cli::add_integer(c, "--traversal-budget", o.gpu.traversal_budget, "N", 1,
                     gpu_layout::kTraversalBudget,
                     "nodes one invocation of the all-pairs, region and ray traversals expands per "
                     "round before queueing the rest (1.." +
                         std::to_string(gpu_layout::kTraversalBudget) +
                         "; default: BROADPHASE_TRAVERSAL_BUDGET, else the device's)");
    add_enum(c, "--sort-path", o.gpu.sort_path,
             "the radix sort (onesweep: one pass per digit with decoupled look-back; "
             "reduce_then_scan: histogram, scan and scatter per digit, safe everywhere; "
             "automatic: BROADPHASE_SORT_PATH, else the device's rule)",
             sort_path_names(), "sort path");
    c.add_flag("--json", o.json,
               "print one JSON object (device, scene, copy bandwidth, a `stages` list) instead of "
               "the table");
}

CLI::Option* add_first_round_budget(CLI::App& c, const std::string& name, std::uint32_t& value,
                                    const std::string& what, std::uint32_t scale) {
    return cli::add_integer(
        c, name, value, "N", 1, gpu_layout::kTraversalBudget,
        what + " takes in its first round (1.." + std::to_string(gpu_layout::kTraversalBudget) +
            "; default " + std::to_string(scale) +
            " times the traversal budget); later rounds take the traversal budget");
}

CLI::Option* add_bench_repeat(CLI::App& c, int& repeat) {
    return cli::add_integer(
        c, "--repeat", repeat, "R", 1, 1000,
        with_default("runs (1..1000) after a warm-up; medians", std::to_string(repeat)));
}

#ifdef BROADPHASE_HAS_GPU
void print_bench_device(const gpu::Context& context) {
    const gpu::DeviceInfo& info = context.info();
    std::printf("device: %s (%s), subgroup size %u, traversal budget %u\n", info.name.c_str(),
                info.driver.c_str(), info.subgroup_size, info.traversal_budget);
    if (info.timestamp_period_ns == 0) std::printf("warning: this queue has no timestamps\n");
}
#endif

std::function<int()> BenchCommand::run() const {
    for (const auto& [sub, runner] : subcommands)
        if (sub->parsed()) return runner;
    return {};
}

BenchCommand add_bench_command(CLI::App& app) {
    BenchCommand b;
    b.app = app.add_subcommand(
        "bench",
        "benchmarks: `bench pairs` (also `bench` alone) the GPU LBVH's stages on --scene, `bench "
        "cull` the frustum cull, `bench frames` a moving scene, `bench rays` ray casts and region "
        "queries, `bench cpu` every CPU structure over a range of sizes");
    b.app->group("commands");
    b.app->require_subcommand(1);
    b.app->footer(
        "broadphase bench COMMAND --help lists the options of COMMAND. The previous release's "
        "`bench --cpu`, `--cull`, `--frames F` and `--rays R` still work, with a deprecation "
        "line.");
    // Each subcommand's options, alive as long as its runner.
    struct Options {
        BenchPairsOptions pairs;
        BenchCullOptions cull;
        BenchFramesOptions frames;
        BenchRaysOptions rays;
        BenchCpuOptions cpu;
    };
    auto o = std::make_shared<Options>();
    // Each subcommand: its name and description (bench --help lists them), its options (its
    // file), and what runs it.
    const auto add = [&](const char* name, const std::string& description, auto add_options,
                         auto& options) {
        CLI::App* sub = b.app->add_subcommand(name, description);
        sub->group("commands");
        sub->footer(
            "S is a scene file or a generator NAME:COUNT[:SEED] (broadphase --help says more).");
        add_options(*sub, options);
        b.subcommands.emplace_back(sub, [o, &options] { return run_bench(options); });
    };
    add("pairs",
        "time the GPU LBVH's stages (timestamp queries) on --scene: build, all pairs, pair sort "
        "(the default of `bench`)",
        add_bench_pairs, o->pairs);
    add("cull", "time the frustum cull's stages (timestamp queries) on --scene", add_bench_cull,
        o->cull);
    add("frames",
        "time an animated moving scene's stages: median GPU ms per stage, refit and rebuild "
        "counts",
        add_bench_frames, o->frames);
    add("rays", "time ray casts and region queries per second on --scene (GPU)", add_bench_rays,
        o->rays);
    add("cpu",
        "time build + self-pairs of every CPU structure on the standard scenes (one core): a "
        "markdown table and one PNG per scene; progress on standard error when it is a terminal",
        add_bench_cpu, o->cpu);
    return b;
}

std::vector<std::string> bench_arguments(int argc, char** argv, std::string& error) {
    std::vector<std::string> args(argv, argv + argc);
    if (args.size() < 2 || args[1] != "bench") return args;
    for (const char* sub : {"pairs", "cull", "frames", "rays", "cpu"})
        if (args.size() > 2 && args[2] == sub) return args;
    // The old selectors: the subcommand each names, and whether it keeps its option
    // (--frames F and --rays R are the counts of bench frames and bench rays).
    struct Old {
        const char* flag;
        const char* sub;
        bool kept;
    };
    const Old olds[] = {{"--cpu", "cpu", false},
                        {"--cull", "cull", false},
                        {"--frames", "frames", true},
                        {"--rays", "rays", true}};
    const Old* found = nullptr;
    std::size_t at = 0;
    for (std::size_t i = 2; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        for (const Old& old : olds) {
            const std::string_view flag = old.flag;
            if (arg != flag && arg.substr(0, flag.size() + 1) != std::string(flag) + "=") continue;
            if (found != nullptr && found != &old) {
                error = std::string(found->flag) + " and " + old.flag + " cannot be combined";
                return args;
            }
            found = &old;
            at = i;
        }
    }
    if (found == nullptr) {
        const bool help = args.size() > 2 && (args[2] == "-h" || args[2] == "--help");
        if (!help) args.insert(args.begin() + 2, "pairs");
        return args;
    }
    std::fprintf(stderr,
                 "broadphase: `bench %s` is deprecated and goes in the next release; use `bench "
                 "%s%s`\n",
                 found->flag, found->sub,
                 found->kept ? (std::string(" ") + found->flag).c_str() : "");
    if (!found->kept) args.erase(args.begin() + static_cast<std::ptrdiff_t>(at));
    args.insert(args.begin() + 2, found->sub);
    return args;
}

}  // namespace broadphase::tool
