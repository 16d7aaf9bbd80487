// fcl_collide: FCL's self collide on N random boxes (double) on each broadphase manager: FCL's
// DynamicAABBTreeCollisionManager (and its _Array variant), SaPCollisionManager and
// IntervalTreeCollisionManager, and broadphase::fcl::CollisionManager on CPU methods and
// gpu_lbvh. Per manager: setup (registerObjects + setup), the first collide with a counting
// callback (no narrowphase; it includes what a manager leaves to its first query: gpu_lbvh's
// GPU frame), the best of two more ("again": what a manager caches shows here), optionally collide
// with DefaultCollisionFunction (every pair through FCL's narrowphase), and the frames of a
// physics world: objects moved slightly (setTranslation + computeAABB), then update() and the
// self collide, timed apart and together, the mean of F frames, one row per manager:
//
//     | manager | setup | collide | again | pairs | pairs, last frame | frame: update |
//     | frame: collide | frame: update + collide | x fcl_dynamic_tree | requeries / frame |
//     | candidate tests / frame |
//
// `x fcl_dynamic_tree` is the frame's time over FCL's DynamicAABBTreeCollisionManager's in the
// same run (listed first, so that its row comes before the others'); the last two are the pair
// tracker's work per frame (broadphase::fcl::Stats::tracker) on CPU methods: bodies that left
// their fat box and queried the structure, and tight-box tests of candidates.
//
//     fcl_collide N [names] [--narrowphase] [--frames F] [--moving P] [--each]
//         names: comma-separated, of fcl_dynamic_tree, fcl_dynamic_tree_array, fcl_sap,
//                fcl_interval_tree, and method names of broadphase::fcl (default: a standard
//                list)
//         --frames F: frames timed (default 3)
//         --moving P: the percentage of objects moved in each frame, drawn afresh each frame
//                     (default 100: every object)
//         --each: update(obj) for each moved object instead of one update()
//         --margin M, --prediction P, --speed-margin C: broadphase::fcl::Options' pair-tracker
//                     settings (default: PairTracker::Config's)
//
// The scene: N axis-aligned boxes in a cube of side 2 * cbrt(N) (the density stays the same
// at every N), sides drawn from a log-normal distribution (median 1, a few ten times larger),
// as objects of a robot or game scene are: mostly small, some large.
#include <fcl/broadphase/broadphase_SaP.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree_array.h>
#include <fcl/broadphase/broadphase_interval_tree.h>
#include <fcl/broadphase/default_broadphase_callbacks.h>
#include <fcl/geometry/shape/box.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "broadphase/fcl.hpp"

#if BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace {

using S = double;
using Clock = std::chrono::steady_clock;
using Manager = ::fcl::BroadPhaseCollisionManager<S>;
using Object = ::fcl::CollisionObject<S>;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Counter {
    std::uint64_t pairs = 0;
};

bool count_pair(Object*, Object*, void* data) {
    ++static_cast<Counter*>(data)->pairs;
    return false;
}

struct Scene {
    std::vector<std::unique_ptr<Object>> objects;
    std::vector<Object*> pointers;
};

Scene make_scene(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    const double extent = 2.0 * std::cbrt(double(n));
    std::uniform_real_distribution<double> pos(0, extent);
    std::lognormal_distribution<double> side(0.0, 0.6);
    Scene scene;
    for (std::size_t i = 0; i < n; ++i) {
        auto box = std::make_shared<::fcl::Box<S>>(side(rng), side(rng), side(rng));
        auto o = std::make_unique<Object>(box);
        o->setTranslation(::fcl::Vector3<S>(pos(rng), pos(rng), pos(rng)));
        o->computeAABB();
        scene.pointers.push_back(o.get());
        scene.objects.push_back(std::move(o));
    }
    return scene;
}

// `percent` of the objects (every one at 100), each a small step (a tenth of the median side at
// most per axis); the objects moved are appended to `moved`.
void move_some(Scene& scene, double percent, std::mt19937& rng, std::vector<Object*>& moved) {
    std::uniform_real_distribution<double> step(-0.1, 0.1), coin(0, 100);
    for (auto& o : scene.objects) {
        if (percent < 100 && !(coin(rng) < percent)) continue;
        o->setTranslation(o->getTranslation() + ::fcl::Vector3<S>(step(rng), step(rng), step(rng)));
        o->computeAABB();
        moved.push_back(o.get());
    }
}

