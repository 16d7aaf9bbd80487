// Command-line options of the `broadphase` tool. Every command is a CLI11 subcommand with its
// own options and --help (args.cpp defines each option once); `bench` has modes (--cpu, --cull,
// --frames F, --rays R), each with its own options. Unknown, repeated or missing options, bad
// numbers and unknown names are usage errors that name the option (exit 2, cli_options.hpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/types.hpp"

namespace broadphase::tool {

/// The options of the command being run, checked and converted: numbers are in range, names
/// (methods, generators, codes, policies, orders) are known and the camera is valid. Options a
/// command does not take keep these defaults.
struct Args {
    std::string command;                       ///< "pairs", "bench --cpu", ... (for messages)
    std::set<std::string, std::less<>> given;  ///< options on the command line, without dashes
    /// True when option `name` ("scene", "rebuild-ratio") was on the command line.
    bool has(std::string_view name) const { return given.find(name) != given.end(); }

    // Inputs and outputs.
    std::string scene;                ///< --scene: a file or a generator NAME:COUNT[:SEED]
    std::vector<std::string> scenes;  ///< events: frames (files or one generator); bench --cpu:
                                      ///< generator names (empty: all)
    std::string against;              ///< pairs --against: the second set
    std::string boxes;                ///< query: the query boxes
    std::string rays;                 ///< raycast: the rays file
    std::string script;               ///< events --script: the proxy script
    std::string out;                  ///< --out FILE (empty: standard output)
    std::string out_dir = ".";        ///< bench --cpu: where the plots go
    std::string table;                ///< bench --cpu: the markdown table's file

    // Methods.
    std::string method;                ///< pairs, query, raycast, events; cull: gpu_lbvh if empty
    std::string reference;             ///< validate (empty: chosen by scene size)
    std::vector<std::string> methods;  ///< validate, bench --cpu (empty: all)

    // GPU.
    std::string code = "morton30";  ///< morton30, morton63 or hilbert30
    std::string device;             ///< INDEX or NAME (empty: BROADPHASE_DEVICE or the first)
    bool validation = false;
    bool no_refine = false;                 ///< bench: codes not adapted to the scene
    bool unsorted_pairs = false;            ///< bench: find_pairs without the pair sort
    std::string pair_append = "automatic";  ///< bench: automatic, subgroup or atomic
    double warm_up_ms = 0;  ///< bench: GPU warm-up before each run (--warm-up; default by device)
    std::uint32_t traversal_budget = 0;  ///< bench: nodes per invocation per round (0: device's)
    std::uint32_t pair_stack = 0;   ///< bench: the all-pairs traversal's stack entries (0: default)
    std::uint32_t pair_budget = 0;  ///< bench: the all-pairs pass's first-round budget (0: default)
    std::uint32_t query_budget = 0;  ///< bench --rays: the queries' first-round budget (0: default)
    std::string sort_path = "automatic";  ///< bench: automatic, onesweep or reduce_then_scan
    bool json = false;                    ///< bench: one JSON object instead of the table
    bool kernels = false;                 ///< devices: each kernel's first-use cost
    std::string kernels_filter;  ///< devices --kernels: only kernels whose name contains it
    bool warm = false;           ///< devices --kernels: with the caches as they are (not cold)

    // Culling.
    Camera camera{};              ///< valid when has("camera")
    std::vector<Camera> cameras;  ///< cull: every --camera, in the order given (1 to 8)
    std::string order = "exact";  ///< exact or approx
    std::vector<float> lods;      ///< cull, bench --cull: LOD switch distances (when has("lods"))
    std::uint32_t meshes = 1;     ///< cull, bench --cull: instance i's mesh is i % meshes
    bool grouped = false;         ///< cull, bench --cull: draws grouped per mesh
    std::uint32_t views = 1;      ///< bench --cull: views culled separately and at once
    std::string occlusion;        ///< cull: the depth file culled against (when has("occlusion"))

    // Frames and moving scenes.
    std::int64_t frames = 0;        ///< events (0: one frame per scene file), bench --frames
    std::string policy = "ratio";   ///< ratio, refit or rebuild
    double rebuild_ratio = 0;       ///< when has("rebuild-ratio")
    double rebuild_work_ratio = 0;  ///< when has("rebuild-work-ratio")
    bool rebuild = false;           ///< events, CPU methods: rebuild every frame
    bool verbose = false;           ///< events: per-frame path on standard error
    bool back_to_back = false;      ///< bench --frames
    double churn = 0;               ///< bench --frames --churn P (percent; 0: a MovingScene)

    // Benchmarks.
    bool cpu = false, cull = false;  ///< bench modes (--frames and --rays are the others)
    std::int64_t repeat = 0;         ///< when has("repeat"); each mode has its own default
    std::int64_t ray_count = 0;      ///< bench --rays R
    std::uint32_t seed = 42;         ///< bench --rays
    std::vector<std::size_t> sizes;  ///< bench --cpu box counts, ascending
    double max_seconds = 0;          ///< bench --cpu per-run budget
};

/// What the command line asks for: a command to run with its options, or a text to print
/// (help or version on standard output, exit 0; a usage error on standard error, exit 2).
struct CommandLine {
    Args args;
    int (*run)(const Args&) = nullptr;  ///< the command; null when `text` is the answer
    std::string text;
    int exit_code = 0;
};

/// Reads argv with CLI11 (see the file comment).
CommandLine read_command_line(int argc, char** argv);

}  // namespace broadphase::tool
