// `broadphase events`: begin/end overlap events of an animated scene, frame by frame. The GPU
// method runs gpu::MovingScene (per-frame refit or rebuild, GPU sort and diff of the pairs);
// every CPU structure finds each frame's pairs (dynamic ones moving the boxes that changed,
// static ones rebuilt; --rebuild rebuilds every structure) and the events are
// std::set_difference of consecutive sorted pair lists.
//
// Frames come from scene files (--scenes f0 f1 ...: same box count in each) or from a generator
// animated deterministically (--scenes NAME:COUNT[:SEED] --frames F; tools/animation.hpp); or
// from a script of bodies added, removed, moved and refiltered under the script's ids (--script
// FILE; tools/proxy_script.hpp), run on a proxy world (tools/proxy_backend.hpp).
// On a terminal, standard error shows the frames done of the total (tools/progress.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unistd.h>

#include "animation.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "commands.hpp"
#include "io.hpp"
#include "progress.hpp"
#include "proxy_backend.hpp"
#include "proxy_script.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#endif

namespace broadphase::tool {

namespace {

// One frame's lines, written at once (the output is line-buffered: a frame of many events
// costs one write, and the frame shows up as soon as it is found).
void print_frame(Output& out, std::size_t frame, const std::vector<Pair>& began,
                 const std::vector<Pair>& ended) {
    std::string text = "frame " + std::to_string(frame) + "\n";
    for (const auto& [sign, pairs] : {std::pair{'+', &began}, std::pair{'-', &ended}}) {
        for (const Pair& p : *pairs) {
            text += sign;
            text += ' ';
            text += std::to_string(p.i);
            text += ' ';
            text += std::to_string(p.j);
            text += '\n';
        }
    }
    out.write(text);
}

/// The frames of the command: scene files (loaded up front, so that bad input fails before
/// any output) or a generator animated frame by frame (tools/animation.hpp).
class Frames {
public:
    static Result<Frames> load(const Args& args) {
        const std::vector<std::string>& specs = args.scenes;
        Frames frames;
        if (args.has("frames")) {
            if (specs.size() != 1)
                return error("--frames takes exactly one scene (a generator), got " +
                             std::to_string(specs.size()));
            frames.count_ = static_cast<std::size_t>(args.frames);
            auto scene = load_input_scene(specs[0], "--scenes");
            if (!scene) return scene.error();
            frames.animation_.emplace(std::move(scene->boxes));
            return frames;
        }
        for (const std::string& spec : specs) {
            auto scene = load_input_scene(spec, "--scenes");
            if (!scene) return scene.error();
            if (!frames.files_.empty() && scene->boxes.size() != frames.files_[0].size())
                return error(spec + " has " + std::to_string(scene->boxes.size()) +
                             " boxes, the first frame has " +
                             std::to_string(frames.files_[0].size()));
            frames.files_.push_back(std::move(scene->boxes));
        }
        frames.count_ = frames.files_.size();
        return frames;
    }

    std::size_t count() const { return count_; }

    /// The boxes of frame f; frames are asked for in order 0, 1, 2, ...
    const std::vector<Box>& at(std::size_t f) {
        if (!animation_) return files_[f];
        while (static_cast<std::size_t>(animation_->frame()) < f) animation_->advance();
        return animation_->boxes();
    }

private:
    static Error error(std::string message) {
        return Error{ErrorCode::invalid_argument, std::move(message)};
    }
    std::vector<std::vector<Box>> files_;
    std::optional<Animation> animation_;
    std::size_t count_ = 0;
};

#ifdef BROADPHASE_HAS_GPU
/// The backend of --script --method gpu_lbvh: gpu::ProxyScene on a context opened with
/// open_context(args); a step after which the validation layer counted errors fails.
Result<std::unique_ptr<ProxyBackend>> make_gpu_proxy_backend(const Args& args) {
    auto context = open_context(args);
    if (!context) return context.error();
    gpu::ProxySceneOptions options;
    options.frames.code = args.code;
    options.frames.policy = args.policy;
    if (args.has("rebuild-ratio")) options.frames.rebuild_ratio = args.rebuild_ratio;
    if (args.has("rebuild-work-ratio")) options.frames.rebuild_work_ratio = args.rebuild_work_ratio;
    std::shared_ptr<gpu::Context> shared = std::move(context.value());
    auto scene = gpu::ProxyScene::create(*shared, options);
    if (!scene) return scene.error();
    auto check = [ctx = shared.get()]() -> Status {
        if (ctx->validation_errors() == 0) return Status::success();
        return Error{ErrorCode::vulkan_error, std::to_string(ctx->validation_errors()) +
                                                  " Vulkan validation errors (printed above)"};
    };
    return std::unique_ptr<ProxyBackend>(
        new WorldBackend<gpu::ProxyScene>(std::move(scene.value()), shared, check));
}
#endif

/// The backend of --script for `method`.
Result<std::unique_ptr<ProxyBackend>> make_proxy_backend(const Args& args) {
    if (args.method == "gpu_lbvh") {
#ifdef BROADPHASE_HAS_GPU
        return make_gpu_proxy_backend(args);
#else
        return Error{ErrorCode::unsupported, "this build has no GPU support"};
#endif
    }
    return make_cpu_proxy_backend(args.method, args.rebuild);
}

/// What every events loop shares: the output, and the frames-done line on a terminal, erased
/// before an error and before each frame when something else goes to the terminal (the
/// frame's lines when standard output is the terminal too, --verbose's messages).
class EventsRun {
public:
    EventsRun(const Args& args, std::size_t frame_count)
        : out(args),
          progress_(Progress::on_stderr()),
          method_(args.method),
          count_(frame_count),
          erase_each_frame_(args.verbose || ((!args.has("out") || args.out == kStdoutPath) &&
                                             ::isatty(::fileno(stdout)) == 1)) {}

