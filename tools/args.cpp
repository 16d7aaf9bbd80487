// The tool's command line (see args.hpp): each command, each of its options (once, with its
// check and its default) and the modes of `bench`, read by CLI11.
#include "args.hpp"

#include <algorithm>
#include <memory>
#include <sstream>

#include "broadphase/gpu/layout/common.h"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "broadphase/version.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

namespace broadphase::tool {
namespace {

using cli::integer_in;
using cli::joined;
using cli::one_of;
using cli::real_in;

std::string with_default(const std::string& description, const std::string& value) {
    return description + " (default " + value + ")";
}

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
    return {views.begin(), views.end()};
}

std::vector<std::string> cpu_methods() {
    return strings(cpu_method_names());
}

/// A method-name check: `names`, and for gpu_lbvh in a build without it a note saying so.
CLI::Validator method_check(std::vector<std::string> names) {
    return one_of(std::move(names), "method", "gpu_lbvh", "this build has no GPU support");
}

/// An option naming one of `values`, the first its default, shown as a|b|c; `what` names the
/// kind of value in errors.
CLI::Option* add_choice(CLI::App& c, const std::string& name, std::string& value,
                        const std::string& description, const std::vector<std::string>& values,
                        const std::string& what) {
    value = values.front();
    return c.add_option(name, value, with_default(description, value))
        ->type_name(joined(values, "|"))
        ->check(one_of(values, what));
}

/// A comma-separated list option, shown as `text` ("a,b,...") in the help and the usage.
template <class T>
CLI::Option* add_list(CLI::App& c, const std::string& name, std::vector<T>& values,
                      const std::string& description, const std::string& text) {
    return c.add_option(name, values, description)
        ->type_name(text)
        ->option_text(text)
        ->delimiter(',');
}

// ---- Options shared by several commands: each defined here once. ----

CLI::Option* add_scene(CLI::App& c, Args& a) {
    return c
        .add_option("--scene", a.scene,
                    "a scene: a text or .obj file, or a generator NAME:COUNT[:SEED]")
        ->type_name("S");
}

CLI::Option* add_method(CLI::App& c, Args& a) {
    const std::vector<std::string> names = method_names();
    return c.add_option("--method", a.method, "one of " + joined(names))
        ->type_name("M")
        ->check(method_check(names));
}

CLI::Option* add_out(CLI::App& c, Args& a) {
    return c.add_option("--out", a.out, "write to FILE instead of standard output")
        ->type_name("FILE");
}

CLI::Option* add_device(CLI::App& c, Args& a) {
    return c
        .add_option("--device", a.device,
                    "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or "
                    "the first)")
        ->type_name("INDEX|NAME");
}

CLI::Option* add_validation(CLI::App& c, Args& a) {
    return c.add_flag("--validation", a.validation, "turn on the Vulkan validation layer");
}

CLI::Option* add_code(CLI::App& c, Args& a) {
    return add_choice(c, "--code", a.code, "the LBVH's space-filling curve",
                      {"morton30", "morton63", "hilbert30"}, "code");
}

/// --code, --device and --validation: the options of gpu_lbvh.
void add_gpu(CLI::App& c, Args& a) {
    add_code(c, a);
    add_device(c, a);
    add_validation(c, a);
}

CLI::Option* add_camera(CLI::App& c, Args& a, const std::string& description) {
    return c
        .add_option_function<std::string>(
            "--camera",
            [&a](const std::string& text) {
                auto camera = parse_camera(text);
                if (!camera) throw CLI::ValidationError("--camera", camera.error().message);
                a.camera = camera.value();
            },
            description + "; eye(3),target(3),up(3),fovy_deg,aspect,near,far")
        ->type_name("C");
}

// --lods, --meshes and --grouped of cull and bench --cull (gpu::Culler::cull_lods).
std::vector<CLI::Option*> add_lods(CLI::App& c, Args& a) {
    CLI::Option* lods =
        add_list(c, "--lods", a.lods,
                 "LOD switch distances, ascending and above 0: an instance at distance d from "
                 "the eye is drawn at the LOD k of the largest D_k <= d (LOD 0 nearer than D_1); "
                 "gpu_lbvh only",
                 "D1,D2,...")
            ->check(real_in(0, 3.4e38));
    CLI::Option* meshes =
        c.add_option("--meshes", a.meshes,
                     "with --lods: K meshes (1..65536), box i of mesh i % K, all with the LODs "
                     "of --lods")
            ->type_name("K")
            ->transform(integer_in(1, 65536));
    CLI::Option* grouped = c.add_flag(
        "--grouped", a.grouped, "with --lods: the draws grouped per mesh, front to back in each");
    return {lods, meshes, grouped};
}

CLI::Option* add_order(CLI::App& c, Args& a) {
    return add_choice(c, "--order", a.order,
                      "exact: by distance from the eye, then id; approx: the method's "
                      "front-to-back order",
                      {"exact", "approx"}, "order");
}

CLI::Option* add_policy(CLI::App& c, Args& a) {
    return add_choice(c, "--policy", a.policy,
                      "gpu_lbvh per frame: refit, then rebuild when the surface-area ratio "
                      "exceeds --rebuild-ratio; or always refit, always rebuild",
                      {"ratio", "refit", "rebuild"}, "policy");
}

// The defaults of gpu::MovingSceneOptions' ratios as text ("the library's" without GPU
// support): rebuild_ratio, or rebuild_work_ratio when `work`.
std::string default_moving_ratio([[maybe_unused]] bool work) {
#ifdef BROADPHASE_HAS_GPU
    std::ostringstream text;
    const gpu::MovingSceneOptions defaults;
    text << (work ? defaults.rebuild_work_ratio : defaults.rebuild_ratio);
    return text.str();
#else
    return "the library's";
#endif
}

/// --rebuild-ratio R, or --rebuild-work-ratio W when `work` (gpu::MovingSceneOptions' ratios).
CLI::Option* add_rebuild_ratio(CLI::App& c, Args& a, bool work) {
    const std::string description =
        work ? "--policy ratio: also rebuild when a frame's pair traversal expanded more than W "
               "times the nodes per box and pair of the first one after the last build (0: off)"
             : "--policy ratio: rebuild when the refitted tree's cost exceeds R times the cost "
               "after the last build";
    return c
        .add_option(work ? "--rebuild-work-ratio" : "--rebuild-ratio",
                    work ? a.rebuild_work_ratio : a.rebuild_ratio,
                    with_default(description, default_moving_ratio(work)))
        ->type_name(work ? "W" : "R")
        ->check(real_in(0, 1e9));
}

CLI::Option* add_repeat(CLI::App& c, Args& a) {
    return c
        .add_option("--repeat", a.repeat,
                    "runs (1..1000) after a warm-up; medians (default 5, --rays: 3)")
        ->type_name("R")
        ->transform(integer_in(1, 1000));
}

/// query and raycast: --scene S, their input `name` (a file or scene, required), --method M,
/// --out and the options of gpu_lbvh.
void add_query_options(CLI::App& c, Args& a, const std::string& name, std::string& input,
                       const std::string& description, const std::string& type_name) {
    add_scene(c, a)->required();
    c.add_option(name, input, description)->type_name(type_name)->required();
    add_method(c, a)->required();
    add_out(c, a);
    add_gpu(c, a);
}

// ---- The commands. ----

/// `bench` and its modes: the default mode (per-stage GPU times of the LBVH) and --cull, --cpu,
/// --frames F, --rays R, each with the options it takes.
struct BenchMode {
    std::string name;       ///< "" for the default mode, "--cpu", ...
    CLI::Option* selector;  ///< the option that picks the mode (null for the default)
    std::vector<CLI::Option*> options;
    bool needs_scene;
};

// A first-round budget of a bounded traversal (--pair-budget, --query-budget): steps one
// invocation of `what` takes in its first round, by default `scale` times the traversal budget.
CLI::Option* add_first_round_budget(CLI::App& c, const std::string& name, std::uint32_t& value,
                                    const std::string& what, std::uint32_t scale,
                                    const std::string& group) {
    return c
        .add_option(name, value,
                    what + " takes in its first round (1.." +
                        std::to_string(gpu_layout::kTraversalBudget) + "; default " +
                        std::to_string(scale) +
                        " times the traversal budget); later rounds take the traversal budget")
        ->type_name("N")
        ->transform(integer_in(1, gpu_layout::kTraversalBudget))
        ->group(group);
}

std::vector<BenchMode> add_bench_options(CLI::App& c, Args& a) {
    const char* kGpu = "GPU modes (all but --cpu)";
    CLI::Option* scene = add_scene(c, a)->group(kGpu);
    CLI::Option* repeat = add_repeat(c, a)->group(kGpu);
    CLI::Option* code = add_code(c, a)->group(kGpu);
    CLI::Option* device = add_device(c, a)->group(kGpu);
    CLI::Option* validation = add_validation(c, a)->group(kGpu);
    CLI::Option* no_refine =
        c.add_flag("--no-refine", a.no_refine,
                   "default mode: codes not adapted to the scene (no second sort of long runs)")
            ->group(kGpu);
    CLI::Option* unsorted_pairs =
        c.add_flag("--unsorted-pairs", a.unsorted_pairs,
                   "default mode: the pairs as the traversal appended them, without the pair "
                   "sort (LbvhOptions::sorted_pairs false)")
            ->group(kGpu);
    CLI::Option* pair_append =
        add_choice(c, "--pair-append", a.pair_append,
                   "default mode: how the all-pairs pass reserves output slots (subgroup: one "
                   "atomic per subgroup, needs subgroup ballot; atomic: one per pair; automatic: "
                   "subgroup where the device has ballot)",
                   {"automatic", "subgroup", "atomic"}, "pair append")
            ->group(kGpu);
    CLI::Option* pair_stack =
        c.add_option("--pair-stack", a.pair_stack,
                     "default mode: stack entries of the all-pairs traversal before a subtree "
                     "goes to the next round's work queue (1.." +
                         std::to_string(gpu_layout::kPairStack) + "; default " +
                         std::to_string(gpu_layout::kPairStack) + ")")
            ->type_name("N")
            ->transform(integer_in(1, gpu_layout::kPairStack))
            ->group(kGpu);
    CLI::Option* pair_budget =
        add_first_round_budget(c, "--pair-budget", a.pair_budget,
                               "default mode: steps one invocation of the all-pairs traversal",
                               gpu_layout::kPairGroup, kGpu);
    CLI::Option* warm_up =
        c.add_option("--warm-up", a.warm_up_ms,
                     "GPU modes: milliseconds of copy kernels submitted before each timed run, "
                     "so that it starts with the GPU's clocks up (0..10000; default " +
                         std::to_string(int(kBenchWarmUpMs)) + " on GPUs, 0 on CPU devices)")
            ->type_name("MS")
            ->check(CLI::Range(0.0, 10000.0))
            ->group(kGpu);
    CLI::Option* traversal_budget =
        c.add_option("--traversal-budget", a.traversal_budget,
                     "default mode, --frames and --rays: nodes one invocation of the all-pairs, "
                     "region and ray traversals expands per round before queueing the rest (1.." +
                         std::to_string(gpu_layout::kTraversalBudget) +
                         "; default: BROADPHASE_TRAVERSAL_BUDGET, else the device's)")
            ->type_name("N")
            ->transform(integer_in(1, gpu_layout::kTraversalBudget))
            ->group(kGpu);
    CLI::Option* sort_path =
        add_choice(c, "--sort-path", a.sort_path,
                   "GPU modes: the radix sort (onesweep: one pass per digit with decoupled "
                   "look-back; reduce_then_scan: histogram, scan and scatter per digit, safe "
                   "everywhere; automatic: BROADPHASE_SORT_PATH, else the device's rule)",
                   {"automatic", "onesweep", "reduce_then_scan"}, "sort path")
            ->group(kGpu);
    CLI::Option* json =
        c.add_flag("--json", a.json,
                   "default mode, --cull, --frames and --rays: print one JSON object "
                   "(device, scene, copy bandwidth, a `stages` list) instead of "
                   "the table")
            ->group(kGpu);

    const char* kCull = "--cull: the frustum cull's stages";
    CLI::Option* cull = c.add_flag("--cull", a.cull, "time the frustum cull")->group(kCull);
    CLI::Option* camera =
        add_camera(c, a, "the camera (default: outside the scene, seeing part of it)")
            ->group(kCull);
    CLI::Option* order = add_order(c, a)->group(kCull);
    std::vector<CLI::Option*> lod_options = add_lods(c, a);
    for (CLI::Option* o : lod_options) o->group(kCull);
    CLI::Option* occlusion =
        c.add_option("--occlusion", a.occlusion,
                     "also cull against a depth image: a depth file (docs/occlusion.md) or "
                     "`walls` (512 x 512, a wall over the middle half at the median visible "
                     "depth)")
            ->type_name("DEPTHFILE")
            ->group(kCull);
    CLI::Option* views =
        c.add_option("--views", a.views,
                     "V views (2..8: the camera turned by 360/V degrees about its up axis each): "
                     "the V culls one after another against one cull of all V (one traversal)")
            ->type_name("V")
            ->transform(integer_in(2, 8))
            ->group(kCull);

    const char* kCpu = "--cpu: every CPU structure, a table and one PNG per scene";
    CLI::Option* cpu =
        c.add_flag("--cpu", a.cpu,
                   "time build + self-pairs of every CPU structure on the standard scenes "
                   "(one core); progress on standard error when it is a terminal")
            ->group(kCpu);
    const std::vector<std::string> generators = strings(generator_names());
    CLI::Option* scenes =
        add_list(c, "--scenes", a.scenes,
                 "generators, comma-separated (default: all of " + joined(generators) + ")",
                 "a,b,...")
            ->check(one_of(generators, "generator"))
            ->group(kCpu);
    a.sizes = {1000, 10000, 100000, 1000000};
    std::vector<std::string> size_text;
    for (std::size_t n : a.sizes) size_text.push_back(std::to_string(n));
    CLI::Option* sizes = add_list(c, "--sizes", a.sizes,
                                  with_default("box counts", joined(size_text, ",")), "N,N,...")
                             ->transform(integer_in(1, 4294967295))
                             ->group(kCpu);
    const std::vector<std::string> cpu_names = cpu_methods();
    CLI::Option* methods =
        add_list(c, "--methods", a.methods,
                 "CPU methods, comma-separated (default: all of " + joined(cpu_names) + ")",
                 "a,b,...")
            ->check(method_check(cpu_names))
            ->group(kCpu);
    a.max_seconds = 10;
    CLI::Option* max_seconds =
        c.add_option("--max-seconds", a.max_seconds,
                     with_default("per-run budget: a method is not started at a size where its "
                                  "time, extrapolated from the smaller sizes, exceeds S seconds",
                                  "10"))
            ->type_name("S")
            ->check(real_in(0, 1e6))
            ->group(kCpu);
    a.out_dir = ".";
    CLI::Option* out_dir =
        c.add_option("--out-dir", a.out_dir, with_default("folder of the PNG plots", a.out_dir))
            ->type_name("DIR")
            ->group(kCpu);
    CLI::Option* table = c.add_option("--table", a.table, "also write the markdown table to FILE")
                             ->type_name("FILE")
                             ->group(kCpu);

    const char* kFrames = "--frames F: an animated moving scene's stages";
    CLI::Option* frames = c.add_option("--frames", a.frames,
                                       "animate --scene for F frames (1..10000); median GPU ms "
                                       "per stage, refit and rebuild counts")
                              ->type_name("F")
                              ->transform(integer_in(1, 10000))
                              ->group(kFrames);
    CLI::Option* policy = add_policy(c, a)->group(kFrames);
    CLI::Option* rebuild_ratio = add_rebuild_ratio(c, a, false)->group(kFrames);
    CLI::Option* rebuild_work_ratio = add_rebuild_ratio(c, a, true)->group(kFrames);
    CLI::Option* back_to_back =
        c.add_flag("--back-to-back", a.back_to_back,
                   "also record all F frames into one submit (wall ms per frame)")
            ->group(kFrames);
    CLI::Option* churn =
        c.add_option("--churn", a.churn,
                     "run the frames on a gpu::ProxyScene: every body moves, P% of them are "
                     "removed and P% added each frame, half of those debris that does not "
                     "collide with debris (0 < P <= 50)")
            ->type_name("P")
            ->check(CLI::Range(0.0, 50.0))
            ->group(kFrames);

    const char* kRays = "--rays R: ray casts and region queries per second";
    CLI::Option* rays =
        c.add_option("--rays", a.ray_count, "R random rays and R region queries (1..100000000)")
            ->type_name("R")
            ->transform(integer_in(1, 100000000))
            ->group(kRays);
    a.seed = 42;
    CLI::Option* seed = c.add_option("--seed", a.seed,
                                     with_default("seed of the rays and regions (0..4294967295)",
                                                  std::to_string(a.seed)))
                            ->type_name("X")
                            ->transform(integer_in(0, 4294967295))
                            ->group(kRays);
    CLI::Option* query_budget = add_first_round_budget(
        c, "--query-budget", a.query_budget, "steps one invocation of a ray cast or region query",
        gpu_layout::kQueryFirstRound, kRays);

    return {
        {"",
         nullptr,
         {scene, repeat, code, no_refine, unsorted_pairs, pair_append, pair_stack, pair_budget,
          traversal_budget, warm_up, sort_path, json, device, validation},
         true},
        {"--cull",
         cull,
         {scene, camera, order, lod_options[0], lod_options[1], lod_options[2], occlusion, views,
          repeat, warm_up, sort_path, json, device, validation},
         true},
        {"--cpu", cpu, {scenes, sizes, methods, max_seconds, out_dir, table}, false},
        {"--frames",
         frames,
         {scene, policy, rebuild_ratio, rebuild_work_ratio, back_to_back, churn, code,
          traversal_budget, warm_up, sort_path, json, device, validation},
         true},
        {"--rays",
         rays,
         {scene, repeat, seed, code, traversal_budget, query_budget, warm_up, sort_path, json,
          device, validation},
         true},
    };
}

/// After parsing `bench`: at most one mode, only that mode's options, --scene where needed.
void check_bench(const CLI::App& c, const std::vector<BenchMode>& modes, Args& a) {
    const BenchMode* mode = &modes.front();
    for (const BenchMode& m : modes) {
        if (m.selector == nullptr || m.selector->count() == 0) continue;
        if (mode->selector != nullptr)
            throw CLI::ValidationError(mode->name + " and " + m.name + " cannot be combined");
        mode = &m;
    }
    a.command = mode->selector ? "bench " + mode->name : "bench";
    std::vector<std::string> takes;
    for (const CLI::Option* o : mode->options)
        takes.push_back(o->get_name() +
                        (o->get_expected_max() != 0 ? " " + o->get_type_name() : ""));
    for (const CLI::Option* o : c.get_options()) {
        if (o->count() == 0 || o == mode->selector || o == c.get_help_ptr()) continue;
        if (std::find(mode->options.begin(), mode->options.end(), o) == mode->options.end())
            throw CLI::ValidationError("unknown option '" + o->get_name() + "' for " + a.command +
                                       ", which takes " + joined(takes));
    }
    if (mode->needs_scene && mode->options.front()->count() == 0)
        throw CLI::ValidationError("--scene S is required (" + a.command + " takes " +
                                   joined(takes) + ")");
    std::sort(a.sizes.begin(), a.sizes.end());
    a.sizes.erase(std::unique(a.sizes.begin(), a.sizes.end()), a.sizes.end());
}

/// After parsing `events`: --scenes or --script, and the options of --scenes only with it.
void check_events(const CLI::Option* scenes, const CLI::Option* script,
                  const std::vector<const CLI::Option*>& scenes_only) {
    if (scenes->count() > 0 && script->count() > 0)
        throw CLI::ValidationError("--scenes and --script cannot be combined");
    if (scenes->count() == 0 && script->count() == 0)
        throw CLI::RequiredError("--scenes S0 S1 ... or --script FILE");
    if (script->count() == 0) return;
    for (const CLI::Option* o : scenes_only) {
        if (o->count() > 0)
            throw CLI::ValidationError(o->get_name() + " is for --scenes, not --script");
    }
}

std::string version_text() {
    std::string text = std::string("broadphase ") + kVersion;
#ifdef BROADPHASE_HAS_GPU
    text += " (CPU structures and the Vulkan GPU LBVH)";
#else
    text += " (CPU structures; built without the GPU)";
#endif
    return text;
}

std::string footer() {
    return "S is a scene file (.txt: \"minx miny minz maxx maxy maxz\" per line, white space or "
           "commas, # comments; .obj: one box per face) or a generator NAME:COUNT[:SEED], NAME "
           "one of " +
           joined(strings(generator_names())) +
           ". Files must be regular files.\nMethods: " + joined(method_names()) +
           ". gpu_lbvh alone takes --code, --device (or BROADPHASE_DEVICE) and --validation.\n"
           "Options are --name VALUE or --name=VALUE; numbers are checked against their range.\n"
           "Exit status: 0 success; 1 validate or bench --cpu found a difference; 2 bad usage or "
           "input, or an error (a failed write, out of memory, a method that failed).";
}

/// The commands, each a subcommand of `app` in the "commands" group, and what runs each.
struct Commands {
    struct Command {
        CLI::App* app;
        int (*run)(const Args&);
    };
    CLI::App& app;
    std::vector<Command> list;