struct Made {
    std::unique_ptr<Manager> manager;
    std::string error;
};

Made make(const std::string& name, broadphase::gpu::Context* context,
          const broadphase::fcl::Options& tuned) {
    if (name == "fcl_dynamic_tree")
        return {std::make_unique<::fcl::DynamicAABBTreeCollisionManager<S>>(), {}};
    if (name == "fcl_dynamic_tree_array")
        return {std::make_unique<::fcl::DynamicAABBTreeCollisionManager_Array<S>>(), {}};
    if (name == "fcl_sap") return {std::make_unique<::fcl::SaPCollisionManager<S>>(), {}};
    if (name == "fcl_interval_tree")
        return {std::make_unique<::fcl::IntervalTreeCollisionManager<S>>(), {}};
    broadphase::fcl::Options options = tuned;
    options.context = context;
    auto made = broadphase::fcl::CollisionManager<S>::create(name, options);
    if (!made) return {nullptr, made.error().message};
    return {std::move(*made), {}};
}

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) out.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: fcl_collide N [names] [--narrowphase] [--frames F] "
                     "[--moving P] [--each] [--margin M] [--prediction P] "
                     "[--speed-margin C]\n");
        return 2;
    }
    const std::size_t n = std::strtoull(argv[1], nullptr, 10);
    std::vector<std::string> names = {"fcl_dynamic_tree", "fcl_dynamic_tree_array",
                                      "fcl_sap",          "dynamic_aabb_tree",
                                      "sweep_and_prune",  "lbvh",
                                      "kd_tree"};
#if BROADPHASE_HAS_GPU
    names.push_back("gpu_lbvh");
#endif
    bool narrowphase = false;
    int frames = 3;
    double moving = 100;
    bool each = false;
    broadphase::fcl::Options tuned;
    for (int a = 2; a < argc; ++a) {
        if (std::strcmp(argv[a], "--narrowphase") == 0) {
            narrowphase = true;
        } else if (std::strcmp(argv[a], "--frames") == 0 && a + 1 < argc) {
            frames = std::max(1, std::atoi(argv[++a]));
        } else if (std::strcmp(argv[a], "--moving") == 0 && a + 1 < argc) {
            moving = std::clamp(std::atof(argv[++a]), 0.0, 100.0);
        } else if (std::strcmp(argv[a], "--each") == 0) {
            each = true;
        } else if (std::strcmp(argv[a], "--margin") == 0 && a + 1 < argc) {
            tuned.margin = float(std::atof(argv[++a]));
        } else if (std::strcmp(argv[a], "--prediction") == 0 && a + 1 < argc) {
            tuned.prediction = float(std::atof(argv[++a]));
        } else if (std::strcmp(argv[a], "--speed-margin") == 0 && a + 1 < argc) {
            tuned.speed_margin = float(std::atof(argv[++a]));
        } else {
            names = split(argv[a]);
        }
    }

    broadphase::gpu::Context* context = nullptr;
#if BROADPHASE_HAS_GPU
    std::unique_ptr<broadphase::gpu::Context> own_context;
    if (std::find(names.begin(), names.end(), "gpu_lbvh") != names.end()) {
        auto made = broadphase::gpu::Context::create();
        if (!made) {
            std::fprintf(stderr, "gpu_lbvh: %s\n", made.error().message.c_str());
            return 1;
        }
        own_context = std::move(*made);
        context = own_context.get();
        std::printf("gpu_lbvh device: %s (%s)\n", context->info().name.c_str(),
                    context->info().driver.c_str());
    }
