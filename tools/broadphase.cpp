// `broadphase`: overlapping pairs, cross-validation of every method, benchmarks and scene
// generation from the command line (DESIGN.md, "File formats and the command-line contract").
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"

namespace {

constexpr const char* kUsage = R"(usage: broadphase COMMAND [options]

commands:
  pairs     --scene S --method M [--out FILE]   print overlapping pairs "i j", sorted
  validate  [--scene S] [--methods a,b,...]      check every method against brute force;
                                                 exits 1 on any difference
  bench     [--scene S] [--repeat R] [--code morton30|morton63|hilbert30]
                                                 per-stage GPU times (timestamp queries)
  bench     --cull [--scene S] [--camera C] [--order exact|approx] [--repeat R]
                                                 per-stage GPU times of the frustum cull
  bench     --cpu [--scenes a,b] [--sizes 1000,10000,...] [--methods a,b]
            [--max-seconds S] [--out-dir DIR] [--table FILE]
                                                 build + self-pairs time of every CPU
                                                 structure; a table and one PNG per scene
  bench     --frames F [--scene S] [--policy ratio|refit|rebuild] [--rebuild-ratio R]
            [--back-to-back]                     animated moving scene: median GPU ms per
                                                 frame of refit/rebuild, pairs, pair sort,
                                                 event diff; refit/rebuild counts;
                                                 --back-to-back: also all F frames recorded
                                                 into one submit (wall ms per frame)
  bench     --rays R [--scene S] [--repeat K] [--seed X]
                                                 R random rays and R region queries: GPU ms
                                                 and rays (queries) per second
  scene     --scene S [--out FILE]               write a scene as text (generators too)
  devices   [--device D]                         show the Vulkan device that would be used
  cull      --scene S --camera ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far
            [--order exact|approx] [--method gpu_lbvh|sphere_bvh|brute_force]
                                                 visible box ids, one per line, front to
                                                 back (exact: by distance, then id)
  query     --scene S --boxes Q --method M       boxes of S overlapping each box of Q:
                                                 "q: id id ..." per query, ids ascending
  raycast   --scene S --rays R --method M        closest hit of each ray of R (lines
                                                 "ox oy oz dx dy dz tmax"): "r: id t" or "r: -"
  pairs     --scene A --against B --method M     set versus set: "a b" for every box a of A
                                                 overlapping box b of B, sorted
  events    --scenes S0 S1 ... --method M        per frame after the first: "frame K", then
            [--frames F] [--policy ratio|refit|rebuild] [--rebuild-ratio R] [--verbose]
            [--rebuild]                          "+ i j" (began) and "- i j" (ended), sorted;
                                                 one generator with --frames F animates it
                                                 (deterministic jitter, tools/events_command.cpp);
                                                 dynamic CPU structures move the changed boxes
                                                 in place (--rebuild: rebuild every frame)

  S is a scene file (.txt: "minx miny minz maxx maxy maxz" per line; .obj: one box per
  face) or a generator NAME:COUNT[:SEED] with NAME one of uniform, clustered, xline,
  yline, mixed_sizes, degenerate (default scene: uniform:20000).
  Methods: gpu_lbvh (Vulkan) and the CPU structures brute_force, sweep_and_prune,
  uniform_grid, octree, loose_octree, rtree_linear, rtree_quadratic, rstar_tree,
  rtree_nearest_x, rtree_str, rtree_hilbert, kd_tree, dynamic_aabb_tree,
  static_aabb_tree, sphere_bvh, lbvh.
  GPU options: --device INDEX|NAME (or BROADPHASE_DEVICE), --validation, --code KIND.
)";

}  // namespace

int main(int argc, char** argv) {
    using namespace broadphase::tool;
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    std::string command = argv[1];
    Args args;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) == 0) {
            std::string name = a.substr(2);
            auto eq = name.find('=');
            if (eq != std::string::npos) {
                args.options[name.substr(0, eq)] = name.substr(eq + 1);
            } else if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
                args.options[name] = argv[++i];
            } else {
                args.options[name] = "";
            }
        } else {
            args.positional.push_back(a);
        }
    }
    if (command == "pairs") return run_pairs(args);
    if (command == "validate") return run_validate(args);
    if (command == "bench") return run_bench(args);
    if (command == "scene") return run_scene(args);
    if (command == "devices") return run_devices(args);
    if (command == "cull") return run_cull(args);
    if (command == "query") return run_query(args);
    if (command == "raycast") return run_raycast(args);
    if (command == "events") return run_events(args);
    std::fprintf(stderr, "broadphase: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
}
