// Implementation of the tool's commands over the public API only.
#include "commands.hpp"

#include "bench_budget.hpp"
#include "io.hpp"
#include "plot.hpp"
#include "progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#include "environment.hpp"
#endif

namespace broadphase::tool {

Status check_gpu_options(const Args& args, const std::string& method) {
    if (method == "gpu_lbvh") return Status::success();
    for (const char* gpu_only : {"code", "device", "validation"}) {
        if (args.has(gpu_only))
            return Error{
                ErrorCode::invalid_argument,
                std::string("--") + gpu_only + " is for --method gpu_lbvh only, not " + method};
    }
    return Status::success();
}

std::vector<std::string> method_names() {
    std::vector<std::string> methods;
    for (std::string_view m : cpu_method_names()) methods.emplace_back(m);
#ifdef BROADPHASE_HAS_GPU
    methods.emplace_back("gpu_lbvh");
#endif
    return methods;
}

#ifdef BROADPHASE_HAS_GPU
Result<std::unique_ptr<gpu::Context>> open_context(const GpuChoice& choice) {
    gpu::ContextOptions options;
    options.device = choice.device;
    options.validation = choice.validation;
    // --sort-path and --traversal-budget, else their environment variables (BROADPHASE_SORT_PATH,
    // BROADPHASE_TRAVERSAL_BUDGET; the sort's window and ranking from theirs), else the
    // device's rule.
    options.tuning.sort_path = choice.sort_path;
    options.tuning.traversal_budget = choice.traversal_budget;
    auto tuning = tuning_from_environment(options.tuning);
    if (!tuning) return tuning.error();
    options.tuning = tuning.value();
    return gpu::Context::create(options);
}

Result<std::unique_ptr<gpu::Context>> open_context(const Args& args) {
    return open_context(GpuChoice{args.device, args.validation});
}

int validation_check(const gpu::Context& context) {
    if (context.validation_errors() == 0) return 0;
    return fail(
        std::to_string(context.validation_errors()) + " Vulkan validation errors (printed above)",
        "bench");
}

Result<BenchWarmUp> BenchWarmUp::create(std::optional<double> warm_up_ms, gpu::Context& context) {
    BenchWarmUp w;
    w.ms_ = warm_up_ms                                           ? *warm_up_ms
            : context.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0.0
                                                                 : kBenchWarmUpMs;
    if (w.ms_ > 0) {
        auto warm = gpu::WarmUp::create(context);
        if (!warm) return warm.error();
        w.warm_.emplace(std::move(warm.value()));
    }
    return w;
}

Status BenchWarmUp::before_run() {
    return warm_ ? warm_->start(ms_) : Status{};
}

void BenchWarmUp::print() const {
    if (ms_ > 0)
        std::printf(
            "warm-up: %.0f ms of copy kernels submitted before each run, so that it starts "
            "with the GPU's clocks up (host wall times include waiting for them)\n",
            ms_);
    else
        std::printf("warm-up: none\n");
}

double copy_fraction(const gpu::StageReport& s, const gpu::CopyBandwidth& copy) {
    const double bytes = double(s.bytes_read + s.bytes_written);
    return s.ms > 0 && copy.bytes_per_second > 0 ? bytes / (s.ms * 1e-3) / copy.bytes_per_second
                                                 : 0.0;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::vector<gpu::StageReport> median_stages(
    const std::vector<std::vector<gpu::StageReport>>& runs) {
    if (runs.empty()) return {};
    std::vector<gpu::StageReport> out = runs.front();
    for (std::size_t k = 0; k < out.size(); ++k) {
        std::vector<double> ms, dispatches, read, written, passes;
        for (const auto& run : runs) {
            ms.push_back(run[k].ms);
            dispatches.push_back(run[k].dispatches);
            read.push_back(double(run[k].bytes_read));
            written.push_back(double(run[k].bytes_written));
            passes.push_back(run[k].passes);
        }
        out[k].ms = median(ms);
        out[k].dispatches = static_cast<std::uint32_t>(median(dispatches));
        out[k].bytes_read = static_cast<std::uint64_t>(median(read));
        out[k].bytes_written = static_cast<std::uint64_t>(median(written));
        out[k].passes = static_cast<std::uint32_t>(median(passes));
    }
    return out;
}

void print_copy_line(const gpu::CopyBandwidth& copy) {
    std::printf("copy kernel: %.1f MiB in %.3f ms, %.2f GB/s (read + written)\n",
                double(copy.bytes) / (1 << 20), copy.ms, copy.bytes_per_second * 1e-9);
}

void print_stage_rows(const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy,
                      int name_width) {
    std::printf("  %-*s %10s %10s %10s %10s %8s %10s %6s\n", name_width, "stage", "ms",
                "dispatches", "MB read", "MB written", "GB/s", "of copy", "passes");
    for (const gpu::StageReport& s : stages) {
        const double bytes = double(s.bytes_read + s.bytes_written);
        std::printf("  %-*s %10.3f %10u %10.2f %10.2f %8.2f %9.1f%% %6s\n", name_width,
                    s.name.c_str(), s.ms, s.dispatches, double(s.bytes_read) * 1e-6,
                    double(s.bytes_written) * 1e-6, s.ms > 0 ? bytes / (s.ms * 1e-3) * 1e-9 : 0.0,
                    100.0 * copy_fraction(s, copy),
                    s.passes ? std::to_string(s.passes).c_str() : "");
    }
}

void print_device_json(const gpu::DeviceInfo& info) {
    std::printf(
        "{\"device\": \"%s\", \"driver\": \"%s\", \"subgroup_size\": %u, "
        "\"traversal_budget\": %u, \"sort_window\": %u, \"sort_rank\": \"%s\", ",
        json_escape(info.name).c_str(), json_escape(info.driver).c_str(), info.subgroup_size,
        info.traversal_budget, info.sort_window, info.sort_subgroup_rank ? "subgroup" : "shared");
}

void print_stages_json(const std::vector<gpu::StageReport>& stages,
                       const gpu::CopyBandwidth& copy) {
    std::printf(
        "\"copy_bandwidth\": {\"bytes\": %llu, \"ms\": %.6f, \"bytes_per_second\": %.6e}, "
        "\"stages\": [",
        static_cast<unsigned long long>(copy.bytes), copy.ms, copy.bytes_per_second);
    for (std::size_t k = 0; k < stages.size(); ++k) {
        const gpu::StageReport& s = stages[k];
        std::printf(
            "%s{\"name\": \"%s\", \"dispatches\": %u, \"bytes_read\": %llu, "
            "\"bytes_written\": %llu, \"ms\": %.6f, \"bandwidth_fraction\": %.6f",
            k ? ", " : "", s.name.c_str(), s.dispatches,
            static_cast<unsigned long long>(s.bytes_read),
            static_cast<unsigned long long>(s.bytes_written), s.ms, copy_fraction(s, copy));
        if (s.passes > 0 || s.name.find("sort") != std::string::npos)
            std::printf(", \"passes\": %u", s.passes);
        std::printf("}");
    }
    std::printf("]}\n");
}
#endif

// `text` as the inside of a JSON string: quotes, backslashes and control characters escaped.
std::string json_escape(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char code[8];
            std::snprintf(code, sizeof(code), "\\u%04x", static_cast<unsigned>(c));
            out += code;
        } else {
            out += c;
        }
    }
    return out;
}