#endif

    std::printf(
        "%zu boxes (double), %d frames, %g %% of the objects moved per frame, %s; "
        "pair tracker margin %g, prediction %g, speed margin %g; times in ms\n\n",
        n, frames, moving, each ? "update(obj) for each" : "one update()", double(tuned.margin),
        double(tuned.prediction), double(tuned.speed_margin));
    std::printf(
        "| manager | setup | collide | again | pairs | pairs, last frame | frame: update | "
        "frame: collide | "
        "frame: update + collide | x fcl_dynamic_tree | requeries / frame | "
        "candidate tests / frame |%s\n",
        narrowphase ? " collide + narrowphase | contacts |" : "");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
                narrowphase ? "---:|---:|" : "");
    double reference_ms = 0;  // fcl_dynamic_tree's frame, when it ran before
    for (const std::string& name : names) {
        Scene scene = make_scene(n, 1);
        Made made = make(name, context, tuned);
        if (!made.manager) {
            std::printf("| %s | %s |\n", name.c_str(), made.error.c_str());
            continue;
        }
        Manager& m = *made.manager;

        auto start = Clock::now();
        m.registerObjects(scene.pointers);
        m.setup();
        const double setup_ms = ms_since(start);

        Counter counter;
        start = Clock::now();
        m.collide(&counter, count_pair);
        const double collide_ms = ms_since(start);
        double again_ms = 1e300;
        for (int r = 0; r < 2; ++r) {
            Counter again;
            start = Clock::now();
            m.collide(&again, count_pair);
            again_ms = std::min(again_ms, ms_since(start));
        }

        double narrow_ms = 0;
        std::size_t contacts = 0;
        if (narrowphase) {
            ::fcl::DefaultCollisionData<S> data;
            data.request.num_max_contacts = std::numeric_limits<std::size_t>::max();
            start = Clock::now();
            m.collide(&data, ::fcl::DefaultCollisionFunction<S>);
            narrow_ms = ms_since(start);
            contacts = data.result.numContacts();
        }

        // The frames: objects moved, then the update and the self collide, timed apart and
        // together; the last frame's pairs, to compare across managers.
        auto* ours = dynamic_cast<broadphase::fcl::CollisionManager<S>*>(&m);
        const broadphase::PairTrackerStats before =
            ours ? ours->stats().tracker : broadphase::PairTrackerStats{};
        std::mt19937 rng(2);
        double update_ms = 0, frame_collide_ms = 0;
        std::uint64_t last_pairs = 0;
        std::vector<Object*> moved;
        for (int f = 0; f < frames; ++f) {
            moved.clear();
            move_some(scene, moving, rng, moved);
            Counter pairs;
            start = Clock::now();
            if (each) {
                for (Object* o : moved) m.update(o);
            } else {
                m.update();
            }
            update_ms += ms_since(start);
            start = Clock::now();
            m.collide(&pairs, count_pair);
            frame_collide_ms += ms_since(start);
            last_pairs = pairs.pairs;
        }
        update_ms /= frames;
        frame_collide_ms /= frames;
        const double frame_ms = update_ms + frame_collide_ms;
        if (name == "fcl_dynamic_tree") reference_ms = frame_ms;

        std::printf("| %s | %.1f | %.1f | %.1f | %llu | %llu | %.2f | %.2f | %.2f | ", name.c_str(),
                    setup_ms, collide_ms, again_ms, static_cast<unsigned long long>(counter.pairs),
                    static_cast<unsigned long long>(last_pairs), update_ms, frame_collide_ms,
                    frame_ms);
        if (reference_ms > 0) {
            std::printf("%.2f |", frame_ms / reference_ms);
        } else {
            std::printf(" |");
        }
        if (ours != nullptr && ours->method() != "gpu_lbvh") {
            const broadphase::PairTrackerStats after = ours->stats().tracker;
            std::printf(" %.0f | %.0f |", double(after.requeries - before.requeries) / frames,
                        double(after.candidate_tests - before.candidate_tests) / frames);
        } else {
            std::printf(" | |");
        }
        if (narrowphase) std::printf(" %.1f | %zu |", narrow_ms, contacts);
        std::printf("\n");
        if (ours != nullptr && !ours->status())
            std::printf("%s failed: %s\n", name.c_str(), ours->status().error().message.c_str());
        std::fflush(stdout);
    }
    return 0;
}
