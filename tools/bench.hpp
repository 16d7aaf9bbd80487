// `broadphase bench pairs|cull|frames|rays|cpu`: each benchmark a CLI11 subcommand of `bench`
// with its own options struct, read straight into the library's enums, and its own file
// (bench_pairs.cpp, bench_cull.cpp, bench_frames.cpp, bench_rays.cpp, bench_cpu.cpp);
// bench.cpp holds `bench` itself, the GPU options the GPU benchmarks share, and the spellings
// of the previous release (`bench --cpu`, `--cull`, `--frames F`, `--rays R`).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "options.hpp"

namespace broadphase::tool {

/// What every GPU benchmark takes: the scene, the device and its tuning, the warm-up and the
/// output form.
struct BenchGpuOptions {
    std::string scene;                 ///< --scene (required)
    GpuChoice gpu;                     ///< --device, --validation, --sort-path, --traversal-budget
    std::optional<double> warm_up_ms;  ///< --warm-up (default by device: BenchWarmUp)
    bool json = false;                 ///< --json: one JSON object instead of the table
};

/// `bench pairs` (and `bench` alone): per-stage GPU times of the LBVH's build and all pairs.
struct BenchPairsOptions {
    BenchGpuOptions common;
    int repeat = 5;
    CodeKind code = CodeKind::morton30;
    bool no_refine = false;       ///< codes not adapted to the scene
    bool unsorted_pairs = false;  ///< find_pairs without the pair sort
    gpu::PairAppend pair_append = gpu::PairAppend::automatic;
    std::uint32_t pair_stack = 0;   ///< 0: the library's default
    std::uint32_t pair_budget = 0;  ///< 0: the device's first round
};

/// `bench cull`: per-stage GPU times of the frustum cull.
struct BenchCullOptions {
    BenchGpuOptions common;
    int repeat = 5;
    std::optional<Camera> camera;  ///< default: outside the scene, seeing part of it
    CullOrder order = CullOrder::exact;
    std::vector<float> lods;  ///< LOD switch distances (empty: no LODs)
    std::uint32_t meshes = 1;
    bool grouped = false;
    std::string occlusion;                       ///< a depth file or `walls` (empty: none)
    std::uint32_t views = 1;                     ///< 2..8: views culled separately and at once
    bool has_meshes = false, has_views = false;  ///< --meshes, --views given
};

/// `bench frames`: an animated moving scene's stages.
struct BenchFramesOptions {
    BenchGpuOptions common;
    int frames = 0;  ///< --frames F (required)
    CodeKind code = CodeKind::morton30;
    gpu::RefitPolicy policy = gpu::RefitPolicy::by_ratio;
    std::optional<double> rebuild_ratio, rebuild_work_ratio;  ///< default: the library's
    bool back_to_back = false;
    double churn = 0;         ///< percent; 0: a MovingScene, else a ProxyScene
    std::uint32_t seed = 42;  ///< the churn's bodies
};

/// `bench rays`: ray casts and region queries per second.
struct BenchRaysOptions {
    BenchGpuOptions common;
    int repeat = 3;
    long long rays = 0;  ///< --rays R (required): R rays and R regions
    std::uint32_t seed = 42;
    CodeKind code = CodeKind::morton30;
    std::uint32_t query_budget = 0;  ///< 0: the device's first round
};

/// `bench cpu`: every CPU structure on the standard scenes over a range of sizes.
struct BenchCpuOptions {
    std::vector<std::string> scenes;  ///< generator names (empty: all)
    std::vector<std::size_t> sizes = {1000, 10000, 100000, 1000000};  ///< ascending after parse
    std::vector<std::string> methods;                                 ///< CPU methods (empty: all)
    double max_seconds = 10;                                          ///< per-run budget
    std::string out_dir = ".";                                        ///< the PNG plots' folder
    std::string table;  ///< the markdown table's file (empty: none)
};

/// The GPU options every GPU benchmark shares, added to `c` into `o`.
void add_bench_gpu_options(CLI::App& c, BenchGpuOptions& o);
/// A first-round budget of a bounded traversal (`name`: --pair-budget, --query-budget): steps one
/// invocation of `what` takes in its first round, by default `scale` times the traversal budget.
CLI::Option* add_first_round_budget(CLI::App& c, const std::string& name, std::uint32_t& value,
                                    const std::string& what, std::uint32_t scale);
/// --repeat R into `repeat`, whose current value is the default.
CLI::Option* add_bench_repeat(CLI::App& c, int& repeat);

#ifdef BROADPHASE_HAS_GPU
/// The text output's first line: the device, its driver, subgroup size and traversal budget
/// (and a warning when its queue has no timestamps).
void print_bench_device(const gpu::Context& context);
#endif

/// Each adds the options of its subcommand `c` (made by add_bench_command), read into `o`, which
/// must outlive the parse.
void add_bench_pairs(CLI::App& c, BenchPairsOptions& o);
void add_bench_cull(CLI::App& c, BenchCullOptions& o);
void add_bench_frames(CLI::App& c, BenchFramesOptions& o);
void add_bench_rays(CLI::App& c, BenchRaysOptions& o);
void add_bench_cpu(CLI::App& c, BenchCpuOptions& o);

/// Each runs its benchmark (its file); the GPU ones are in the GPU build only.
int run_bench(const BenchCpuOptions& o);
#ifdef BROADPHASE_HAS_GPU
int run_bench(const BenchPairsOptions& o);
int run_bench(const BenchCullOptions& o);
int run_bench(const BenchFramesOptions& o);
int run_bench(const BenchRaysOptions& o);
#else
/// Without the GPU library a GPU benchmark reads its options as in the GPU build, then says
/// what is missing.
template <class Options>
int run_bench(const Options&) {
    return fail("this build has no GPU support", "bench");
}
#endif

/// `bench` and its subcommands in `app`: after a parse, run() runs the one chosen.
struct BenchCommand {
    CLI::App* app = nullptr;
    std::vector<std::pair<CLI::App*, std::function<int()>>> subcommands;
    /// The chosen subcommand's runner (empty when none was parsed).
    std::function<int()> run() const;
};
BenchCommand add_bench_command(CLI::App& app);

/// argv with the previous release's `bench` spellings turned into subcommands: `bench --cpu
/// ...` is `bench cpu ...`, `--cull` `bench cull`, `--frames F` `bench frames --frames F`,
/// `--rays R` `bench rays --rays R`, each with a line on standard error naming the new
/// spelling; and `bench` without a subcommand is `bench pairs` (its help aside). Two old
/// selectors together are an error: `error` says so.
std::vector<std::string> bench_arguments(int argc, char** argv, std::string& error);

}  // namespace broadphase::tool
