// The shared options of the `broadphase` tool (options.hpp).
#include "options.hpp"

#include <sstream>

#include "commands.hpp"

namespace broadphase::tool {

using cli::one_of;
using cli::real_in;

const EnumNames<CodeKind>& code_names() {
    static const EnumNames<CodeKind> names{{"morton30", CodeKind::morton30},
                                           {"morton63", CodeKind::morton63},
                                           {"hilbert30", CodeKind::hilbert30}};
    return names;
}

const EnumNames<CullOrder>& order_names() {
    static const EnumNames<CullOrder> names{{"exact", CullOrder::exact},
                                            {"approx", CullOrder::approx}};
    return names;
}

const EnumNames<gpu::RefitPolicy>& policy_names() {
    static const EnumNames<gpu::RefitPolicy> names{{"ratio", gpu::RefitPolicy::by_ratio},
                                                   {"refit", gpu::RefitPolicy::always_refit},
                                                   {"rebuild", gpu::RefitPolicy::always_rebuild}};
    return names;
}

const EnumNames<gpu::SortPath>& sort_path_names() {
    static const EnumNames<gpu::SortPath> names{
        {"automatic", gpu::SortPath::automatic},
        {"onesweep", gpu::SortPath::onesweep},
        {"reduce_then_scan", gpu::SortPath::reduce_then_scan}};
    return names;
}

const EnumNames<gpu::PairAppend>& pair_append_names() {
    static const EnumNames<gpu::PairAppend> names{{"automatic", gpu::PairAppend::automatic},
                                                  {"subgroup", gpu::PairAppend::subgroup},
                                                  {"atomic", gpu::PairAppend::atomic}};
    return names;
}

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
    return {views.begin(), views.end()};
}

std::string with_default(const std::string& description, const std::string& value) {
    return description + " (default " + value + ")";
}

CLI::Validator method_check(std::vector<std::string> names) {
    return one_of(std::move(names), "method", "gpu_lbvh", "this build has no GPU support");
}

CLI::Option* add_scene(CLI::App& c, std::string& scene) {
    return c
        .add_option("--scene", scene,
                    "a scene: a text or .obj file, or a generator NAME:COUNT[:SEED]")
        ->type_name("S");
}

CLI::Option* add_device(CLI::App& c, std::string& device) {
    return c
        .add_option("--device", device,
                    "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or "
                    "the first)")
        ->type_name("INDEX|NAME");
}

CLI::Option* add_validation(CLI::App& c, bool& validation) {
    return c.add_flag("--validation", validation, "turn on the Vulkan validation layer");
}

CLI::Option* add_code(CLI::App& c, CodeKind& code) {
    return add_enum(c, "--code", code, "the LBVH's space-filling curve", code_names(), "code");
}

CLI::Option* add_camera(CLI::App& c, Camera& camera, const std::string& description) {
    return c
        .add_option_function<std::string>(
            "--camera",
            [&camera](const std::string& text) {
                auto parsed = parse_camera(text);
                if (!parsed) throw CLI::ValidationError("--camera", parsed.error().message);
                camera = parsed.value();
            },
            description + "; eye(3),target(3),up(3),fovy_deg,aspect,near,far")
        ->type_name("C");
}

std::vector<CLI::Option*> add_lods(CLI::App& c, std::vector<float>& lods, std::uint32_t& meshes,
                                   bool& grouped) {
    CLI::Option* lods_option =
        add_list(c, "--lods", lods,
                 "LOD switch distances, ascending and above 0: an instance at distance d from "
                 "the eye is drawn at the LOD k of the largest D_k <= d (LOD 0 nearer than D_1); "
                 "gpu_lbvh only",
                 "D1,D2,...")
            ->check(real_in(0, 3.4e38));
    CLI::Option* meshes_option =
        cli::add_integer(c, "--meshes", meshes, "K", 1, 65536,
                         "with --lods: K meshes (1..65536), box i of mesh i % K, all with the LODs "
                         "of --lods");
    CLI::Option* grouped_option = c.add_flag(
        "--grouped", grouped, "with --lods: the draws grouped per mesh, front to back in each");
    return {lods_option, meshes_option, grouped_option};
}

CLI::Option* add_order(CLI::App& c, CullOrder& order) {
    return add_enum(c, "--order", order,
                    "exact: by distance from the eye, then id; approx: the method's "
                    "front-to-back order",
                    order_names(), "order");
}

CLI::Option* add_policy(CLI::App& c, gpu::RefitPolicy& policy) {
    return add_enum(c, "--policy", policy,
                    "gpu_lbvh per frame: refit, then rebuild when the surface-area ratio "
                    "exceeds --rebuild-ratio; or always refit, always rebuild",
                    policy_names(), "policy");
}

namespace {

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

template <class T>
CLI::Option* rebuild_ratio_option(CLI::App& c, T& ratio, bool work) {
    const std::string description =
        work ? "--policy ratio: also rebuild when a frame's pair traversal expanded more than W "
               "times the nodes per box and pair of the first one after the last build (0: off)"
             : "--policy ratio: rebuild when the refitted tree's cost exceeds R times the cost "
               "after the last build";
    return c
        .add_option(work ? "--rebuild-work-ratio" : "--rebuild-ratio", ratio,
                    with_default(description, default_moving_ratio(work)))
        ->type_name(work ? "W" : "R")
        ->check(real_in(0, 1e9));
}

}  // namespace

CLI::Option* add_rebuild_ratio(CLI::App& c, double& ratio, bool work) {
    return rebuild_ratio_option(c, ratio, work);
}

CLI::Option* add_rebuild_ratio(CLI::App& c, std::optional<double>& ratio, bool work) {
    return rebuild_ratio_option(c, ratio, work);
}

}  // namespace broadphase::tool
