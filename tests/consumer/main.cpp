// The consumer project's program: the same pairs from a CPU structure and from the GPU LBVH on
// whatever Vulkan device is found (lavapipe in CI), with the validation layer on when
// BROADPHASE_VALIDATION=1. Exits 0 only when both agree exactly and validation stayed clean.
#include <broadphase/gpu.hpp>
#include <broadphase/scene.hpp>
#include <broadphase/structure.hpp>
#include <broadphase/version.hpp>

#include <cstdio>

int main() {
    using namespace broadphase;
    Result<Scene> scene = generate_scene("uniform", 3000);
    if (!scene) return std::fprintf(stderr, "%s\n", scene.error().message.c_str()), 1;
    Result<std::vector<Pair>> cpu = find_pairs_cpu("sweep_and_prune", scene->boxes);
    if (!cpu) return std::fprintf(stderr, "%s\n", cpu.error().message.c_str()), 1;

    auto context = gpu::Context::create();
    if (!context) return std::fprintf(stderr, "%s\n", context.error().message.c_str()), 1;
    auto lbvh = gpu::Lbvh::create(**context);
    if (!lbvh) return std::fprintf(stderr, "%s\n", lbvh.error().message.c_str()), 1;
    Result<std::vector<Pair>> gpu_pairs = (*lbvh)->find_pairs(scene->boxes);
    if (!gpu_pairs) return std::fprintf(stderr, "%s\n", gpu_pairs.error().message.c_str()), 1;

    const bool same = *gpu_pairs == *cpu;
    const std::uint64_t errors = (*context)->validation_errors();
    std::printf(
        "broadphase %s on %s: %zu pairs on the CPU, %zu on the GPU (%s), %llu validation "
        "errors\n",
        kVersion, (*context)->info().name.c_str(), cpu->size(), gpu_pairs->size(),
        same ? "same" : "DIFFERENT", static_cast<unsigned long long>(errors));
    return same && errors == 0 ? 0 : 1;
}
