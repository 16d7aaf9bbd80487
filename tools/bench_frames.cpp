// `broadphase bench frames --frames F`: per-stage GPU timings of the moving-scene path
// (gpu::MovingScene: refit or rebuild, pairs, pair sort, event diff; the scene animated by the
// deterministic jitter of tools/animation.hpp), from timestamp queries; with its instruments
// (dispatches, modelled bytes, bandwidth against the copy kernel: MovingScene::last_report) and
// --json; with --churn, a gpu::ProxyScene whose bodies come and go.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "animation.hpp"
#include "bench.hpp"
#include "broadphase/scene.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#endif

namespace broadphase::tool {

namespace {

#ifdef BROADPHASE_HAS_GPU
double ms_between(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

void print_row(const char* stage, const std::vector<double>& v) {
    if (v.empty())
        std::printf("  %-28s %10s\n", stage, "-");
    else
        std::printf("  %-28s %10.3f\n", stage, median(v));
}

// The instruments' table of bench frames, as the build bench prints its own.
void print_stage_table(const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy,
                       int frames) {
    print_copy_line(copy);
    std::printf("instruments per frame, median over %d frames:\n", frames);
    print_stage_rows(stages, copy, 24);
    std::uint32_t dispatches = 0;
    for (const gpu::StageReport& s : stages) dispatches += s.dispatches;
    std::printf("  %-24s %10s %10u\n", "frame", "", dispatches);
}

// bench frames --json: one object with the device, scene, copy bandwidth and `stages`.
void print_stage_json(const gpu::Context& context, const std::string& scene, std::size_t boxes,
                      int frames, int refits, int rebuilds,
                      const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy) {
    print_device_json(context.info());
    std::printf(
        "\"scene\": \"%s\", \"boxes\": %zu, \"frames\": %d, \"refit_frames\": %d, "
        "\"rebuild_frames\": %d, ",
        json_escape(scene).c_str(), boxes, frames, refits, rebuilds);
    print_stages_json(stages, copy);
}

// `bench frames --frames F --churn P`: a gpu::ProxyScene over the scene's boxes (all dynamic),
// whose every body follows the scene's animation, and each frame P% of the live bodies are removed
// and as many added. Added bodies come from a pool of the scene's boxes reflected through the
// scene's centre (same sizes and spread, other places) and animated alike; half of them are
// debris (category 2, mask ~2: debris never collides with debris).
int run_churn_bench(const BenchFramesOptions& args, gpu::Context& context,
                    const std::vector<Box>& base, const gpu::MovingSceneOptions& frames_options) {
    const int frames = args.frames;
    const std::size_t n = base.size();
    const Box bounds = bounds_of(base);
    std::vector<Box> all = base;
    for (const Box& b : base) {
        const float sx = bounds.min.x + bounds.max.x, sy = bounds.min.y + bounds.max.y,
                    sz = bounds.min.z + bounds.max.z;
        all.push_back({{sx - b.max.x, sy - b.max.y, sz - b.max.z},
                       {sx - b.min.x, sy - b.min.y, sz - b.min.z}});
    }
    gpu::ProxySceneOptions options;
    options.frames = frames_options;
    options.initial_dynamic_capacity = static_cast<std::uint32_t>(n + n / 8 + 2);
    options.initial_handle_capacity = options.initial_dynamic_capacity;
    auto made = gpu::ProxyScene::create(context, options);
    if (!made) return fail(made.error().message, "bench");
    gpu::ProxyScene& scene = *made.value();
    // Body at pool index i: its handle, or none.
    constexpr ProxyHandle kNone = 0xffffffffu;
    std::vector<ProxyHandle> handle(all.size(), kNone);
    std::vector<std::size_t> live, dead;
    for (std::size_t i = 0; i < n; ++i) {
        auto h = scene.add(all[i]);
        if (!h) return fail(h.error().message, "bench");
        handle[i] = *h;
        live.push_back(i);
    }
    for (std::size_t i = n; i < all.size(); ++i) dead.push_back(i);
    auto first = scene.step();
    if (!first) return fail(first.error().message, "bench");
    if (!args.common.json)
        std::printf("first frame (build + pairs + sort): %.3f ms GPU, %zu pairs\n",
                    scene.last_times().gpu_total(), static_cast<std::size_t>(first->pair_count));

    const std::size_t churn = static_cast<std::size_t>(double(n) * args.churn / 100.0);
    std::mt19937_64 rng(args.seed);
    Filter debris;
    debris.category = 2;
    debris.mask = ~2u;
    std::vector<double> upload, batch, refit, rebuild, pairs, sort, diff, total, wall, pair_counts,
        events;
    std::vector<std::vector<gpu::StageReport>> reports;
    int refits = 0, rebuilds = 0;
    Animation animation(all);
    auto warm = BenchWarmUp::create(args.common.warm_up_ms, context);
    if (!warm) return fail(warm.error().message, "bench");
    for (int f = 1; f <= frames; ++f) {
        animation.advance();
        if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t k = 0; k < churn && !live.empty(); ++k) {
            const std::size_t at = rng() % live.size();
            const std::size_t i = live[at];
            if (Status s = scene.remove(handle[i]); !s) return fail(s.error().message, "bench");
            handle[i] = kNone;
            live[at] = live.back();
            live.pop_back();
            dead.push_back(i);
        }
        for (std::size_t k = 0; k < churn && !dead.empty(); ++k) {
            const std::size_t at = rng() % dead.size();
            const std::size_t i = dead[at];
            auto h = scene.add(animation.boxes()[i], k % 2 ? debris : Filter{});
            if (!h) return fail(h.error().message, "bench");
            handle[i] = *h;
            dead[at] = dead.back();
            dead.pop_back();
            live.push_back(i);
        }
        for (std::size_t i : live)
            if (Status s = scene.move(handle[i], animation.boxes()[i]); !s)
                return fail(s.error().message, "bench");
        auto r = scene.step();
        wall.push_back(ms_between(start));
        if (!r) return fail(r.error().message, "bench");
        const gpu::FrameTimes& t = scene.last_times();
        auto report = last_report(scene);
        if (!report) return fail(report.error().message, "bench");
        reports.push_back(std::move(report.value()));
        upload.push_back(t.upload);
        batch.push_back(t.proxies);
        refit.push_back(t.refit);
        if (t.path == gpu::FramePath::refit) {
            ++refits;
        } else {
            ++rebuilds;
            rebuild.push_back(t.rebuild);
        }
        pairs.push_back(t.pairs);
        sort.push_back(t.sort);
        diff.push_back(t.diff);
        total.push_back(t.gpu_total());
        pair_counts.push_back(double(r->pair_count));
        events.push_back(double(r->began.size() + r->ended.size()));
    }
    if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
    auto copy = gpu::measure_copy_bandwidth(context);
    if (!copy) return fail(copy.error().message, "bench");
    const auto stages = median_stages(reports);
    if (args.common.json) {
        print_stage_json(context, args.common.scene, n, frames, refits, rebuilds, stages,
                         copy.value());
        return validation_check(context);
    }
    warm->print();
    std::printf(
        "churn: %zu bodies removed and %zu added per frame (%.2f%%), half of the added "
        "debris\n",
        churn, churn, args.churn);
    std::printf("per frame, median over %d frames (ms):\n", frames);
    print_row("batch records (host wall)", upload);
    print_row("batch + fresh/static trees (GPU)", batch);
    print_row("refit + cost + decision (GPU)", refit);
    print_row("rebuild + cost (GPU)", rebuild);
    print_row("pairs (GPU)", pairs);
    print_row("pair sort (GPU)", sort);
    print_row("event diff (GPU)", diff);
    print_row("total (GPU, median of sums)", total);
    print_row("step() host wall, all in", wall);
    std::printf("refit frames: %d, rebuild frames: %d\n", refits, rebuilds);
    std::printf("pairs per frame: %.0f (median), events per frame: %.0f (median began + ended)\n",
                median(pair_counts), median(events));
    print_stage_table(stages, copy.value(), frames);
    return validation_check(context);
}
#endif

}  // namespace

#ifdef BROADPHASE_HAS_GPU
namespace {

/// What bench frames measures per frame (ms unless said otherwise).
struct FrameSamples {
    std::vector<double> upload, refit, rebuild, emptied, pairs, sort, diff, total, pair_counts,
        events, ratios, work_ratios;
    std::vector<double> wall;  // host wall of MovingScene::step: staging, submit, wait, reads
    std::vector<std::vector<gpu::StageReport>> reports;  // the instruments of each frame
    int refits = 0, rebuilds = 0, regrown = 0;
};

/// Steps `ms` through `frames` frames of the scene's animation, one step() each.
Result<FrameSamples> measure_frames(gpu::MovingScene& ms, const std::vector<Box>& base, int frames,
                                    gpu::RefitPolicy policy, BenchWarmUp& warm) {
    FrameSamples out;
    Animation animation(base);
    for (int f = 1; f <= frames; ++f) {
        animation.advance();
        if (Status s = warm.before_run(); !s) return s.error();
        const auto step_start = std::chrono::steady_clock::now();
        auto r = ms.step(animation.boxes());
        out.wall.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start)
                .count());
        if (!r) return r.error();
        const gpu::FrameTimes& t = ms.last_times();
        auto report = last_report(ms);
        if (!report) return report.error();
        out.reports.push_back(std::move(report.value()));
        out.upload.push_back(t.upload);
        if (t.path == gpu::FramePath::refit) {
            ++out.refits;
            out.refit.push_back(t.refit);
            if (policy == gpu::RefitPolicy::by_ratio) out.emptied.push_back(t.rebuild);
        } else {
            ++out.rebuilds;
            out.rebuild.push_back(t.rebuild);
            // The ratio policy refits (and decides) before it rebuilds.
            if (policy == gpu::RefitPolicy::by_ratio) out.refit.push_back(t.refit);
        }
        out.pairs.push_back(t.pairs);
        out.sort.push_back(t.sort);
        out.diff.push_back(t.diff);
        out.total.push_back(t.gpu_total());
        out.pair_counts.push_back(r->pair_count);
        out.regrown += r->regrown ? 1 : 0;
        out.events.push_back(double(r->began.size() + r->ended.size()));
        out.ratios.push_back(r->ratio);
        out.work_ratios.push_back(r->work_ratio);
    }
    return out;
}

