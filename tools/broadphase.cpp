// `broadphase`: overlapping pairs, cross-validation of every method, benchmarks and scene
// generation from the command line (DESIGN.md, "File formats and the command-line contract").
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "commands.hpp"
#include "io.hpp"

namespace {

constexpr const char* kUsage = R"(usage: broadphase COMMAND [options]

commands:
  pairs     --scene S --method M [--out FILE]   print overlapping pairs "i j", sorted
  validate  [--scene S] [--methods a,b,...] [--reference M] [--out FILE]
                                                 check every method (or those listed)
                                                 against brute force; exits 1 on any
                                                 difference; without --scene it runs on
                                                 the demo scene uniform:20000 and says so
  bench     --scene S [--repeat R] [--code morton30|morton63|hilbert30] [--no-refine]
                                                 per-stage GPU times (timestamp queries);
                                                 --no-refine: codes not adapted to the scene
  bench     --cull --scene S [--camera C] [--order exact|approx] [--repeat R]
                                                 per-stage GPU times of the frustum cull
  bench     --cpu [--scenes a,b] [--sizes 1000,10000,...] [--methods a,b]
            [--max-seconds S] [--out-dir DIR] [--table FILE]
                                                 build + self-pairs time of every CPU
                                                 structure; a table and one PNG per scene
  bench     --frames F --scene S [--policy ratio|refit|rebuild] [--rebuild-ratio R]
            [--code KIND] [--back-to-back]       animated moving scene: median GPU ms per
                                                 frame of refit/rebuild, pairs, pair sort,
                                                 event diff; refit/rebuild counts;
                                                 --back-to-back: also all F frames recorded
                                                 into one submit (wall ms per frame)
  bench     --rays R --scene S [--repeat K] [--seed X] [--code KIND]
                                                 R random rays and R region queries: GPU ms
                                                 and rays (queries) per second
  scene     --scene S [--out FILE]               write a scene as text (generators too)
  devices   [--device D] [--validation]          show the Vulkan device that would be used
  cull      --scene S --camera ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far
            [--order exact|approx] [--method gpu_lbvh|sphere_bvh|brute_force] [--out FILE]
                                                 visible box ids, one per line, front to
                                                 back (exact: by distance, then id)
  query     --scene S --boxes Q --method M [--out FILE]
                                                 boxes of S overlapping each box of Q:
                                                 "q: id id ..." per query, ids ascending
  raycast   --scene S --rays R --method M [--out FILE]
                                                 closest hit of each ray of R (lines
                                                 "ox oy oz dx dy dz tmax"): "r: id t" or "r: -"
  pairs     --scene A --against B --method M [--out FILE]
                                                 set versus set: "a b" for every box a of A
                                                 overlapping box b of B, sorted
  events    --scenes S0 S1 ... --method M        per frame after the first: "frame K", then
            [--frames F] [--policy ratio|refit|rebuild] [--rebuild-ratio R] [--verbose]
            [--rebuild] [--out FILE]             "+ i j" (began) and "- i j" (ended), sorted;
                                                 one generator with --frames F animates it
                                                 (deterministic jitter, tools/events_command.cpp);
                                                 dynamic CPU structures move the changed boxes
                                                 in place (--rebuild: rebuild every frame)

  S is a scene file (.txt: "minx miny minz maxx maxy maxz" per line; .obj: one box per
  face) or a generator NAME:COUNT[:SEED] with NAME one of uniform, clustered, xline,
  yline, mixed_sizes, degenerate, level, multiscale. Files must be regular files.
  Methods: gpu_lbvh (Vulkan) and the CPU structures brute_force, sweep_and_prune,
  uniform_grid, octree, loose_octree, rtree_linear, rtree_quadratic, rstar_tree,
  rtree_nearest_x, rtree_str, rtree_hilbert, kd_tree, dynamic_aabb_tree,
  static_aabb_tree, sphere_bvh, lbvh.
  GPU options (gpu_lbvh only): --device INDEX|NAME (or BROADPHASE_DEVICE), --validation,
  --code KIND (morton30, morton63, hilbert30).
  Numbers are checked: --repeat 1..1000, events --frames 1..100000, bench --frames 1..10000,
  bench --rays 1..100000000, --seed 0..4294967295, --sizes 1..4294967295 each.
  Options are --name VALUE or --name=VALUE; an unknown option is an error. --help after a
  command prints this text.

  Exit status: 0 success; 1 validate found a difference; 2 bad usage or input, or an error
  (a failed write, out of memory, a method that failed).
)";

int fail(const broadphase::Error& e) {
    std::fprintf(stderr, "broadphase: %s\n", e.message.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace broadphase::tool;
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        if (argc < 2) return 2;
        broadphase::Status s = finish_stdout();
        return s ? 0 : fail(s.error());
    }
    const std::string command = argv[1];
    const std::pair<const char*, int (*)(const Args&)> kCommands[] = {
        {"pairs", &run_pairs}, {"validate", &run_validate}, {"bench", &run_bench},
        {"scene", &run_scene}, {"devices", &run_devices},   {"cull", &run_cull},
        {"query", &run_query}, {"raycast", &run_raycast},   {"events", &run_events}};
    int (*run)(const Args&) = nullptr;
    for (const auto& [name, function] : kCommands)
        if (command == name) run = function;
    if (run == nullptr) {
        std::fprintf(stderr, "broadphase: unknown command '%s'\n\n%s", command.c_str(), kUsage);
        return 2;
    }
    int status = 0;
    try {
        auto args = parse_args(command, argc, argv, 2);
        if (!args) {
            std::fprintf(stderr, "broadphase %s\n(broadphase --help lists every command)\n",
                         args.error().message.c_str());
            return 2;
        }
        if (args->help) {
            std::fputs(kUsage, stdout);
        } else {
            status = run(args.value());
        }
    } catch (const std::bad_alloc&) {
        // The commands and the library turn allocation failures into errors with sizes where
        // they build or query; this is the last resort for anything in between.
        std::fprintf(stderr, "broadphase %s: out of memory\n", command.c_str());
        status = 2;
    } catch (const std::length_error&) {
        std::fprintf(stderr, "broadphase %s: out of memory (a size beyond any container)\n",
                     command.c_str());
        status = 2;
    }
    // Output that never arrived is a failure, whatever the command said (a command that
    // failed has said why already).
    broadphase::Status flushed = finish_stdout();
    if (!flushed && status == 0) return fail(flushed.error());
    return status;
}
