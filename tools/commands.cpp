// Implementation of the tool's commands over the public API only.
#include "commands.hpp"

#include "plot.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace broadphase::tool {

namespace {

constexpr int kExitDiff = 1;
constexpr int kExitUsage = 2;
// Above this many boxes validate compares with sweep_and_prune instead of brute force
// (brute force is O(n^2)); --reference brute_force forces the oracle.
constexpr std::size_t kBruteForceLimit = 100000;

int fail(const Error& e) {
    std::fprintf(stderr, "broadphase: %s\n", e.message.c_str());
    return kExitUsage;
}

int fail(const std::string& message) {
    return fail(Error{ErrorCode::invalid_argument, message, {}, {}});
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, sep);)
        if (!item.empty()) out.push_back(item);
    return out;
}

#ifdef BROADPHASE_HAS_GPU
// The GPU pieces a command needs, created on first use.
struct Gpu {
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::Lbvh> lbvh;
};

Result<gpu::CodeKind> parse_code(const Args& args) {
    std::string code = args.get("code", "morton30");
    if (code == "morton30") return gpu::CodeKind::morton30;
    if (code == "morton63") return gpu::CodeKind::morton63;
    if (code == "hilbert30") return gpu::CodeKind::hilbert30;
    return Error{ErrorCode::invalid_argument,
                 "unknown --code '" + code + "' (morton30, morton63, hilbert30)",
                 {},
                 {}};
}

Result<Gpu> open_gpu(const Args& args) {
    gpu::ContextOptions options;
    options.device = args.get("device");
    options.validation = args.has("validation");
    auto code = parse_code(args);
    if (!code) return code.error();
    auto context = gpu::Context::create(options);
    if (!context) return context.error();
    auto lbvh = gpu::Lbvh::create(*context.value(), {code.value()});
    if (!lbvh) return lbvh.error();
    return Gpu{std::move(context.value()), std::move(lbvh.value())};
}
#endif

bool is_gpu_method(const std::string& m) {
    return m == "gpu_lbvh";
}

std::vector<std::string> all_methods() {
    std::vector<std::string> methods;
    for (std::string_view m : cpu_method_names()) methods.emplace_back(m);
#ifdef BROADPHASE_HAS_GPU
    methods.emplace_back("gpu_lbvh");
#endif
    return methods;
}

// Canonical pairs of `method` over the scene.
Result<std::vector<Pair>> method_pairs(const std::string& method, const Scene& scene,
                                       const Args& args) {
    if (is_gpu_method(method)) {
#ifdef BROADPHASE_HAS_GPU
        auto g = open_gpu(args);
        if (!g) return g.error();
        auto pairs = g->lbvh->find_pairs(scene.boxes);
        if (pairs && g->context->validation_errors() > 0)
            return Error{ErrorCode::vulkan_error,
                         std::to_string(g->context->validation_errors()) +
                             " Vulkan validation errors (printed above)",
                         {},
                         {}};
        return pairs;
#else
        (void)args;
        return Error{ErrorCode::unsupported, "this build has no GPU support", {}, {}};
#endif
    }
    return find_pairs_cpu(method, scene.boxes);
}

Result<Scene> scene_from(const Args& args) {
    return load_scene(args.get("scene", kDefaultScene));
}

}  // namespace