    CLI::App* add(const char* name, const std::string& description, int (*run)(const Args&)) {
        CLI::App* c = app.add_subcommand(name, description);
        c->group("commands");
        c->footer(
            "S is a scene file or a generator NAME:COUNT[:SEED] (broadphase --help says "
            "more).");
        list.push_back({c, run});
        return c;
    }
};

void add_pairs_command(Commands& k, Args& a) {
    CLI::App* c = k.add("pairs",
                        "print the overlapping pairs \"i j\", sorted, identical for every "
                        "method; with --against B, the pairs \"a b\" of a box a of --scene "
                        "and a box b of B",
                        &run_pairs);
    add_scene(*c, a)->required();
    add_method(*c, a)->required();
    c->add_option("--against", a.against, "set versus set: the second scene")->type_name("B");
    add_out(*c, a);
    add_gpu(*c, a);
}

void add_validate_command(Commands& k, Args& a) {
    const std::string limit = std::to_string(kBruteForceLimit);
    const std::string validate_text =
        "check every method (or those of --methods) against a reference; exits 1 on a "
        "difference. Up to " +
        limit +
        " boxes the reference is brute_force; above, "
        "sweep_and_prune, and brute_force (O(n^2)) is skipped unless --methods or --reference "
        "names it. Without --scene: the demo scene " +
        std::string(kDemoScene) +
        ", and says so. On a terminal, standard error shows the method running";
    CLI::App* c = k.add("validate", validate_text, &run_validate);
    add_scene(*c, a);
    add_list(*c, "--methods", a.methods, "methods, comma-separated (default: all)", "a,b,...")
        ->check(method_check(method_names()));
    c->add_option("--reference", a.reference,
                  "the method the others are compared with (default: brute_force up to " + limit +
                      " boxes, sweep_and_prune above)")
        ->type_name("M")
        ->check(method_check(method_names()));
    add_out(*c, a);
    add_gpu(*c, a);
}

void add_query_commands(Commands& k, Args& a) {
    CLI::App* c =
        k.add("query",
              "the boxes of --scene overlapping each box of --boxes: \"q: id id ...\" per "
              "query, ids ascending",
              &run_query);
    add_query_options(*c, a, "--boxes", a.boxes, "the query boxes (a scene)", "Q");

    c = k.add("raycast",
              "the closest hit of each ray of --rays (lines \"ox oy oz dx dy dz tmax\"): "
              "\"r: id t\" or \"r: -\"",
              &run_raycast);
    add_query_options(*c, a, "--rays", a.rays, "the rays file", "R");
}

void add_cull_command(Commands& k, Args& a) {
    CLI::App* c =
        k.add("cull", "the box ids a camera sees, one per line, front to back", &run_cull);
    add_scene(*c, a)->required();
    c->add_option_function<std::vector<std::string>>(
         "--camera",
         [&a](const std::vector<std::string>& texts) {
             if (texts.size() > 8)
                 throw CLI::ValidationError(
                     "--camera", "at most 8 cameras, got " + std::to_string(texts.size()));
             a.cameras.clear();
             for (const std::string& text : texts) {
                 auto camera = parse_camera(text);
                 if (!camera) throw CLI::ValidationError("--camera", camera.error().message);
                 a.cameras.push_back(camera.value());
             }
             a.camera = a.cameras.front();
         },
         "the camera, up to 8 times: with more than one, every view is culled over one tree "
         "and each view's ids follow a line \"view K\" (K from 0, in the order given); "
         "eye(3),target(3),up(3),fovy_deg,aspect,near,far")
        ->type_name("C")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->required();
    add_order(*c, a);
    add_lods(*c, a);
    c->add_option("--occlusion", a.occlusion,
                  "also cull what a depth image hides (one camera; the image is that camera's "
                  "depth, 0 near, 1 far): a `broadphase-depth W H` file, W * H depths row by "
                  "row, top row first (docs/occlusion.md)")
        ->type_name("DEPTHFILE");
    c->add_option("--method", a.method, "gpu_lbvh (default), sphere_bvh or brute_force")
        ->type_name("M")
        ->check(one_of({"gpu_lbvh", "sphere_bvh", "brute_force"}, "cull method"));
    add_out(*c, a);
    add_device(*c, a);
    add_validation(*c, a);
}

/// What check_events needs of the events command once parsed.
struct EventsCommand {
    CLI::App* app = nullptr;
    CLI::Option *scenes = nullptr, *script = nullptr;
    std::vector<const CLI::Option*> scenes_only;
};

EventsCommand add_events_command(Commands& k, Args& a) {
    EventsCommand e;
    CLI::App* c = k.add(
        "events",
        "per frame after the first: \"frame K\", then \"+ i j\" (began) and \"- i j\" "
        "(ended), sorted; dynamic CPU structures move the changed boxes in place. The frames are "
        "scenes (--scenes) or a script of bodies (--script). On a terminal, standard error shows "
        "the frames done",
        &run_events);
    e.scenes = c->add_option("--scenes", a.scenes,
                             "the frames: scene files with the same box count, or one generator "
                             "animated by --frames")
                   ->type_name("S0 S1 ...")
                   ->option_text("S0 S1 ...");
    e.script =
        c->add_option("--script", a.script,
                      "instead of --scenes, the frames of a script, one command a line: "
                      "\"frame\" starts a frame (the first line; the first frame's pairs are the "
                      "starting state), \"+ ID minx miny minz maxx maxy maxz [category mask "
                      "group]\" adds a dynamic body, \"s ID ...\" the same a static one (static "
                      "bodies never pair with each other), \"- ID\" removes one, \"m ID minx "
                      "miny minz maxx maxy maxz\" moves one, \"f ID category mask group\" "
                      "changes its filter (Box2D's categoryBits, maskBits, groupIndex; defaults 1 "
                      "0xFFFFFFFF 0); # comments. IDs are integers of the script's choice, and "
                      "the events name them. Every method: gpu_lbvh runs gpu::ProxyScene, dynamic "
                      "CPU structures move bodies in place")
            ->type_name("FILE");
    add_method(*c, a)->required();
    CLI::Option* frames_option =
        c->add_option("--frames", a.frames,
                      "animate the one generator of --scenes for F frames (1..100000), a "
                      "deterministic jitter")
            ->type_name("F")
            ->transform(integer_in(1, 100000));
    e.scenes_only = {frames_option, add_policy(*c, a), add_rebuild_ratio(*c, a, false),
                     add_rebuild_ratio(*c, a, true)};
    c->add_flag("--rebuild", a.rebuild, "CPU methods: rebuild every frame instead of moving");
    c->add_flag("--verbose", a.verbose,
                "per frame on standard error: refit/rebuild, moved boxes (--script: commands, "
                "bodies, pairs)");
    add_out(*c, a);
    add_gpu(*c, a);
    e.app = c;
    return e;
}

/// What check_devices needs of the devices command once parsed.
struct DevicesCommand {
    CLI::App* app = nullptr;
    CLI::Option* kernels = nullptr;
    std::vector<const CLI::Option*> kernels_only;
};

DevicesCommand add_devices_command(Commands& k, Args& a) {
    DevicesCommand d;
    CLI::App* c = k.add("devices", "show the Vulkan device that would be used", &run_devices);
    add_device(*c, a);
    add_validation(*c, a);
    d.kernels = c->add_flag(
        "--kernels", a.kernels,
        "then each kernel's cold first use, costliest first: pipeline creation and one dispatch "
        "of one workgroup over zeros, in ms, and the sum (the shader caches of the driver and "
        "the library off: MESA_SHADER_CACHE_DISABLE=true, __GL_SHADER_DISK_CACHE=0, "
        "BROADPHASE_PIPELINE_CACHE=off)");
    d.kernels_only = {
        c->add_option("--kernels-filter", a.kernels_filter,
                      "with --kernels: only the kernels whose name contains TEXT (an error when "
                      "none does)")
            ->type_name("TEXT"),
        c->add_flag("--warm", a.warm,
                    "with --kernels: the caches as they are, not turned off (warm figures where "
                    "an earlier run filled them)")};
    d.app = c;
    return d;
}

/// The options that go with --kernels only.
void check_devices(const DevicesCommand& d) {
    if (d.kernels->count() > 0) return;
    for (const CLI::Option* o : d.kernels_only) {
        if (o->count() > 0) throw CLI::ValidationError(o->get_name() + " goes with --kernels");
    }
}

}  // namespace

