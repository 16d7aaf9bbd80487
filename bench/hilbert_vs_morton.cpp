// Hilbert vs Morton leaf order for the LBVH: node visits of the all-pairs traversal on the CPU
// twin (lbvh::self_pairs fills QueryStats; the same per-thread logic as
// shaders/lbvh/lbvh_pairs.comp, so the counts are what the GPU does and do not depend on the
// device). Prints a Markdown table. Built with the project: build/hilbert_vs_morton [N]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "broadphase/scene.hpp"
#include "lbvh.hpp"

using namespace broadphase;

int main(int argc, char** argv) {
    std::size_t n = argc > 1 ? std::size_t(std::atol(argv[1])) : 100000;
    std::printf(
        "| scene (%zu boxes) | pairs | morton30 nodes visited | hilbert30 nodes visited | "
        "hilbert / morton | morton30 box tests | hilbert30 box tests |\n",
        n);
    std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (const char* name : {"uniform", "clustered", "xline", "yline", "mixed_sizes", "degenerate",
                             "level", "multiscale"}) {
        auto scene = generate_scene(name, n);
        if (!scene) return 1;
        QueryStats stats[2];
        std::size_t pairs = 0;
        int k = 0;
        for (lbvh::CodeKind kind : {lbvh::CodeKind::morton30, lbvh::CodeKind::hilbert30}) {
            auto nodes = lbvh::build_tree(scene->boxes, kind);  // as the GPU builds it
            std::vector<Pair> out;
            lbvh::self_pairs(nodes, scene->boxes, out, &stats[k++]);
            pairs = out.size();
        }
        std::printf("| %s | %zu | %llu | %llu | %.3f | %llu | %llu |\n", name, pairs,
                    (unsigned long long)stats[0].nodes_visited,
                    (unsigned long long)stats[1].nodes_visited,
                    double(stats[1].nodes_visited) / double(stats[0].nodes_visited),
                    (unsigned long long)stats[0].box_tests, (unsigned long long)stats[1].box_tests);
    }
    return 0;
}