/// The medians of `s` as bench frames prints them.
void print_frames(const FrameSamples& s, int frames) {
    auto row = [](const char* stage, const std::vector<double>& v) {
        if (v.empty())
            std::printf("  %-28s %10s\n", stage, "-");
        else
            std::printf("  %-28s %10.3f\n", stage, median(v));
    };
    std::printf("per frame, median over %d frames (ms):\n", frames);
    row("upload (host wall)", s.upload);
    row("refit + cost + decision (GPU)", s.refit);
    row("rebuild + cost (GPU)", s.rebuild);
    row("emptied rebuild, refit frames", s.emptied);
    row("pairs (GPU)", s.pairs);
    row("pair sort (GPU)", s.sort);
    row("event diff (GPU)", s.diff);
    row("total (GPU, median of sums)", s.total);
    row("step() host wall, all in", s.wall);
    std::printf("refit frames: %d, rebuild frames: %d, frames that grew the pair buffers: %d\n",
                s.refits, s.rebuilds, s.regrown);
    std::printf("pairs per frame: %.0f (median), events per frame: %.0f (median began + ended)\n",
                median(s.pair_counts), median(s.events));
    std::printf(
        "SAH ratio: %.3f (median), %.3f (max); traversal work ratio: %.3f (median), "
        "%.3f (max)\n",
        median(s.ratios), *std::max_element(s.ratios.begin(), s.ratios.end()),
        median(s.work_ratios), *std::max_element(s.work_ratios.begin(), s.work_ratios.end()));
}