int run_pairs(const Args& args) {
    if (args.has("against")) return run_pairs_against(args);
    if (!args.has("method"))
        return fail("pairs needs --method (" + [] {
            std::string s;
            for (const auto& m : all_methods()) s += (s.empty() ? "" : ", ") + m;
            return s;
        }() + ")");
    auto scene = scene_from(args);
    if (!scene) return fail(scene.error());
    auto pairs = method_pairs(args.get("method"), scene.value(), args);
    if (!pairs) return fail(pairs.error());
    std::string text = format_pairs(pairs.value());
    if (args.has("out")) {
        std::ofstream out(args.get("out"), std::ios::binary);
        if (!out || !(out << text)) return fail("cannot write '" + args.get("out") + "'");
    } else {
        std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return 0;
}

int run_validate(const Args& args) {
    auto scene = scene_from(args);
    if (!scene) return fail(scene.error());
    std::size_t n = scene->boxes.size();
    std::vector<std::string> methods =
        args.has("methods") ? split(args.get("methods"), ',') : all_methods();
    std::string reference =
        args.get("reference", n <= kBruteForceLimit ? "brute_force" : "sweep_and_prune");
    std::printf("scene %s: %zu boxes; reference %s\n", scene->name.c_str(), n, reference.c_str());

    auto start = std::chrono::steady_clock::now();
    auto expected = method_pairs(reference, scene.value(), args);
    if (!expected) return fail(expected.error());
    std::printf("  %-18s %10zu pairs  %9.3f s  (reference)\n", reference.c_str(), expected->size(),
                seconds_since(start));
    int status = 0;
    for (const std::string& method : methods) {
        if (method == reference) continue;
        start = std::chrono::steady_clock::now();
        auto got = method_pairs(method, scene.value(), args);
        double t = seconds_since(start);
        if (!got) {
            std::printf("  %-18s ERROR: %s\n", method.c_str(), got.error().message.c_str());
            status = kExitDiff;
            continue;
        }
        bool same = got.value() == expected.value();
        std::printf("  %-18s %10zu pairs  %9.3f s  %s\n", method.c_str(), got->size(), t,
                    same ? "agrees" : "DIFFERS");
        if (!same) {
            std::vector<Pair> missing, extra;
            std::set_difference(expected->begin(), expected->end(), got->begin(), got->end(),
                                std::back_inserter(missing));
            std::set_difference(got->begin(), got->end(), expected->begin(), expected->end(),
                                std::back_inserter(extra));
            std::printf("    %zu missing, %zu extra", missing.size(), extra.size());
            if (!missing.empty())
                std::printf("; first missing (%u, %u)", missing[0].i, missing[0].j);
            if (!extra.empty()) std::printf("; first extra (%u, %u)", extra[0].i, extra[0].j);
            std::printf("\n");
            status = kExitDiff;
        }
    }
    std::printf(status == 0 ? "all methods agree\n" : "methods DISAGREE\n");
    return status;
}

namespace {

// `bench --cpu`: build + self-pairs time of every CPU structure on the standard scenes over a
// range of N, as a markdown table and one log-log PNG per scene (seed 004's figures).
int run_cpu_bench(const Args& args) {
    std::vector<std::string> scenes =
        split(args.get("scenes", "uniform,clustered,xline,yline,mixed_sizes,degenerate"), ',');
    std::vector<std::size_t> sizes;
    for (const std::string& s : split(args.get("sizes", "1000,10000,100000,1000000"), ','))
        sizes.push_back(std::strtoull(s.c_str(), nullptr, 10));
    std::vector<std::string> methods;
    if (args.has("methods")) {
        methods = split(args.get("methods"), ',');
    } else {
        for (std::string_view m : cpu_method_names()) methods.emplace_back(m);
    }
    // A method that needed longer than this at one size is not run at larger sizes.
    double budget = std::atof(args.get("max-seconds", "10").c_str());
    std::string out_dir = args.get("out-dir", ".");

    std::string table = "| scene | N | pairs |";
    for (const std::string& m : methods) table += " " + m + " |";
    table += "\n|---|---|---|";
    for (std::size_t k = 0; k < methods.size(); ++k) table += "---|";
    table += "\n";
    std::printf("%s", table.c_str());
    for (const std::string& scene_name : scenes) {
        std::vector<Series> series(methods.size());
        std::vector<bool> retired(methods.size(), false);
        for (std::size_t k = 0; k < methods.size(); ++k) series[k].name = methods[k];
        for (std::size_t n : sizes) {
            auto scene = generate_scene(scene_name, n);
            if (!scene) return fail(scene.error());
            std::string row = "| " + scene_name + " | " + std::to_string(n) + " | ";
            std::string cells;
            std::size_t pair_count = 0;
            for (std::size_t k = 0; k < methods.size(); ++k) {
                if (retired[k]) {
                    cells += " — |";
                    continue;
                }
                auto structure = make_structure(methods[k]);
                if (!structure) return fail(structure.error());
                auto start = std::chrono::steady_clock::now();
                Status built = structure.value()->build(scene->boxes);
                if (!built) return fail(built.error());
                std::vector<Pair> pairs;
                structure.value()->self_pairs(pairs);
                double t = seconds_since(start);
                pair_count = pairs.size();
                char cell[48];
                std::snprintf(cell, sizeof cell, " %.4f |", t);
                cells += cell;
                series[k].x.push_back(double(n));
                series[k].y.push_back(std::max(t, 1e-6));
                if (t > budget) retired[k] = true;
            }
            row += std::to_string(pair_count) + " |" + cells + "\n";
            std::printf("%s", row.c_str());
            std::fflush(stdout);
            table += row;
        }
        std::string path = out_dir + "/bench_cpu_" + scene_name + ".png";
        Status s =
            write_png(path, plot_loglog("build + self pairs, " + scene_name + " scene (one core)",
                                        "boxes (N)", "seconds", series));
        if (!s) return fail(s.error());
        std::fprintf(stderr, "wrote %s\n", path.c_str());
    }
    if (args.has("table")) {
        std::ofstream out(args.get("table"));
        if (!out || !(out << table)) return fail("cannot write '" + args.get("table") + "'");
    }
    return 0;
}

}  // namespace

int run_bench(const Args& args) {
    if (args.has("cull")) return run_cull_bench(args);
    if (args.has("frames")) return run_frame_bench(args);
    if (args.has("rays")) return run_ray_bench(args);
    if (args.has("cpu")) return run_cpu_bench(args);
#ifdef BROADPHASE_HAS_GPU
    auto scene = scene_from(args);
    if (!scene) return fail(scene.error());
    int repeat = std::max(1, std::atoi(args.get("repeat", "5").c_str()));
    auto g = open_gpu(args);
    if (!g) return fail(g.error());
    const gpu::DeviceInfo& info = g->context->info();
    std::printf("device: %s (%s), subgroup size %u\n", info.name.c_str(), info.driver.c_str(),
                info.subgroup_size);
    std::printf("scene: %s, %zu boxes, code %s, %d runs (median per stage)\n", scene->name.c_str(),
                scene->boxes.size(), args.get("code", "morton30").c_str(), repeat);
    if (info.timestamp_period_ns == 0) std::printf("warning: this queue has no timestamps\n");
    std::vector<gpu::StageTimes> runs;
    std::size_t pair_count = 0;
    double wall = 0;
    for (int r = 0; r < repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        auto start = std::chrono::steady_clock::now();
        auto pairs = g->lbvh->find_pairs(scene->boxes);
        double t = seconds_since(start);
        if (!pairs) return fail(pairs.error());
        pair_count = pairs->size();
        if (r > 0) {
            runs.push_back(g->lbvh->last_times());
            wall += t;
        }
    }
    auto median = [&](double gpu::StageTimes::*field) {
        std::vector<double> v;
        for (const auto& s : runs) v.push_back(s.*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    struct Row {
        const char* name;
        double gpu::StageTimes::*field;
    };
    const Row rows[] = {
        {"scene bounds", &gpu::StageTimes::bounds},     {"morton codes", &gpu::StageTimes::codes},
        {"radix sort", &gpu::StageTimes::sort},         {"hierarchy", &gpu::StageTimes::hierarchy},
        {"node bounds", &gpu::StageTimes::node_bounds}, {"all pairs", &gpu::StageTimes::pairs}};
    double build = 0, total = 0;
    for (const Row& row : rows) {
        double ms = median(row.field);
        std::printf("  %-14s %10.3f ms\n", row.name, ms);
        total += ms;
        if (row.field != &gpu::StageTimes::pairs) build += ms;
    }
    std::printf("  %-14s %10.3f ms\n", "build total", build);
    std::printf("  %-14s %10.3f ms\n", "gpu total", total);
    std::printf("pairs: %zu\n", pair_count);
    std::printf("host wall per run (upload, download, sort on CPU included): %.3f ms\n",
                wall / repeat * 1e3);
    return 0;
#else
    (void)args;
    return fail("bench needs the GPU build");
#endif
}

int run_scene(const Args& args) {
    auto scene = scene_from(args);
    if (!scene) return fail(scene.error());
    if (args.has("out")) {
        Status s = write_scene_file(args.get("out"), scene->boxes);
        if (!s) return fail(s.error());
        std::fprintf(stderr, "wrote %zu boxes to %s\n", scene->boxes.size(),
                     args.get("out").c_str());
    } else {
        std::string text = format_scene_text(scene->boxes);
        std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return 0;
}

int run_devices(const Args& args) {
#ifdef BROADPHASE_HAS_GPU
    auto g = open_gpu(args);
    if (!g) return fail(g.error());
    const gpu::DeviceInfo& info = g->context->info();
    std::printf(
        "chosen device: %s\n  driver: %s\n  subgroup size: %u\n  maxStorageBufferRange: %llu\n",
        info.name.c_str(), info.driver.c_str(), info.subgroup_size,
        static_cast<unsigned long long>(info.max_storage_buffer_range));
    return 0;
#else
    (void)args;
    return fail("this build has no GPU support");
#endif
}

}  // namespace broadphase::tool
