// `broadphase events`: begin/end overlap events of an animated scene, frame by frame. The GPU
// method runs gpu::MovingScene (per-frame refit or rebuild, GPU sort and diff of the pairs);
// every CPU structure finds each frame's pairs (dynamic ones moving the boxes that changed,
// static ones rebuilt; --rebuild rebuilds every structure) and the events are
// std::set_difference of consecutive sorted pair lists.
//
// Frames come from scene files (--scenes f0 f1 ...: same box count in each) or from a generator
// animated deterministically (--scenes NAME:COUNT[:SEED] --frames F; tools/animation.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "animation.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "commands.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu_frames.hpp"
#endif

namespace broadphase::tool {

namespace {

int events_fail(const std::string& message) {
    std::fprintf(stderr, "broadphase events: %s\n", message.c_str());
    return 2;
}

void print_frame(int frame, const std::vector<Pair>& began, const std::vector<Pair>& ended) {
    std::printf("frame %d\n", frame);
    for (const Pair& p : began) std::printf("+ %u %u\n", p.i, p.j);
    for (const Pair& p : ended) std::printf("- %u %u\n", p.i, p.j);
}

}  // namespace

int run_events(const Args& args) {
    // --scenes A B C: the parser keeps A as the option's value and B, C as positionals.
    std::vector<std::string> specs;
    if (!args.get("scenes").empty()) specs.push_back(args.get("scenes"));
    for (const std::string& p : args.positional) specs.push_back(p);
    if (specs.empty()) return events_fail("--scenes FILE... (or a generator with --frames F)");
    std::string method = args.get("method", "gpu_lbvh");

    // Load every frame first, so that bad input fails before any output.
    std::vector<std::vector<Box>> frames;
    if (args.has("frames")) {
        if (specs.size() != 1) return events_fail("--frames takes exactly one scene");
        int count = std::atoi(args.get("frames").c_str());
        if (count < 1) return events_fail("--frames must be a positive frame count");
        auto scene = load_scene(specs[0]);
        if (!scene) return events_fail(scene.error().message);
        for (int f = 0; f < count; ++f) frames.push_back(animated_frame(scene->boxes, f));
    } else {
        for (const std::string& spec : specs) {
            auto scene = load_scene(spec);
            if (!scene) return events_fail(scene.error().message);
            if (!frames.empty() && scene->boxes.size() != frames[0].size())
                return events_fail(spec + " has " + std::to_string(scene->boxes.size()) +
                                   " boxes, the first frame has " +
                                   std::to_string(frames[0].size()));
            frames.push_back(std::move(scene->boxes));
        }
    }

    if (method == "gpu_lbvh") {
#ifdef BROADPHASE_HAS_GPU
        gpu::ContextOptions context_options;
        context_options.device = args.get("device");
        context_options.validation = args.has("validation");
        auto context = gpu::Context::create(context_options);
        if (!context) return events_fail(context.error().message);
        gpu::MovingSceneOptions options;
        std::string code = args.get("code", "morton30");
        if (code == "morton63") {
            options.code = gpu::CodeKind::morton63;
        } else if (code == "hilbert30") {
            options.code = gpu::CodeKind::hilbert30;
        } else if (code != "morton30") {
            return events_fail("unknown --code '" + code + "' (morton30, morton63, hilbert30)");
        }
        std::string policy = args.get("policy", "ratio");
        if (policy == "refit") {
            options.policy = gpu::RefitPolicy::always_refit;
        } else if (policy == "rebuild") {
            options.policy = gpu::RefitPolicy::always_rebuild;
        } else if (policy != "ratio") {
            return events_fail("unknown --policy '" + policy + "' (ratio, refit, rebuild)");
        }
        if (args.has("rebuild-ratio"))
            options.rebuild_ratio = std::atof(args.get("rebuild-ratio").c_str());
        options.return_pairs = false;
        auto moving = gpu::MovingScene::create(*context.value(), options);
        if (!moving) return events_fail(moving.error().message);
        if (Status s = moving.value()->reset(frames[0]); !s) return events_fail(s.error().message);
        for (std::size_t f = 1; f < frames.size(); ++f) {
            auto r = moving.value()->step(frames[f]);
            if (!r) return events_fail(r.error().message);
            print_frame(int(f), r->began, r->ended);
            if (args.has("verbose"))
                std::fprintf(stderr, "frame %zu: %s, ratio %.4f, %u pairs\n", f,
                             r->path == gpu::FramePath::rebuild ? "rebuild" : "refit", r->ratio,
                             r->pair_count);
        }
        if (context.value()->validation_errors() > 0)
            return events_fail(std::to_string(context.value()->validation_errors()) +
                               " Vulkan validation errors (printed above)");
        return 0;
#else
        return events_fail("this build has no GPU support");
#endif
    }
    // CPU: the structure is built over the first frame; a dynamic one then moves the boxes
    // that changed each frame (insert/remove/move, as a simulation would drive it), a static
    // one is rebuilt. Each frame's sorted pairs are diffed with the previous frame's.
    auto structure = make_structure(method);
    if (!structure) return events_fail(structure.error().message);
    Structure& s = *structure.value();
    const bool incremental = s.is_dynamic() && !args.has("rebuild");
    std::vector<Pair> previous;
    for (std::size_t f = 0; f < frames.size(); ++f) {
        std::size_t moved = 0;
        if (f == 0 || !incremental) {
            if (Status st = s.build(frames[f]); !st) return events_fail(st.error().message);
        } else {
            for (std::size_t id = 0; id < frames[f].size(); ++id) {
                const Box& now = frames[f][id];
                const Box& before = frames[f - 1][id];
                if (now == before) continue;
                if (Status st = s.move(static_cast<std::uint32_t>(id), now); !st)
                    return events_fail(st.error().message);
                ++moved;
            }
        }
        if (args.has("verbose") && f > 0)
            std::fprintf(stderr, "frame %zu: %s, %zu boxes moved\n", f,
                         incremental ? "moved in place" : "rebuilt", moved);
        std::vector<Pair> pairs = sorted_pairs(s);
        if (f > 0) {
            std::vector<Pair> began, ended;
            std::set_difference(pairs.begin(), pairs.end(), previous.begin(), previous.end(),
                                std::back_inserter(began));
            std::set_difference(previous.begin(), previous.end(), pairs.begin(), pairs.end(),
                                std::back_inserter(ended));
            print_frame(int(f), began, ended);
        }
        previous = std::move(pairs);
    }
    return 0;
}

}  // namespace broadphase::tool