/// --back-to-back: the same frames again, each already in a device buffer (as a simulation on
/// the GPU would have them), all recorded into one command buffer: no host work between
/// frames. Prints the wall time and the last frame's counts; returns the exit status.
int run_back_to_back(gpu::Context& context, gpu::MovingScene& ms, const std::vector<Box>& base,
                     int frames) {
    std::vector<gpu::Buffer> buffers;
    Animation again(base);
    for (int f = 1; f <= frames; ++f) {
        again.advance();
        const auto boxes = gpu::to_gpu_boxes(again.boxes());
        const VkDeviceSize bytes = boxes.size() * sizeof(boxes[0]);
        auto b = context.create_buffer(bytes + 1, gpu::MemoryKind::device);
        if (!b) return fail(b.error().message, "bench");
        if (Status s = context.upload(*b, boxes.data(), bytes); !s)
            return fail(s.error().message, "bench");
        buffers.push_back(std::move(b.value()));
    }
    if (Status s = ms.reset(base); !s) return fail(s.error().message, "bench");
    const auto start = std::chrono::steady_clock::now();
    Status s = context.submit_and_wait([&](VkCommandBuffer cmd) {
        // Cannot fail after the reset above.
        for (const gpu::Buffer& b : buffers) (void)ms.record_step(cmd, gpu::whole(b));
    });
    const double submit_wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!s) return fail(s.error().message, "bench");
    auto r = ms.read_step();
    if (!r) return fail(r.error().message, "bench");
    std::printf(
        "back to back: %d frames recorded in one submit (MovingScene::record_step): %.3f ms "
        "wall, %.3f ms per frame; last frame %u pairs, %zu events\n",
        frames, submit_wall, submit_wall / frames, r->pair_count,
        r->began.size() + r->ended.size());
    return 0;
}

}  // namespace
#endif

