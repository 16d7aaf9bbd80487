// `broadphase bench cpu`: build + self pairs of every CPU structure on the standard scenes
// over a range of sizes (bench_budget.hpp keeps each run within --max-seconds), a markdown table
// and one log-log PNG per scene (plot.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bench_budget.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "io.hpp"
#include "plot.hpp"
#include "progress.hpp"

namespace broadphase::tool {

void add_bench_cpu(CLI::App& c, BenchCpuOptions& o) {
    const std::vector<std::string> generators = strings(generator_names());
    add_list(c, "--scenes", o.scenes,
             "generators, comma-separated (default: all of " + cli::joined(generators) + ")",
             "a,b,...")
        ->check(cli::one_of(generators, "generator"));
    std::vector<std::string> size_text;
    for (std::size_t n : o.sizes) size_text.push_back(std::to_string(n));
    add_list(c, "--sizes", o.sizes, with_default("box counts", cli::joined(size_text, ",")),
             "N,N,...")
        ->transform(cli::integer_in(1, 4294967295));
    const std::vector<std::string> cpu_names = strings(cpu_method_names());
    add_list(c, "--methods", o.methods,
             "CPU methods, comma-separated (default: all of " + cli::joined(cpu_names) + ")",
             "a,b,...")
        ->check(method_check(cpu_names));
    c.add_option("--max-seconds", o.max_seconds,
                 with_default("per-run budget: a method is not started at a size where its "
                              "time, extrapolated from the smaller sizes, exceeds S seconds",
                              "10"))
        ->type_name("S")
        ->check(cli::real_in(0, 1e6));
    c.add_option("--out-dir", o.out_dir, with_default("folder of the PNG plots", o.out_dir))
        ->type_name("DIR");
    c.add_option("--table", o.table,
                 "also write the markdown table to FILE (-: standard output, where it is printed "
                 "anyway)")
        ->type_name("FILE");
    c.final_callback([&o] {
        std::sort(o.sizes.begin(), o.sizes.end());
        o.sizes.erase(std::unique(o.sizes.begin(), o.sizes.end()), o.sizes.end());
    });
}

// `bench cpu`: build + self-pairs time of every CPU structure on the standard scenes over a
// range of N, as a markdown table and one log-log PNG per scene. A method is not started at a
// size where its time, extrapolated from the sizes before (bench_budget.hpp), would exceed
// --max-seconds; standard error says so, and on a terminal it shows the run going on and keeps one
// line per finished run.
int run_bench(const BenchCpuOptions& o) {
    std::vector<std::string> scenes = o.scenes;
    if (scenes.empty())
        for (std::string_view g : generator_names()) scenes.emplace_back(g);
    std::vector<std::string> methods = o.methods;
    if (methods.empty())
        for (std::string_view m : cpu_method_names()) methods.emplace_back(m);
    const std::vector<std::size_t>& sizes = o.sizes;  // ascending, each once (add_bench_cpu)
    const double budget = o.max_seconds;
    Progress progress = Progress::on_stderr();
    // The plots' folder is made first, so that a bad --out-dir fails before the long run.
    {
        std::error_code ec;
        std::filesystem::create_directories(o.out_dir, ec);
        if (ec)
            return fail(
                Error{ErrorCode::io_error, "cannot create '" + o.out_dir + "': " + ec.message()});
    }
    const std::size_t runs = scenes.size() * sizes.size() * methods.size();
    std::size_t run = 0;

    std::size_t differences = 0;
    std::string table = "| scene | N | pairs |";
    for (const std::string& m : methods) table += " " + m + " |";
    table += "\n|---|---|---|";
    for (std::size_t k = 0; k < methods.size(); ++k) table += "---|";
    table += "\n";
    std::printf("%s", table.c_str());
    for (const std::string& scene_name : scenes) {
        std::vector<Series> series(methods.size());
        for (std::size_t k = 0; k < methods.size(); ++k) series[k].name = methods[k];
        // Per method: its last run (n, seconds), the growth measured up to it, and whether it
        // is out of the budget for the larger sizes.
        struct Last {
            double n = 0, seconds = 0, growth = 0;
            bool retired = false;
        };
        std::vector<Last> last(methods.size());
        for (std::size_t n : sizes) {
            auto scene = load_input_scene(scene_name + ":" + std::to_string(n), "--sizes");
            if (!scene) return fail(scene.error());
            std::string row = "| " + scene_name + " | " + std::to_string(n) + " | ";
            std::string cells;
            std::size_t pair_count = 0;
            // Every method's sorted pairs are compared with the first method's that ran at this
            // size (brute force, unless it is retired or not listed): a cell marked "(differs)"
            // is a wrong answer, and the command exits 1.
            std::optional<std::vector<Pair>> reference;
            for (std::size_t k = 0; k < methods.size(); ++k) {
                ++run;
                Last& m = last[k];
                if (!m.retired && m.n > 0) {
                    const double growth = std::max(m.growth, known_growth(methods[k]));
                    const double expected = extrapolate_seconds(m.seconds, m.n, double(n), growth);
                    if (expected > budget) {
                        m.retired = true;
                        std::fprintf(stderr,
                                     "bench: %s %s not started at %zu boxes (nor above): %.3g s "
                                     "expected from %.3g s at %.0f (growth n^%.2f, at least n "
                                     "log n), over --max-seconds %g\n",
                                     scene_name.c_str(), methods[k].c_str(), n, expected, m.seconds,
                                     m.n, growth, budget);
                    }
                }
                if (m.retired) {
                    cells += " — |";
                    continue;
                }
                auto structure = make_structure(methods[k]);
                if (!structure) return fail(structure.error());
                progress.show("[%zu/%zu] %s %zu %s", run, runs, scene_name.c_str(), n,
                              methods[k].c_str());
                auto start = std::chrono::steady_clock::now();
                Status built = build_structure(*structure.value(), scene->boxes);
                if (!built) {
                    progress.clear();
                    return fail(built.error());
                }
                auto pairs = find_sorted_pairs(*structure.value());
                double t = seconds_since(start);
                progress.clear();
                if (!pairs) return fail(pairs.error());
                pair_count = pairs->size();
                const bool same = !reference || *reference == pairs.value();
                if (!reference) reference = std::move(pairs.value());
                if (!same) ++differences;
                char cell[48];
                std::snprintf(cell, sizeof cell, same ? " %.4f |" : " %.4f (differs) |", t);
                cells += cell;
                series[k].x.push_back(double(n));
                series[k].y.push_back(std::max(t, 1e-6));
                if (m.n > 0) m.growth = measured_growth(m.n, m.seconds, double(n), t);
                m.n = double(n);
                m.seconds = t;
                progress.keep("[%zu/%zu] %s %zu %s: %.4f s%s", run, runs, scene_name.c_str(), n,
                              methods[k].c_str(), t, same ? "" : " (differs)");
            }
            row += std::to_string(pair_count) + " |" + cells + "\n";
            std::printf("%s", row.c_str());
            if (Status s = finish_stdout(); !s) return fail(s.error());
            table += row;
        }
        std::string path = o.out_dir + "/bench_cpu_" + scene_name + ".png";
        Status s =
            write_png(path, plot_loglog("build + self pairs, " + scene_name + " scene (one core)",
                                        "boxes (N)", "seconds", series));
        if (!s) return fail(s.error());
        std::fprintf(stderr, "wrote %s\n", path.c_str());
    }
    if (!o.table.empty() && o.table != "-") {  // "-": printed above already
        if (Status s = write_text_file(o.table, table); !s) return fail(s.error());
    }
    if (differences > 0) {
        std::fprintf(stderr, "bench: %zu results differ from the reference method's pairs\n",
                     differences);
        return kExitDiff;
    }
    return 0;
}

}  // namespace broadphase::tool
