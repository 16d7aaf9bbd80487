// The tool's command line (see args.hpp): each command and each of its options (once, with its
// check and its default), read by CLI11; `bench` and its subcommands are in bench.cpp.
#include "args.hpp"

#include <algorithm>
#include <memory>
#include <sstream>

#include "bench.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "broadphase/version.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "options.hpp"

namespace broadphase::tool {
namespace {

using cli::joined;
using cli::one_of;
using cli::real_in;

// ---- Options of several commands here (options.hpp has those the benchmarks share too). ----

CLI::Option* add_method(CLI::App& c, Args& a) {
    const std::vector<std::string> names = method_names();
    return c.add_option("--method", a.method, "one of " + joined(names))
        ->type_name("M")
        ->check(method_check(names));
}

CLI::Option* add_out(CLI::App& c, Args& a) {
    return c
        .add_option("--out", a.out,
                    "write to FILE instead of standard output; - is standard output")
        ->type_name("FILE");
}

/// --code, --device and --validation: the options of gpu_lbvh.
void add_gpu(CLI::App& c, Args& a) {
    add_code(c, a.code);
    add_device(c, a.device);
    add_validation(c, a.validation);
}

/// query and raycast: --scene S, their input `name` (a file or scene, required), --method M,
/// --out and the options of gpu_lbvh.
void add_query_options(CLI::App& c, Args& a, const std::string& name, std::string& input,
                       const std::string& description, const std::string& type_name) {
    add_scene(c, a.scene)->required();
    c.add_option(name, input, description)->type_name(type_name)->required();
    add_method(c, a)->required();
    add_out(c, a);
    add_gpu(c, a);
}

// ---- The commands. ----

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
           "Exit status: 0 success; 1 validate or bench cpu found a difference; 2 bad usage or "
           "input, or an error (a failed write, out of memory, a method that failed).";
}

/// The commands, each a subcommand of `app` in the "commands" group, and what runs each.
struct Commands {
    struct Command {
        CLI::App* app;
        std::function<int(const Args&)> run;
    };
    CLI::App& app;
    std::vector<Command> list;

    CLI::App* add(const char* name, const std::string& description,
                  std::function<int(const Args&)> run) {
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
    add_scene(*c, a.scene)->required();
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
    add_scene(*c, a.scene);
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
              "the boxes of --scene overlapping each box of --boxes: \"K: id id ...\" for "
              "query K (0, 1, ...), ids ascending",
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
    add_scene(*c, a.scene)->required();
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
    add_order(*c, a.order);
    add_lods(*c, a.lods, a.meshes, a.grouped);
    c->add_option("--occlusion", a.occlusion,
                  "also cull what a depth image hides (one camera; the image is that camera's "
                  "depth, 0 near, 1 far): a `broadphase-depth W H` file, W * H depths row by "
                  "row, top row first (docs/occlusion.md)")
        ->type_name("DEPTHFILE");
    c->add_option("--method", a.method, "gpu_lbvh (default), sphere_bvh or brute_force")
        ->type_name("M")
        ->check(one_of({"gpu_lbvh", "sphere_bvh", "brute_force"}, "cull method"));
    add_out(*c, a);
    add_device(*c, a.device);
    add_validation(*c, a.validation);
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
        cli::add_integer(*c, "--frames", a.frames, "F", 1, 100000,
                         "animate the one generator of --scenes for F frames (1..100000), a "
                         "deterministic jitter");
    e.scenes_only = {frames_option, add_policy(*c, a.policy),
                     add_rebuild_ratio(*c, a.rebuild_ratio, false),
                     add_rebuild_ratio(*c, a.rebuild_work_ratio, true)};
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
    add_device(*c, a.device);
    add_validation(*c, a.validation);
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
    cli::set_conventions(app);
    app.require_subcommand(1);
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    app.set_version_flag("--version", version_text(), "print the version and exit");
    app.footer("broadphase COMMAND --help lists the options of COMMAND.\n" + footer());

    Commands k{app, {}};
    add_pairs_command(k, a);
    add_validate_command(k, a);
    add_query_commands(k, a);
    add_cull_command(k, a);
    const EventsCommand events = add_events_command(k, a);
    const BenchCommand bench = add_bench_command(app);
    k.list.push_back({bench.app, nullptr});

    CLI::App* c = k.add("scene", "write a scene as text (generators too)", &run_scene);
    add_scene(*c, a.scene)->required();
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
        std::string old_bench_error;
        std::vector<std::string> arguments = bench_arguments(argc, argv, old_bench_error);
        if (!old_bench_error.empty()) {
            line.text = "broadphase bench: " + old_bench_error +
                        "\n(broadphase bench --help lists the commands)\n";
            line.exit_code = cli::kExitUsage;
            return line;
        }
        std::reverse(arguments.begin(), arguments.end());
        arguments.pop_back();  // the program's name
        app.parse(arguments);
        const Commands::Command* chosen = nullptr;
        for (const Commands::Command& command : k.list)
            if (command.app->parsed()) chosen = &command;
        a.command = chosen->app->get_name();
        const CLI::App* options_of = chosen->app;
        if (chosen->app == bench.app) {
            options_of = &cli::selected(*bench.app);
            a.command = "bench " + options_of->get_name();
        }
        if (chosen->app == events.app)
            check_events(events.scenes, events.script, events.scenes_only);
        if (chosen->app == devices.app) check_devices(devices);
        for (const CLI::Option* o : options_of->get_options())
            if (o->count() > 0 && !o->get_lnames().empty()) a.given.insert(o->get_lnames().front());
        if (chosen->app == version) {
            line.text = version_text() + "\n";
        } else if (chosen->app == help) {
            const CLI::App* topic = help_topic.empty() ? &app : app.get_subcommand(help_topic);
            line.text = app.get_formatter()->make_help(
                topic, help_topic.empty() ? "broadphase" : "broadphase " + help_topic,
                CLI::AppFormatMode::Normal);
        } else if (chosen->app == bench.app) {
            line.run = [run = bench.run()](const Args&) { return run(); };
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
