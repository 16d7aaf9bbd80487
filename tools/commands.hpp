// The `broadphase` command-line tool's commands. Each returns the process exit code:
// 0 success, 1 a difference was found (validate), 2 bad usage, bad input or an error (a failed
// write, out of memory, a method that failed). Options are checked before they get here
// (args.hpp): each command finds only its own options, its required ones present, numbers in
// range and names known.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "options.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#endif

namespace broadphase::tool {

/// Ends a command on an error: prints "broadphase: <message>" on standard error, or
/// "broadphase <command>: <message>" when `command` is given, and returns exit status 2.
int fail(const std::string& message, const char* command = nullptr);
/// fail(e.message, command).
inline int fail(const Error& e, const char* command = nullptr) {
    return fail(e.message, command);
}

/// `text` as the inside of a JSON string: quotes, backslashes and control characters escaped.
std::string json_escape(const std::string& text);

int run_pairs(const Args& args);
int run_validate(const Args& args);
int run_scene(const Args& args);
int run_devices(const Args& args);
/// `broadphase cull`: visible box ids of a camera, one per line, in order (cull_command.cpp).
int run_cull(const Args& args);
/// `query`: region queries from a boxes file, `q: id id ...` per query (tools/query_commands).
int run_query(const Args& args);
/// `raycast`: closest hits of a rays file, `r: id t` or `r: -` per ray.
int run_raycast(const Args& args);
/// `pairs --against B`: set-versus-set pairs `a b` (a from --scene, b from B), sorted.
int run_pairs_against(const Args& args);
/// `events`: begin/end overlap events per frame of an animated scene (tools/events_command.cpp).
int run_events(const Args& args);

/// An error when a GPU-only option (--code, --device, --validation) is given with a CPU
/// `method`, which would ignore it.
Status check_gpu_options(const Args& args, const std::string& method);

/// Every method of this build: the CPU structures of the library's registry, then gpu_lbvh
/// when built with the GPU.
std::vector<std::string> method_names();

/// The device and tuning a GPU command asks for: --device, --validation, and the benchmarks'
/// --sort-path and --traversal-budget (automatic, 0: BROADPHASE_SORT_PATH,
/// BROADPHASE_TRAVERSAL_BUDGET, else the device's; tools/environment.hpp).
struct GpuChoice {
    std::string device;
    bool validation = false;
    gpu::SortPath sort_path = gpu::SortPath::automatic;
    std::uint32_t traversal_budget = 0;
};

/// The exit status of validate and bench cpu when a method's pairs differ from the reference's.
inline constexpr int kExitDiff = 1;

/// Seconds of the steady clock since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

/// bench --warm-up's default on GPUs (milliseconds of copies before each timed run).
inline constexpr double kBenchWarmUpMs = 200;

#ifdef BROADPHASE_HAS_GPU
/// The meshes of --lods and --meshes (each with LOD 0 at 0 and LOD k at the k-th distance of
/// --lods, index ranges numbered by LOD) and each box's mesh (box i: i % --meshes).
std::vector<gpu::Mesh> lod_meshes(const std::vector<float>& lods, std::uint32_t meshes);
std::vector<std::uint32_t> lod_mesh_ids(std::uint32_t meshes, std::size_t n);
/// 0, or the bench's failure when the validation layer reported errors (printed above).
int validation_check(const gpu::Context& context);
/// A GPU context with the device and tuning of `choice`.
Result<std::unique_ptr<gpu::Context>> open_context(const GpuChoice& choice);
/// A GPU context with --device and --validation.
Result<std::unique_ptr<gpu::Context>> open_context(const Args& args);
/// bench's warm-up before each timed run (gpu::WarmUp): --warm-up MS, by default kBenchWarmUpMs
/// on GPUs and none on CPU devices (lavapipe has no clocks to raise).
class BenchWarmUp {
public:
    static Result<BenchWarmUp> create(std::optional<double> warm_up_ms, gpu::Context& context);
    /// Starts ms() of copies without waiting (nothing when ms() is 0).
    Status before_run();
    double ms() const { return ms_; }
    /// The "warm-up: ..." line of the text output.
    void print() const;

private:
    double ms_ = 0;
    std::optional<gpu::WarmUp> warm_;
};
/// A stage's bytes per second as a fraction of the copy kernel's (0 when either is not timed).
double copy_fraction(const gpu::StageReport& s, const gpu::CopyBandwidth& copy);
/// The median of v (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);
/// Per stage over runs of the same stages: the median ms, dispatches, bytes and passes (each a
/// median of its own).
std::vector<gpu::StageReport> median_stages(const std::vector<std::vector<gpu::StageReport>>& runs);
/// The bench tables' line on the copy kernel (gpu::measure_copy_bandwidth).
void print_copy_line(const gpu::CopyBandwidth& copy);
/// The bench tables' instruments: a header (stage, ms, dispatches, MB read, MB written, GB/s,
/// of copy, passes) and a row per stage, the names padded to name_width.
void print_stage_rows(const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy,
                      int name_width);
/// Opens a bench --json object: `{"device": .., "driver": .., "subgroup_size": .., `.
void print_device_json(const gpu::DeviceInfo& info);
/// Closes a bench --json object: `"copy_bandwidth": {..}, "stages": [..]}` and a newline, each
/// stage with its instruments, its copy_fraction and (a stage named for a sort, or with
/// passes) its passes.
void print_stages_json(const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy);
#endif

/// The built-in demo scene of `validate` without --scene (scripts/run.sh).
inline constexpr const char* kDemoScene = "uniform:20000";

/// Above this many boxes `validate` compares with sweep_and_prune instead of brute force, and
/// skips brute force unless --methods or --reference names it (it is O(n^2)).
inline constexpr std::size_t kBruteForceLimit = 100000;

}  // namespace broadphase::tool
