// Command-line options of the `broadphase` tool. Every command is a CLI11 subcommand with its
// own options and --help (args.cpp and options.cpp define each option once); `bench` has its own
// subcommands with their own options (bench.hpp). Unknown, repeated or missing options, bad
// numbers and unknown names are usage errors that name the option (exit 2, cli_options.hpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <functional>

#include "broadphase/frustum.hpp"
#include "broadphase/types.hpp"
#include "options.hpp"

namespace broadphase::tool {

/// The options of the command being run, checked and converted: numbers are in range, names
/// (methods, generators, codes, policies, orders) are known and the camera is valid. Options a
/// command does not take keep these defaults.
struct Args {
    std::string command;                       ///< "pairs", "bench cpu", ... (for messages)
    std::set<std::string, std::less<>> given;  ///< options on the command line, without dashes
    /// True when option `name` ("scene", "rebuild-ratio") was on the command line.
    bool has(std::string_view name) const { return given.find(name) != given.end(); }

    // Inputs and outputs.
    std::string scene;                ///< --scene: a file or a generator NAME:COUNT[:SEED]
    std::vector<std::string> scenes;  ///< events: frames (files or one generator)
    std::string against;              ///< pairs --against: the second set
    std::string boxes;                ///< query: the query boxes
    std::string rays;                 ///< raycast: the rays file
    std::string script;               ///< events --script: the proxy script
    std::string out;                  ///< --out FILE (empty: standard output)

    // Methods.
    std::string method;                ///< pairs, query, raycast, events; cull: gpu_lbvh if empty
    std::string reference;             ///< validate (empty: chosen by scene size)
    std::vector<std::string> methods;  ///< validate (empty: all)

    // GPU.
    CodeKind code = CodeKind::morton30;
    std::string device;  ///< INDEX or NAME (empty: BROADPHASE_DEVICE or the first)
    bool validation = false;
    bool kernels = false;        ///< devices: each kernel's first-use cost
    std::string kernels_filter;  ///< devices --kernels: only kernels whose name contains it
    bool warm = false;           ///< devices --kernels: with the caches as they are (not cold)

    // Culling.
    Camera camera{};              ///< valid when has("camera")
    std::vector<Camera> cameras;  ///< cull: every --camera, in the order given (1 to 8)
    CullOrder order = CullOrder::exact;
    std::vector<float> lods;   ///< cull: LOD switch distances (when has("lods"))
    std::uint32_t meshes = 1;  ///< cull: instance i's mesh is i % meshes
    bool grouped = false;      ///< cull: draws grouped per mesh
    std::string occlusion;     ///< cull: the depth file culled against (when has("occlusion"))

    // Frames and moving scenes.
    std::int64_t frames = 0;  ///< events (0: one frame per scene file)
    gpu::RefitPolicy policy = gpu::RefitPolicy::by_ratio;
    double rebuild_ratio = 0;       ///< when has("rebuild-ratio")
    double rebuild_work_ratio = 0;  ///< when has("rebuild-work-ratio")
    bool rebuild = false;           ///< events, CPU methods: rebuild every frame
    bool verbose = false;           ///< events: per-frame path on standard error
};

/// What the command line asks for: a command to run with its options, or a text to print
/// (help or version on standard output, exit 0; a usage error on standard error, exit 2).
struct CommandLine {
    Args args;
    std::function<int(const Args&)> run;  ///< the command; empty when `text` is the answer
    std::string text;
    int exit_code = 0;
};

/// Reads argv with CLI11 (see the file comment).
CommandLine read_command_line(int argc, char** argv);

}  // namespace broadphase::tool