CommandLine read_command_line(int argc, char** argv) {
    Args a;
    CLI::App app{std::string("broadphase ") + kVersion +
                     ": overlapping pairs of axis-aligned boxes by every method, CPU and GPU, "
                     "checked against each other; benchmarks and scenes",
                 "broadphase"};
    app.formatter(std::make_shared<cli::HelpFormatter>());
    app.set_help_flag("-h,--help", "print this help and exit");
    app.require_subcommand(1);
    app.option_defaults()->disable_flag_override()->multi_option_policy(
        CLI::MultiOptionPolicy::Throw);
    app.set_version_flag("--version", version_text(), "print the version and exit");
    app.footer("broadphase COMMAND --help lists the options of COMMAND.\n" + footer());

    Commands k{app, {}};
    add_pairs_command(k, a);
    add_validate_command(k, a);
    add_query_commands(k, a);
    add_cull_command(k, a);
    const EventsCommand events = add_events_command(k, a);
    CLI::App* bench =
        k.add("bench",
              "time the GPU LBVH's stages (timestamp queries) on --scene; or, with one mode: "
              "--cull the frustum cull, --cpu every CPU structure over a range of sizes, "
              "--frames F a moving scene, --rays R ray casts and region queries",
              &run_bench);
    const std::vector<BenchMode> modes = add_bench_options(*bench, a);

    CLI::App* c = k.add("scene", "write a scene as text (generators too)", &run_scene);
    add_scene(*c, a)->required();
    add_out(*c, a);

    const DevicesCommand devices = add_devices_command(k, a);

    CLI::App* version = k.add("version", "print the version", nullptr);
    CLI::App* help = k.add("help", "print this help, or a command's", nullptr);
    std::string help_topic;
    help->add_option("command", help_topic, "the command whose options to print")
        ->check(one_of(
            [&] {
                std::vector<std::string> names;
                for (const Commands::Command& command : k.list)
                    names.push_back(command.app->get_name());
                return names;
            }(),
            "command"));

    CommandLine line;
    try {
        app.parse(argc, argv);
        const Commands::Command* chosen = nullptr;
        for (const Commands::Command& command : k.list)
            if (command.app->parsed()) chosen = &command;
        if (chosen->app == bench)
            check_bench(*bench, modes, a);
        else
            a.command = chosen->app->get_name();
        if (chosen->app == events.app)
            check_events(events.scenes, events.script, events.scenes_only);
        if (chosen->app == devices.app) check_devices(devices);
        for (const CLI::Option* o : chosen->app->get_options())
            if (o->count() > 0 && !o->get_lnames().empty()) a.given.insert(o->get_lnames().front());
        if (chosen->app == version) {
            line.text = version_text() + "\n";
        } else if (chosen->app == help) {
            const CLI::App* topic = help_topic.empty() ? &app : app.get_subcommand(help_topic);
            line.text = app.get_formatter()->make_help(
                topic, help_topic.empty() ? "broadphase" : "broadphase " + help_topic,
                CLI::AppFormatMode::Normal);
        } else {
            line.run = chosen->run;
        }
    } catch (const CLI::ParseError& e) {
        if (e.get_name() == "RequiredError" && app.get_subcommands().empty() &&
            app.remaining().empty()) {
            line = {{}, nullptr, app.help(), cli::kExitUsage};  // no command: the usage, failing
        } else {
            const cli::Outcome o = cli::outcome(app, e);
            line.text = o.text;
            line.exit_code = o.exit_code;
        }
    }
    line.args = std::move(a);
    return line;
}

}  // namespace broadphase::tool