namespace {

constexpr int kExitUsage = 2;

#ifdef BROADPHASE_HAS_GPU
// The GPU pieces a command needs, created on first use.
struct Gpu {
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::Lbvh> lbvh;
};

Result<Gpu> open_gpu(const Args& args) {
    auto context = open_context(args);
    if (!context) return context.error();
    auto lbvh = gpu::Lbvh::create(*context.value(), gpu::LbvhOptions{args.code});
    if (!lbvh) return lbvh.error();
    return Gpu{std::move(context.value()), std::move(lbvh.value())};
}
#endif

bool is_gpu_method(const std::string& m) {
    return m == "gpu_lbvh";
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
            return Error{ErrorCode::vulkan_error, std::to_string(g->context->validation_errors()) +
                                                      " Vulkan validation errors (printed above)"};
        return pairs;
#else
        (void)args;
        return Error{ErrorCode::unsupported, "this build has no GPU support"};
#endif
    }
    return find_pairs_cpu(method, scene.boxes);
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int fail(const std::string& message, const char* command) {
    if (command == nullptr) {
        std::fprintf(stderr, "broadphase: %s\n", message.c_str());
    } else {
        std::fprintf(stderr, "broadphase %s: %s\n", command, message.c_str());
    }
    return kExitUsage;
}

int run_pairs(const Args& args) {
    if (Status s = check_gpu_options(args, args.method); !s) return fail(s.error());
    if (args.has("against")) return run_pairs_against(args);
    auto scene = load_input_scene(args.scene);
    if (!scene) return fail(scene.error());
    auto pairs = method_pairs(args.method, scene.value(), args);
    if (!pairs) return fail(pairs.error());
    Output out(args);
    out.write(format_pairs(pairs.value()));
    if (Status s = out.finish(); !s) return fail(s.error());
    return 0;
}

int run_validate(const Args& args) {
    const bool demo = !args.has("scene");
    auto scene = load_input_scene(demo ? kDemoScene : args.scene);
    if (!scene) return fail(scene.error());
    const std::size_t n = scene->boxes.size();
    const bool large = n > kBruteForceLimit;
    const std::string reference = args.has("reference") ? args.reference
                                  : large               ? "sweep_and_prune"
                                                        : "brute_force";
    std::vector<std::string> methods = args.has("methods") ? args.methods : method_names();
    // Brute force is O(n^2): above its limit it runs only when --methods or --reference asks.
    const bool skip_brute_force = large && !args.has("methods") && reference != "brute_force";
    if (skip_brute_force) std::erase(methods, "brute_force");
    Output out(args);
    if (demo) out.print("no --scene given: using the default demo scene %s\n", kDemoScene);
    out.print("scene %s: %zu boxes; reference %s\n", scene->name.c_str(), n, reference.c_str());
    if (skip_brute_force)
        out.print(
            "brute_force skipped: %zu boxes, above its limit of %zu (O(n^2)); "
            "--methods brute_force runs it\n",
            n, kBruteForceLimit);

    // On a terminal, standard error shows the method running (which of how many); the line is
    // erased before each result line.
    Progress progress = Progress::on_stderr();
    const std::size_t checks = 1 + static_cast<std::size_t>(std::count_if(
                                       methods.begin(), methods.end(),
                                       [&](const std::string& m) { return m != reference; }));
    std::size_t check = 0;
    auto show = [&](const std::string& method) {
        ++check;
        progress.show("validate %s: [%zu/%zu] %s%s%s", scene->name.c_str(), check, checks,
                      method.c_str(), method == reference ? " (reference)" : "",
                      method == "brute_force" ? ", O(n^2) pair tests" : "");
    };

    show(reference);
    auto start = std::chrono::steady_clock::now();
    auto expected = method_pairs(reference, scene.value(), args);
    progress.clear();
    if (!expected) return fail(expected.error());
    out.print("  %-18s %10zu pairs  %9.3f s  (reference)\n", reference.c_str(), expected->size(),
              seconds_since(start));
    int differences = 0, errors = 0;
    for (const std::string& method : methods) {
        if (method == reference) continue;
        show(method);
        start = std::chrono::steady_clock::now();
        auto got = method_pairs(method, scene.value(), args);
        double t = seconds_since(start);
        progress.clear();
        if (!got) {
            out.print("  %-18s ERROR: %s\n", method.c_str(), got.error().message.c_str());
            ++errors;
            continue;
        }
        bool same = got.value() == expected.value();
        out.print("  %-18s %10zu pairs  %9.3f s  %s\n", method.c_str(), got->size(), t,
                  same ? "agrees" : "DIFFERS");
        if (!same) {
            std::vector<Pair> missing, extra;
            std::set_difference(expected->begin(), expected->end(), got->begin(), got->end(),
                                std::back_inserter(missing));
            std::set_difference(got->begin(), got->end(), expected->begin(), expected->end(),
                                std::back_inserter(extra));
            out.print("    %zu missing, %zu extra", missing.size(), extra.size());
            if (!missing.empty()) out.print("; first missing (%u, %u)", missing[0].i, missing[0].j);
            if (!extra.empty()) out.print("; first extra (%u, %u)", extra[0].i, extra[0].j);
            out.print("\n");
            ++differences;
        }
        if (out.failed()) break;
    }
    if (differences > 0)
        out.print("methods DISAGREE\n");
    else if (errors > 0)
        out.print("%d method%s failed to run (ERROR above); the others agree\n", errors,
                  errors == 1 ? "" : "s");
    else
        out.print("all methods agree\n");
    if (Status s = out.finish(); !s) return fail(s.error());
    return differences > 0 ? kExitDiff : errors > 0 ? kExitUsage : 0;
}

int run_scene(const Args& args) {
    auto scene = load_input_scene(args.scene);
    if (!scene) return fail(scene.error());
    if (args.has("out") && args.out != kStdoutPath) {
        Status s = write_scene_file(args.out, scene->boxes);
        if (!s) return fail(s.error());
        std::fprintf(stderr, "wrote %zu boxes to %s\n", scene->boxes.size(), args.out.c_str());
    } else {
        Output out(args);
        out.write(format_scene_text(scene->boxes));
        if (Status s = out.finish(); !s) return fail(s.error());
    }
    return 0;
}

#ifdef BROADPHASE_HAS_GPU
namespace {

/// devices --kernels: each kernel's first use (gpu::measure_kernel_costs), costliest first, and
/// the sum. A failure ends the process at once: a dispatch that did not finish still runs, and
/// destroying the Context would wait for it.
int print_kernel_costs(const Args& args, gpu::Context& context) {
    if (args.warm) {
        std::printf(
            "kernels: first use with the caches as they are (--warm: warm where an "
            "earlier run filled them)\n");
    } else {
        const bool cache_off = context.pipeline_cache_info().state == gpu::PipelineCacheState::off;
        std::printf(
            "kernels: cold first use (driver shader caches off: "
            "MESA_SHADER_CACHE_DISABLE=true, __GL_SHADER_DISK_CACHE=0; pipeline cache "
            "%s)\n",
            cache_off ? "off" : "on, so not cold");
    }
    std::fflush(stdout);
    auto costs = gpu::measure_kernel_costs(context, args.kernels_filter);
    if (!costs) {
        fail(costs.error(), "devices");
        std::fflush(nullptr);
        std::_Exit(kExitUsage);
    }
    if (costs->empty())
        return fail("no kernel's name contains '" + args.kernels_filter + "' (--kernels-filter)",
                    "devices");
    std::stable_sort(costs->begin(), costs->end(),
                     [](const auto& a, const auto& b) { return a.total_ms() > b.total_ms(); });
    std::printf("  %-28s %12s %12s %12s\n", "kernel", "create ms", "dispatch ms", "total ms");
    double create = 0, dispatch = 0;
    for (const gpu::KernelCost& k : *costs) {
        std::printf("  %-28s %12.2f %12.2f %12.2f\n", k.name.c_str(), k.create_ms, k.dispatch_ms,
                    k.total_ms());
        create += k.create_ms;
        dispatch += k.dispatch_ms;
    }
    const std::string sum =
        "sum (" + std::to_string(costs->size()) + (costs->size() == 1 ? " kernel)" : " kernels)");
    std::printf("  %-28s %12.2f %12.2f %12.2f\n", sum.c_str(), create, dispatch, create + dispatch);
    if (context.validation_errors() > 0)
        return fail(std::to_string(context.validation_errors()) +
                        " Vulkan validation errors (printed above)",
                    "devices");
    return 0;
}

}  // namespace
#endif

int run_devices(const Args& args) {
#ifdef BROADPHASE_HAS_GPU
    if (args.kernels && !args.warm) {
        // Cold figures: no cache of the driver's or the library's may hold a kernel. Read when
        // the instance and device are created, so set before.
        ::setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
        ::setenv("__GL_SHADER_DISK_CACHE", "0", 1);
        ::setenv("BROADPHASE_PIPELINE_CACHE", "off", 1);
    }
    auto g = open_gpu(args);
    if (!g) return fail(g.error());
    const gpu::DeviceInfo& info = g->context->info();
    std::printf(
        "chosen device: %s\n  driver: %s\n  subgroup size: %u\n  maxStorageBufferRange: %llu\n"
        "  maxMemoryAllocationSize: %llu (soft: larger buffers are tried)\n  maxBufferSize: %llu\n"
        "  sort path: %s (onesweep look-back window %u tiles), tiles ranked %s\n"
        "  traversal budget: %u nodes per "
        "invocation per round\n"
        "  tree parts: %u (descriptors a tree's node or wide-node array may be split over)\n",
        info.name.c_str(), info.driver.c_str(), info.subgroup_size,
        static_cast<unsigned long long>(info.max_storage_buffer_range),
        static_cast<unsigned long long>(info.max_memory_allocation_size),
        static_cast<unsigned long long>(info.max_buffer_size), gpu::sort_path_name(info.sort_path),
        info.sort_window, info.sort_subgroup_rank ? "with subgroup ballots" : "in shared memory",
        info.traversal_budget, info.tree_parts);
    if (args.kernels) return print_kernel_costs(args, *g->context);
    return 0;
#else
    (void)args;
    return fail("this build has no GPU support");
#endif
}

}  // namespace broadphase::tool