void add_bench_frames(CLI::App& c, BenchFramesOptions& o) {
    cli::add_integer(c, "--frames", o.frames, "F", 1, 10000,
                     "animate --scene for F frames (1..10000)")
        ->required();
    add_bench_gpu_options(c, o.common);
    add_code(c, o.code);
    add_policy(c, o.policy);
    add_rebuild_ratio(c, o.rebuild_ratio, false);
    add_rebuild_ratio(c, o.rebuild_work_ratio, true);
    c.add_flag("--back-to-back", o.back_to_back,
               "also record all F frames into one submit (wall ms per frame)");
    c.add_option("--churn", o.churn,
                 "run the frames on a gpu::ProxyScene: every body moves, P% of them are removed "
                 "and P% added each frame, half of those debris that does not collide with "
                 "debris (0 < P <= 50)")
        ->type_name("P")
        ->check(CLI::Range(0.0, 50.0));
}

#ifdef BROADPHASE_HAS_GPU
int run_bench(const BenchFramesOptions& args) {
    const int frames = args.frames;
    const std::string& spec = args.common.scene;
    auto scene = load_input_scene(spec);
    if (!scene) return fail(scene.error().message, "bench");
    gpu::MovingSceneOptions options;
    options.return_pairs = false;
    options.code = args.code;
    options.policy = args.policy;
    if (args.rebuild_ratio) options.rebuild_ratio = *args.rebuild_ratio;
    if (args.rebuild_work_ratio) options.rebuild_work_ratio = *args.rebuild_work_ratio;

    if (args.churn > 0 && args.back_to_back)
        return fail("--churn and --back-to-back cannot be combined", "bench");
    auto context = open_context(args.common.gpu);
    if (!context) return fail(context.error().message, "bench");
    if (!args.common.json) {
        print_bench_device(*context.value());
        std::printf("scene: %s, %zu boxes, %d frames, policy %s, code %s\n", spec.c_str(),
                    scene->boxes.size(), frames, name_of(policy_names(), args.policy).c_str(),
                    name_of(code_names(), args.code).c_str());
    }
    if (args.common.json && args.back_to_back)
        return fail("--json and --back-to-back cannot be combined", "bench");
    if (args.churn > 0) return run_churn_bench(args, *context.value(), scene->boxes, options);
    auto moving = gpu::MovingScene::create(*context.value(), options);
    if (!moving) return fail(moving.error().message, "bench");
    gpu::MovingScene& ms = *moving.value();
    if (Status s = ms.reset(scene->boxes); !s) return fail(s.error().message, "bench");
    const gpu::FrameTimes first = ms.last_times();
    if (!args.common.json)
        std::printf(
            "reset (build + pairs + sort): %.3f ms GPU (build %.3f, pairs %.3f, sort %.3f)\n",
            first.gpu_total(), first.rebuild, first.pairs, first.sort);
    auto warm = BenchWarmUp::create(args.common.warm_up_ms, *context.value());
    if (!warm) return fail(warm.error().message, "bench");
    if (!args.common.json) warm->print();
    auto samples = measure_frames(ms, scene->boxes, frames, options.policy, warm.value());
    if (!samples) return fail(samples.error().message, "bench");
    if (Status s = warm->before_run(); !s) return fail(s.error().message, "bench");
    auto copy = gpu::measure_copy_bandwidth(*context.value());
    if (!copy) return fail(copy.error().message, "bench");
    const auto stages = median_stages(samples->reports);
    if (args.common.json) {
        print_stage_json(*context.value(), spec, scene->boxes.size(), frames, samples->refits,
                         samples->rebuilds, stages, copy.value());
        return validation_check(*context.value());
    }
    print_frames(samples.value(), frames);
    print_stage_table(stages, copy.value(), frames);
    if (args.back_to_back) {
        if (int status = run_back_to_back(*context.value(), ms, scene->boxes, frames); status != 0)
            return status;
    }
    return validation_check(*context.value());
}
#endif

}  // namespace broadphase::tool