    Output out;

    /// Ends the command with `message` (exit 2).
    int fail(const std::string& message) {
        progress_.clear();
        return tool::fail(message, "events");
    }
    /// Before anything of frame f is written.
    void frame_output() {
        if (erase_each_frame_) progress_.clear();
    }
    /// After frame f.
    void frame_done(std::size_t f) {
        progress_.update("events %s: %zu of %zu frames", method_.c_str(), f + 1, count_);
    }
    /// Closes the output: the exit status.
    int finish() {
        if (Status st = out.finish(); !st) return fail(st.error().message);
        return 0;
    }

private:
    Progress progress_;
    std::string method_;
    std::size_t count_;
    bool erase_each_frame_;
};

/// `events --script FILE`: the script read and checked whole, then run frame by frame on the
/// method's proxy world; the events printed in the script's ids.
int run_events_script(const Args& args) {
    const std::string& method = args.method;
    if (Status st = check_gpu_options(args, method); !st) return fail(st.error().message, "events");
    auto text = read_text_file(args.script);
    if (!text) return fail(text.error().message, "events");
    auto parsed = parse_proxy_script(text.value(), args.script);
    if (!parsed) return fail(parsed.error().message, "events");
    const ProxyScript& script = parsed.value();
    auto made = make_proxy_backend(args);
    if (!made) return fail(made.error().message, "events");
    ProxyBackend& world = *made.value();

    EventsRun run(args, script.frames.size());
    auto failed = [&](const std::string& message) { return run.fail(message); };
    auto failed_at = [&](const ScriptCommand& c, const Error& e) {
        return failed(args.script + ":" + std::to_string(c.line) + ": " + e.message);
    };
    // Script ids to handles and back. A removed body's handle keeps its id until the next
    // step has reported its ended pairs (a released handle is reused only after a step).
    std::unordered_map<std::uint32_t, ProxyHandle> handle_of;
    std::vector<std::uint32_t> id_of;
    std::vector<Pair> began, ended;
    auto to_ids = [&](const std::vector<Pair>& pairs, std::vector<Pair>& ids) {
        ids.clear();
        for (const Pair& p : pairs) {
            const std::uint32_t a = id_of[p.i], b = id_of[p.j];
            ids.push_back(a < b ? Pair{a, b} : Pair{b, a});
        }
        std::sort(ids.begin(), ids.end());
    };
    try {
        for (std::size_t f = 0; f < script.frames.size() && !run.out.failed(); ++f) {
            for (const ScriptCommand& c : script.frames[f]) {
                Status st;
                switch (c.op) {
                    case ScriptCommand::Op::add: {
                        auto h = world.add(c.box, c.filter, c.kind);
                        if (!h) return failed_at(c, h.error());
                        handle_of[c.id] = *h;
                        if (*h >= id_of.size()) id_of.resize(std::size_t{*h} + 1);
                        id_of[*h] = c.id;
                        break;
                    }
                    case ScriptCommand::Op::remove:
                        st = world.remove(handle_of.at(c.id));
                        handle_of.erase(c.id);
                        break;
                    case ScriptCommand::Op::move:
                        st = world.move(handle_of.at(c.id), c.box);
                        break;
                    case ScriptCommand::Op::set_filter:
                        st = world.set_filter(handle_of.at(c.id), c.filter);
                        break;
                }
                if (!st) return failed_at(c, st.error());
            }
            auto frame = world.step();
            if (!frame) return failed("frame " + std::to_string(f) + ": " + frame.error().message);
            run.frame_output();
            if (args.verbose)
                std::fprintf(stderr, "frame %zu: %zu commands, %zu bodies, %zu pairs\n", f,
                             script.frames[f].size(), handle_of.size(), frame->pairs.size());
            if (f > 0) {
                to_ids(frame->began, began);
                to_ids(frame->ended, ended);
                print_frame(run.out, f, began, ended);
            }
            run.frame_done(f);
        }
    } catch (const std::bad_alloc&) {
        return failed("out of memory running " + args.script);
    }
    return run.finish();
}

#ifdef BROADPHASE_HAS_GPU
/// `events --method gpu_lbvh` over frames: gpu::MovingScene reset to the first frame, then
/// stepped frame by frame (refit or rebuild, sort and diff on the GPU).
int run_events_gpu(const Args& args, Frames& frames) {
    EventsRun run(args, frames.count());
    if (args.rebuild)
        return fail("--rebuild is for the CPU methods; gpu_lbvh takes --policy rebuild", "events");
    gpu::MovingSceneOptions options;
    options.code = args.code;
    options.policy = args.policy;
    if (args.has("rebuild-ratio")) options.rebuild_ratio = args.rebuild_ratio;
    if (args.has("rebuild-work-ratio")) options.rebuild_work_ratio = args.rebuild_work_ratio;
    options.return_pairs = false;
    auto context = open_context(args);
    if (!context) return fail(context.error().message, "events");
    auto moving = gpu::MovingScene::create(*context.value(), options);
    if (!moving) return fail(moving.error().message, "events");
    if (Status s = moving.value()->reset(frames.at(0)); !s)
        return fail(s.error().message, "events");
    for (std::size_t f = 1; f < frames.count() && !run.out.failed(); ++f) {
        auto r = moving.value()->step(frames.at(f));
        if (!r) return run.fail(r.error().message);
        run.frame_output();
        print_frame(run.out, f, r->began, r->ended);
        if (args.verbose)
            std::fprintf(stderr, "frame %zu: %s, ratio %.4f, work ratio %.4f, %u pairs\n", f,
                         r->path == gpu::FramePath::rebuild ? "rebuild" : "refit", r->ratio,
                         r->work_ratio, r->pair_count);
        run.frame_done(f);
    }
    if (context.value()->validation_errors() > 0)
        return run.fail(std::to_string(context.value()->validation_errors()) +
                        " Vulkan validation errors (printed above)");
    return run.finish();
}
#endif

/// `events` over frames with a CPU method: the structure is built over the first frame; a
/// dynamic one then moves the boxes that changed each frame (as a simulation would drive it),
/// a static one (or any under --rebuild) is rebuilt. Each frame's sorted pairs are diffed with
/// the previous frame's.
int run_events_cpu(const Args& args, Frames& frames) {
    const std::string& method = args.method;
    for (const char* gpu_only : {"policy", "rebuild-ratio", "rebuild-work-ratio"}) {
        if (args.has(gpu_only))
            return fail(std::string("--") + gpu_only + " is for --method gpu_lbvh only", "events");
    }
    if (Status st = check_gpu_options(args, method); !st) return fail(st.error().message, "events");
    auto structure = make_structure(method);
    if (!structure) return fail(structure.error().message, "events");
    EventsRun run(args, frames.count());
    Structure& s = *structure.value();
    const bool incremental = s.is_dynamic() && !args.rebuild;
    std::vector<Pair> previous, began, ended;
    std::vector<Box> before;  // the previous frame's boxes
    for (std::size_t f = 0; f < frames.count() && !run.out.failed(); ++f) {
        const std::vector<Box>& now = frames.at(f);
        std::size_t moved = 0;
        try {
            if (f == 0 || !incremental) {
                if (Status st = build_structure(s, now); !st) return run.fail(st.error().message);
            } else {
                for (std::size_t id = 0; id < now.size(); ++id) {
                    if (now[id] == before[id]) continue;
                    if (Status st = s.move(static_cast<std::uint32_t>(id), now[id]); !st)
                        return run.fail(st.error().message);
                    ++moved;
                }
            }
            if (incremental) before = now;
        } catch (const std::bad_alloc&) {
            return run.fail("out of memory moving the boxes of frame " + std::to_string(f) +
                            " in " + method + " (" + std::to_string(now.size()) + " boxes)");
        }
        run.frame_output();
        if (args.verbose && f > 0)
            std::fprintf(stderr, "frame %zu: %s, %zu boxes moved\n", f,
                         incremental ? "moved in place" : "rebuilt", moved);
        auto pairs = find_sorted_pairs(s);
        if (!pairs) return run.fail(pairs.error().message);
        if (f > 0) {
            diff_sorted_pairs(previous, pairs.value(), began, ended);
            print_frame(run.out, f, began, ended);
        }
        previous = std::move(pairs.value());
        run.frame_done(f);
    }
    return run.finish();
}

}  // namespace

int run_events(const Args& args) {
    if (args.has("script")) return run_events_script(args);
    auto loaded = Frames::load(args);
    if (!loaded) return fail(loaded.error().message, "events");
    if (args.method != "gpu_lbvh") return run_events_cpu(args, loaded.value());
#ifdef BROADPHASE_HAS_GPU
    return run_events_gpu(args, loaded.value());
#else
    return fail("this build has no GPU support", "events");
#endif
}

}  // namespace broadphase::tool
