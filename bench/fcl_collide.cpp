// fcl_collide: FCL's self collide on N random boxes (double) on each broadphase manager: FCL's
// DynamicAABBTreeCollisionManager (and its _Array variant), SaPCollisionManager and
// IntervalTreeCollisionManager, and broadphase::fcl::CollisionManager on CPU methods and
// gpu_lbvh. Per manager: setup (registerObjects + setup), the first collide with a counting
// callback (no narrowphase; it includes what a manager leaves to its first query: gpu_lbvh's
// GPU frame), the best of two more ("again": what a manager caches shows here), optionally collide
// with DefaultCollisionFunction (every pair through FCL's narrowphase), and a frame: every object
// moved slightly (setTranslation + computeAABB), update(), collide (the mean of a few frames).
//
//     fcl_collide N [names] [--narrowphase] [--frames F]
//         names: comma-separated, of fcl_dynamic_tree, fcl_dynamic_tree_array, fcl_sap,
//                fcl_interval_tree, and method names of broadphase::fcl (default: a standard
//                list)
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

// Every object a small step (a tenth of the median side at most per axis).
void move_all(Scene& scene, std::mt19937& rng) {
    std::uniform_real_distribution<double> step(-0.1, 0.1);
    for (auto& o : scene.objects) {
        o->setTranslation(o->getTranslation() + ::fcl::Vector3<S>(step(rng), step(rng), step(rng)));
        o->computeAABB();
    }
}

struct Made {
    std::unique_ptr<Manager> manager;
    std::string error;
};

Made make(const std::string& name, broadphase::gpu::Context* context) {
    if (name == "fcl_dynamic_tree")
        return {std::make_unique<::fcl::DynamicAABBTreeCollisionManager<S>>(), {}};
    if (name == "fcl_dynamic_tree_array")
        return {std::make_unique<::fcl::DynamicAABBTreeCollisionManager_Array<S>>(), {}};
    if (name == "fcl_sap") return {std::make_unique<::fcl::SaPCollisionManager<S>>(), {}};
    if (name == "fcl_interval_tree")
        return {std::make_unique<::fcl::IntervalTreeCollisionManager<S>>(), {}};
    broadphase::fcl::Options options;
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
        std::fprintf(stderr, "usage: fcl_collide N [names] [--narrowphase] [--frames F]\n");
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
    for (int a = 2; a < argc; ++a) {
        if (std::strcmp(argv[a], "--narrowphase") == 0) {
            narrowphase = true;
        } else if (std::strcmp(argv[a], "--frames") == 0 && a + 1 < argc) {
            frames = std::max(1, std::atoi(argv[++a]));
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

    std::printf("%zu boxes (double), %d frames; times in ms\n\n", n, frames);
    std::printf("| manager | setup | collide | again | pairs | update + collide |%s\n",
                narrowphase ? " collide + narrowphase | contacts |" : "");
    std::printf("|---|---:|---:|---:|---:|---:|%s\n", narrowphase ? "---:|---:|" : "");
    for (const std::string& name : names) {
        Scene scene = make_scene(n, 1);
        Made made = make(name, context);
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

        std::mt19937 rng(2);
        double frame_ms = 0;
        for (int f = 0; f < frames; ++f) {
            move_all(scene, rng);
            Counter moved;
            start = Clock::now();
            m.update();
            m.collide(&moved, count_pair);
            frame_ms += ms_since(start);
        }
        frame_ms /= frames;

        std::printf("| %s | %.1f | %.1f | %.1f | %llu | %.1f |", name.c_str(), setup_ms, collide_ms,
                    again_ms, static_cast<unsigned long long>(counter.pairs), frame_ms);
        if (narrowphase) std::printf(" %.1f | %zu |", narrow_ms, contacts);
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
