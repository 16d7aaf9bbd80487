// `broadphase bench rays --rays R`: GPU ms and throughput of R closest-hit ray casts and R region
// queries (gpu::LbvhQueries: stack-based traversal with a first-round budget, the region queries
// as count, scan and fill) over --scene, from timestamp queries; with the instruments of each
// (LbvhQueries::last_report) and --json.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/scene.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/lbvh_queries.hpp"
#endif

namespace broadphase::tool {

void add_bench_rays(CLI::App& c, BenchRaysOptions& o) {
    cli::add_integer(c, "--rays", o.rays, "R", 1, 100000000,
                     "R random rays and R region queries (1..100000000)")
        ->required();
    add_bench_gpu_options(c, o.common);
    add_bench_repeat(c, o.repeat);
    cli::add_integer(
        c, "--seed", o.seed, "X", 0, 4294967295,
        with_default("seed of the rays and regions (0..4294967295)", std::to_string(o.seed)));
    add_code(c, o.code);
    add_first_round_budget(c, "--query-budget", o.query_budget,
                           "steps one invocation of a ray cast or region query",
                           gpu_layout::kQueryFirstRound);
}

#ifdef BROADPHASE_HAS_GPU
int run_bench(const BenchRaysOptions& args) {
    const long long count = args.rays;
    const int repeat = args.repeat;
    const std::string& spec = args.common.scene;
    auto scene = load_input_scene(spec);
    if (!scene) return fail(scene.error().message, "bench");
    const std::uint32_t seed = args.seed;

    // Rays from uniform points of the scene's bounds in uniform directions, unbounded; regions
    // are boxes of the scene's mean extent at uniform points of its bounds.
    const Box bounds = bounds_of(scene->boxes);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto point = [&] {
        return Vec3{bounds.min.x + (bounds.max.x - bounds.min.x) * unit(rng),
                    bounds.min.y + (bounds.max.y - bounds.min.y) * unit(rng),
                    bounds.min.z + (bounds.max.z - bounds.min.z) * unit(rng)};
    };
    std::vector<Ray> rays(static_cast<std::size_t>(count));
    for (Ray& ray : rays) {
        ray.origin = point();
        Vec3 d{0, 0, 0};
        float len = 0;
        while (!(len > 1e-6f)) {
            d = {normal(rng), normal(rng), normal(rng)};
            len = std::sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
        }
        ray.dir = {d.x / len, d.y / len, d.z / len};
        ray.tmax = std::numeric_limits<float>::infinity();
    }
    Vec3 extent{0, 0, 0};
    for (const Box& b : scene->boxes) {
        extent.x += b.max.x - b.min.x;
        extent.y += b.max.y - b.min.y;
        extent.z += b.max.z - b.min.z;
    }
    const float inv = scene->boxes.empty() ? 0.0f : 1.0f / float(scene->boxes.size());
    std::vector<Box> regions(static_cast<std::size_t>(count));
    for (Box& region : regions) {
        region.min = point();
        region.max = {region.min.x + extent.x * inv, region.min.y + extent.y * inv,
                      region.min.z + extent.z * inv};
    }

    auto context = open_context(args.common.gpu);
    if (!context) return fail(context.error().message, "bench");
    const bool json = args.common.json;  // one JSON object on stdout, nothing else
    const std::uint32_t query_budget =
        args.query_budget != 0 ? args.query_budget : context.value()->info().query_first_round;
    if (!json) {
        print_bench_device(*context.value());
        std::printf(
            "scene: %s, %zu boxes, %lld rays and %lld region queries (seed %u), %d runs, "
            "median; %u steps in a query's first round\n",
            spec.c_str(), scene->boxes.size(), count, count, seed, repeat, query_budget);
    }
    gpu::LbvhOptions options{args.code};
    options.query_budget = args.query_budget;
    auto queries = gpu::LbvhQueries::create(*context.value(), options);
    if (!queries) return fail(queries.error().message, "bench");
    gpu::LbvhQueries& q = *queries.value();
    if (Status s = q.build(scene->boxes); !s) return fail(s.error().message, "bench");
    auto warm = BenchWarmUp::create(args.common.warm_up_ms, *context.value());
    if (!warm) return fail(warm.error().message, "bench");
    if (!json) warm->print();

    std::vector<double> ray_ms, count_ms, scan_ms, fill_ms, region_ms;
    // The instruments of each timed run: the ray cast's stages, then the region queries'.
    std::vector<std::vector<gpu::StageReport>> reports;
    std::size_t hits = 0, region_hits = 0;
    for (int r = 0; r < repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
        auto cast = q.ray_cast(rays);
        if (!cast) return fail(cast.error().message, "bench");
        std::vector<gpu::StageReport> report = last_report(q);
        if (r > 0) ray_ms.push_back(q.last_times().ray_cast);
        hits = static_cast<std::size_t>(
            std::count_if(cast->begin(), cast->end(), [](const auto& h) { return h.has_value(); }));
        if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
        auto found = q.query_boxes(regions);
        if (!found) return fail(found.error().message, "bench");
        const gpu::QueryTimes& t = q.last_times();
        if (r > 0) {
            count_ms.push_back(t.count);
            scan_ms.push_back(t.scan);
            fill_ms.push_back(t.fill);
            region_ms.push_back(t.count + t.scan + t.fill);
            report.insert(report.end(), last_report(q).begin(), last_report(q).end());
            reports.push_back(std::move(report));
        }
        region_hits = found->ids.size();
    }
    if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
    auto copy = gpu::measure_copy_bandwidth(*context.value());
    if (!copy) return fail(copy.error().message, "bench");
    const std::vector<gpu::StageReport> stages = median_stages(reports);
    if (json) {
        print_device_json(context.value()->info());
        std::printf(
            "\"scene\": \"%s\", \"boxes\": %zu, \"rays\": %lld, \"regions\": %lld, "
            "\"seed\": %u, \"query_budget\": %u, \"runs\": %d, \"hits\": %zu, "
            "\"region_hits\": %zu, ",
            json_escape(spec).c_str(), scene->boxes.size(), count, count, seed, query_budget,
            repeat, hits, region_hits);
        print_stages_json(stages, copy.value());
        return validation_check(*context.value());
    }
    auto per_second = [&](double ms) { return ms > 0 ? double(count) / (ms * 1e-3) : 0.0; };
    const double rm = median(ray_ms), qm = median(region_ms);
    std::printf("ray cast (GPU):            %10.3f ms, %.3g rays/s, %zu hits\n", rm, per_second(rm),
                hits);
    std::printf("region count (GPU):        %10.3f ms\n", median(count_ms));
    std::printf("region scan (GPU):         %10.3f ms\n", median(scan_ms));
    std::printf("region fill (GPU):         %10.3f ms\n", median(fill_ms));
    std::printf("region queries (GPU):      %10.3f ms, %.3g queries/s, %zu hits\n", qm,
                per_second(qm), region_hits);
    print_copy_line(copy.value());
    std::printf("instruments per batch, median over %d runs:\n", repeat);
    print_stage_rows(stages, copy.value(), 24);
    return validation_check(*context.value());
}
#endif

}  // namespace broadphase::tool
