// `broadphase bench pairs` (also `bench` alone): per-stage GPU times (timestamp queries, median
// of R runs) of the LBVH (Karras 2012) over --scene: code, radix sort, hierarchy, bounds, all
// pairs and the pair sort; per stage the dispatches, the bytes the kernels' documented traffic
// reads and writes, GB/s and the fraction of the copy kernel's bandwidth; with --json one object
// (device, scene, copy bandwidth, a `stages` list) instead of the table.
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "bench.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/scene.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace broadphase::tool {

void add_bench_pairs(CLI::App& c, BenchPairsOptions& o) {
    add_bench_gpu_options(c, o.common);
    add_bench_repeat(c, o.repeat);
    add_code(c, o.code);
    c.add_flag("--no-refine", o.no_refine,
               "codes not adapted to the scene (no second sort of long runs)");
    c.add_flag("--unsorted-pairs", o.unsorted_pairs,
               "the pairs as the traversal appended them, without the pair sort "
               "(LbvhOptions::sorted_pairs false)");
    add_enum(c, "--pair-append", o.pair_append,
             "how the all-pairs pass reserves output slots (subgroup: one atomic per subgroup, "
             "needs subgroup ballot; atomic: one per pair; automatic: subgroup where the device "
             "has ballot)",
             pair_append_names(), "pair append");
    cli::add_integer(c, "--pair-stack", o.pair_stack, "N", 1, gpu_layout::kPairStack,
                     "stack entries of the all-pairs traversal before a subtree goes to the next "
                     "round's work queue (1.." +
                         std::to_string(gpu_layout::kPairStack) + "; default " +
                         std::to_string(gpu_layout::kPairStack) + ")");
    add_first_round_budget(c, "--pair-budget", o.pair_budget,
                           "steps one invocation of the all-pairs traversal",
                           gpu_layout::kPairGroup);
}

#ifdef BROADPHASE_HAS_GPU
int run_bench(const BenchPairsOptions& o) {
    auto scene = load_input_scene(o.common.scene);
    if (!scene) return fail(scene.error());
    const int repeat = o.repeat;
    auto context = open_context(o.common.gpu);
    if (!context) return fail(context.error());
    gpu::LbvhOptions options{o.code, !o.no_refine};
    options.pair_append = o.pair_append;
    options.pair_stack = o.pair_stack;
    options.pair_budget = o.pair_budget;
    options.sorted_pairs = !o.unsorted_pairs;
    auto lbvh = gpu::Lbvh::create(*context.value(), options);
    if (!lbvh) return fail(lbvh.error());
    const gpu::DeviceInfo& info = context.value()->info();
    auto warm = BenchWarmUp::create(o.common.warm_up_ms, *context.value());
    if (!warm) return fail(warm.error());
    std::vector<std::vector<gpu::StageReport>> runs;
    std::size_t pair_count = 0;
    double wall = 0;
    for (int r = 0; r < repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        if (Status s = warm->before_run(); !s) return fail(s.error());
        auto start = std::chrono::steady_clock::now();
        auto pairs = lbvh.value()->find_pairs(scene->boxes);
        double t = seconds_since(start);
        if (!pairs) return fail(pairs.error());
        pair_count = pairs->size();
        if (r > 0) {
            auto report = last_report(*lbvh.value());
            if (!report) return fail(report.error());
            runs.push_back(std::move(report.value()));
            wall += t;
        }
    }
    if (Status s = warm->before_run(); !s) return fail(s.error());  // the yardstick too
    auto copy = gpu::measure_copy_bandwidth(*context.value());
    if (!copy) return fail(copy.error());
    // Medians per stage (the dispatches and the traffic of the build and traversal are the
    // same every run; the pair sort's too, as the pairs are).
    const std::vector<gpu::StageReport> stages = median_stages(runs);
    std::string refined = "no";
    if (auto r = lbvh.value()->read_refined(); r && r.value()) refined = "yes";
    const char* append =
        lbvh.value()->pair_append() == gpu::PairAppend::subgroup ? "subgroup" : "atomic";
    if (o.code == CodeKind::morton63 || o.no_refine) refined = "off";
    const std::uint32_t pair_budget = o.pair_budget != 0 ? o.pair_budget : info.pair_first_round;
    const std::string code = name_of(code_names(), o.code);
    if (o.common.json) {
        print_device_json(info);
        std::printf(
            "\"scene\": \"%s\", \"boxes\": %zu, \"code\": \"%s\", \"refined\": "
            "\"%s\", \"pair_append\": \"%s\", \"pair_stack\": %u, \"pair_budget\": %u, "
            "\"sort_path\": \"%s\", \"warm_up_ms\": %.0f, \"runs\": %d, \"pairs\": %zu, "
            "\"pairs_sorted\": %s, ",
            json_escape(scene->name).c_str(), scene->boxes.size(), code.c_str(), refined.c_str(),
            append, o.pair_stack ? o.pair_stack : gpu_layout::kPairStack, pair_budget,
            gpu::sort_path_name(info.sort_path), warm->ms(), repeat, pair_count,
            o.unsorted_pairs ? "false" : "true");
        print_stages_json(stages, *copy);
        return 0;
    }
    std::printf(
        "device: %s (%s), subgroup size %u, traversal budget %u (all pairs: %u in the first "
        "round)\n",
        info.name.c_str(), info.driver.c_str(), info.subgroup_size, info.traversal_budget,
        pair_budget);
    std::string sort = std::string(gpu::sort_path_name(info.sort_path)) + " (" +
                       (info.sort_subgroup_rank ? "subgroup" : "shared-memory") + " ranks";
    if (info.sort_path == gpu::SortPath::onesweep)
        sort += ", look-back window " + std::to_string(info.sort_window);
    std::printf("scene: %s, %zu boxes, code %s, sort %s), %d runs (median per stage)\n",
                scene->name.c_str(), scene->boxes.size(), code.c_str(), sort.c_str(), repeat);
    if (info.timestamp_period_ns == 0) std::printf("warning: this queue has no timestamps\n");
    warm->print();
    print_copy_line(*copy);
    print_stage_rows(stages, *copy, 18);
    double build = 0, total = 0;
    for (const gpu::StageReport& s : stages) {
        total += s.ms;
        if (s.name != "all pairs" && s.name != "pair sort") build += s.ms;
    }
    std::printf("  %-18s %10.3f ms\n", "build total", build);
    std::printf("  %-18s %10.3f ms\n", "gpu total", total);
    std::printf("pairs: %zu (appended %s%s)\n", pair_count,
                std::string_view(append) == "subgroup" ? "one atomic per subgroup (ballot)"
                                                       : "one atomic per pair",
                o.unsorted_pairs ? "; not sorted: --unsorted-pairs" : "");
    if (refined == "off") {
        std::printf("adaptive codes: %s\n",
                    o.no_refine ? "off (--no-refine)" : "not applied to morton63");
    } else if (refined == "yes") {
        std::printf(
            "adaptive codes: refined (a run of %u or more equal first codes; the radix "
            "sort stage includes re-coding the runs and a second sort within them)\n",
            gpu_layout::kRefineRun);
    } else {
        std::printf("adaptive codes: not needed (no run of %u equal first codes)\n",
                    gpu_layout::kRefineRun);
    }
    std::printf("host wall per run (upload, download, sort on CPU included): %.3f ms\n",
                wall / repeat * 1e3);
    return 0;
}
#endif

}  // namespace broadphase::tool
