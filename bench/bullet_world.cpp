// bullet_world: a btDiscreteDynamicsWorld run for a fixed number of steps on each broadphase:
// Bullet's btDbvtBroadphase and btAxisSweep3 (bt32BitAxisSweep3 past 16,000 boxes), and
// broadphase::bullet::Broadphase on CPU methods and gpu_lbvh. Every broadphase is wrapped in a
// forwarding decorator that times its setAabb and calculateOverlappingPairs calls (the
// broadphase's own work in a step; the clock reads around each setAabb cost the same for every
// broadphase). Prints one row per broadphase: broadphase ms per step (setAabb + pairs), total
// step ms, the first step's ms, the ms of every createProxy call (the world's addRigidBody
// calls, before the first step: btDbvtBroadphase inserts its leaves there, where ours leaves
// the insertions to the first calculateOverlappingPairs, which the per-step figure counts),
// and the pairs and awake bodies at the end.
//
// Worlds (--world, every one the same for every broadphase, fixed seeds):
// - pile (the default): N unit boxes in a square grid 1.3 apart, 1 to 4 units high and turned
//   a little, falling onto one ground slab.
// - level: a static level of N slabs (mass 0, 2 x 1 x 2 tiles in a square grid, at heights of
//   a rolling terrain) and N/10 unit boxes falling onto it from 2 to 6 units above it.
// - settle: the pile run long enough (600 steps unless given) for its bodies to come to rest
//   and fall asleep (Bullet deactivates a body after 2 s at rest).
// --report-every K adds, after the rows, the broadphase ms per step over every K steps and the
// bodies awake at each interval's end, per broadphase, with the ratio to the first one listed,
// and what the decorator's own clock reads add per timed call (the floor of a step in which
// every setAabb returns at once).
// --active-only sets the world's setForceUpdateAllAabbs(false): setAabb is called for awake
// bodies only (Bullet's default calls it for every body, static and asleep ones too, every step;
// btDbvtBroadphase moves a proxy to its second, fixed tree only after two steps without one).
//
//     bullet_world N [steps] [names] [--world pile|level|settle] [--report-every K]
//                  [--active-only]
//         names: comma-separated, of dbvt, axis_sweep, gpu_lbvh and CPU method names
//         (default: a standard list)
#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "broadphase/bullet.hpp"

#if BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Forwards every call to `inner`, timing setAabb and calculateOverlappingPairs.
class Timed final : public btBroadphaseInterface {
public:
    explicit Timed(btBroadphaseInterface* inner) : inner_(inner) {}

    btBroadphaseProxy* createProxy(const btVector3& lo, const btVector3& hi, int shape, void* user,
                                   int group, int mask, btDispatcher* dispatcher) override {
        const auto start = Clock::now();
        btBroadphaseProxy* proxy =
            inner_->createProxy(lo, hi, shape, user, group, mask, dispatcher);
        create_s += seconds_since(start);
        return proxy;
    }
    void destroyProxy(btBroadphaseProxy* proxy, btDispatcher* dispatcher) override {
        inner_->destroyProxy(proxy, dispatcher);
    }
    void setAabb(btBroadphaseProxy* proxy, const btVector3& lo, const btVector3& hi,
                 btDispatcher* dispatcher) override {
        const auto start = Clock::now();
        inner_->setAabb(proxy, lo, hi, dispatcher);
        set_aabb_s += seconds_since(start);
    }
    void getAabb(btBroadphaseProxy* proxy, btVector3& lo, btVector3& hi) const override {
        inner_->getAabb(proxy, lo, hi);
    }
    void rayTest(const btVector3& from, const btVector3& to, btBroadphaseRayCallback& callback,
                 const btVector3& lo, const btVector3& hi) override {
        inner_->rayTest(from, to, callback, lo, hi);
    }
    void aabbTest(const btVector3& lo, const btVector3& hi,
                  btBroadphaseAabbCallback& callback) override {
        inner_->aabbTest(lo, hi, callback);
    }
    void calculateOverlappingPairs(btDispatcher* dispatcher) override {
        const auto start = Clock::now();
        inner_->calculateOverlappingPairs(dispatcher);
        pairs_s += seconds_since(start);
    }
    btOverlappingPairCache* getOverlappingPairCache() override {
        return inner_->getOverlappingPairCache();
    }
    const btOverlappingPairCache* getOverlappingPairCache() const override {
        return inner_->getOverlappingPairCache();
    }
    void getBroadphaseAabb(btVector3& lo, btVector3& hi) const override {
        inner_->getBroadphaseAabb(lo, hi);
    }
    void resetPool(btDispatcher* dispatcher) override { inner_->resetPool(dispatcher); }
    void printStats() override { inner_->printStats(); }

    double set_aabb_s = 0;
    double pairs_s = 0;
    double create_s = 0;

private:
    btBroadphaseInterface* inner_;
};

enum class WorldKind { pile, level, settle };

/// One rigid body to make: its shape (an index into World::half_extents), mass (0: static) and
/// place.
struct BodySpec {
    int shape = 0;
    float mass = 0;
    btTransform transform;
};

/// A world to run on every broadphase: box shapes, bodies, and bounds for btAxisSweep3.
struct World {
    std::vector<btVector3> half_extents;  // one btBoxShape each
    std::vector<BodySpec> bodies;
    btVector3 lo, hi;
    int statics = 0, dynamics = 0;
};

btTransform placed(const btVector3& origin, const btQuaternion& rotation) {
    btTransform t;
    t.setIdentity();
    t.setOrigin(origin);
    t.setRotation(rotation);
    return t;
}

/// N unit boxes in a square grid 1.3 apart, each 1 to 4 above the ground and turned a little,
/// over one ground slab.
World pile_world(int n) {
    World world;
    const int side = int(std::ceil(std::sqrt(double(n))));
    const float half = 0.65f * float(side) + 2;
    world.half_extents = {btVector3(0.5f, 0.5f, 0.5f), btVector3(half, 1, half)};
    world.bodies.push_back({1, 0, placed(btVector3(0, -1, 0), btQuaternion::getIdentity())});
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> height(1, 4), angle(-0.5f, 0.5f);
    for (int i = 0; i < n; ++i) {
        const btVector3 origin(1.3f * float(i % side) - 0.65f * float(side), height(rng),
                               1.3f * float(i / side) - 0.65f * float(side));
        // (The draws' order is the compiler's, as it always was: the same world as before.)
        const btQuaternion rotation(angle(rng), angle(rng), angle(rng));
        world.bodies.push_back({0, 1, placed(origin, rotation)});
    }
    const float extent = 0.65f * std::ceil(std::sqrt(float(n))) + 10;
    world.lo = btVector3(-extent, -5, -extent);
    world.hi = btVector3(extent, 10, extent);
    world.statics = 1;
    world.dynamics = n;
    return world;
}

/// The level's ground height at (x, z): rolling hills with a little roughness.
float terrain_height(float x, float z, float jitter) {
    return 3.0f * std::sin(0.07f * x) * std::cos(0.05f * z) + jitter;
}

/// N static 2 x 1 x 2 slabs in a square grid 2 apart (neighbours touch), their tops on a
/// rolling terrain, and N/10 unit boxes spread over it, 2 to 6 above it and turned a little.
World level_world(int n) {
    World world;
    const int side = int(std::ceil(std::sqrt(double(n))));
    const float offset = float(side);  // the grid spans [-side, side] on x and z
    world.half_extents = {btVector3(0.5f, 0.5f, 0.5f), btVector3(1, 0.5f, 1)};
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> jitter(0, 0.3f), drop(2, 6), angle(-0.5f, 0.5f);
    for (int i = 0; i < n; ++i) {
        const float x = 2.0f * float(i % side) + 1 - offset;
        const float z = 2.0f * float(i / side) + 1 - offset;
        const float y = terrain_height(x, z, jitter(rng));
        world.bodies.push_back(
            {1, 0, placed(btVector3(x, y - 0.5f, z), btQuaternion::getIdentity())});
    }
    const int m = std::max(1, n / 10);
    const int dside = int(std::ceil(std::sqrt(double(m))));
    const float spacing = 2.0f * float(side) / float(dside);
    for (int i = 0; i < m; ++i) {
        const float x = spacing * (float(i % dside) + 0.5f) - offset;
        const float z = spacing * (float(i / dside) + 0.5f) - offset;
        const float y = terrain_height(x, z, 0.3f) + drop(rng);
        const float yaw = angle(rng), pitch = angle(rng), roll = angle(rng);
        world.bodies.push_back({0, 1, placed(btVector3(x, y, z), btQuaternion(yaw, pitch, roll))});
    }
    world.lo = btVector3(-offset - 10, -10, -offset - 10);
    world.hi = btVector3(offset + 10, 15, offset + 10);
    world.statics = n;
    world.dynamics = m;
    return world;
}

/// The broadphase's work over steps first_step to last_step (1-based), and what the world holds
/// after the last.
struct Interval {
    int first_step = 0, last_step = 0;
    double bp_ms = 0, step_ms = 0;  // per step over the interval
    int active = 0, pairs = 0;
};

struct Row {
    double set_aabb_ms = 0, pairs_ms = 0, step_ms = 0, first_step_ms = 0, create_ms = 0;
    int pairs = 0;
    int active = 0;
    std::vector<Interval> intervals;
};

/// What the decorator counts for a call that does nothing (the clock reads' own latency), in
/// ns: the floor of a step whose every setAabb call returns at once. The least of 20 batches
/// (the others may have been interrupted).
double clock_floor_ns() {
    constexpr int kBatches = 20, kCalls = 10000;
    double best = 1e30;
    for (int batch = 0; batch < kBatches; ++batch) {
        double counted = 0;
        for (int k = 0; k < kCalls; ++k) {
            const auto call = Clock::now();
            counted += seconds_since(call);
        }
        best = std::min(best, counted);
    }
    return 1e9 * best / kCalls;
}

int active_bodies(const std::vector<std::unique_ptr<btRigidBody>>& bodies) {
    int active = 0;
    for (const auto& body : bodies) active += body->isActive() ? 1 : 0;
    return active;
}

/// Runs `spec` for `steps` steps of 1/60 s on `broadphase`; every `report_every` steps (0:
/// never) an Interval. `active_only`: setAabb for awake bodies only.
Row run(btBroadphaseInterface& broadphase, const World& spec, int steps, int report_every,
        bool active_only) {
    Timed timed(&broadphase);
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher(&configuration);
    btSequentialImpulseConstraintSolver solver;
    std::vector<std::unique_ptr<btBoxShape>> shapes;
    for (const btVector3& half : spec.half_extents)
        shapes.push_back(std::make_unique<btBoxShape>(half));
    std::vector<btVector3> inertia(shapes.size());
    for (std::size_t k = 0; k < shapes.size(); ++k) shapes[k]->calculateLocalInertia(1, inertia[k]);
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    bodies.reserve(spec.bodies.size());
    for (const BodySpec& body : spec.bodies) {
        const btVector3 local_inertia =
            body.mass > 0 ? inertia[std::size_t(body.shape)] * body.mass : btVector3(0, 0, 0);
        btRigidBody::btRigidBodyConstructionInfo info(
            body.mass, nullptr, shapes[std::size_t(body.shape)].get(), local_inertia);
        info.m_startWorldTransform = body.transform;
        bodies.push_back(std::make_unique<btRigidBody>(info));
    }
    Row row;
    {
        btDiscreteDynamicsWorld world(&dispatcher, &timed, &solver, &configuration);
        world.setGravity(btVector3(0, -10, 0));
        world.setForceUpdateAllAabbs(!active_only);
        for (auto& body : bodies) world.addRigidBody(body.get());
        double first = 0;
        const auto start = Clock::now();
        auto interval_start = start;
        double interval_bp_s = 0;
        int interval_first = 1;
        for (int step = 0; step < steps; ++step) {
            const auto step_start = Clock::now();
            world.stepSimulation(1.0f / 60, 0);
            if (step == 0) first = seconds_since(step_start);
            const int done = step + 1;
            if (report_every > 0 && (done % report_every == 0 || done == steps)) {
                const double step_s = seconds_since(interval_start);
                const double bp_s = timed.set_aabb_s + timed.pairs_s;
                const int count = done - interval_first + 1;
                Interval interval;
                interval.first_step = interval_first;
                interval.last_step = done;
                interval.bp_ms = 1e3 * (bp_s - interval_bp_s) / count;
                interval.step_ms = 1e3 * step_s / count;
                interval.active = active_bodies(bodies);
                interval.pairs = timed.getOverlappingPairCache()->getNumOverlappingPairs();
                row.intervals.push_back(interval);
                interval_bp_s = bp_s;
                interval_first = done + 1;
                interval_start = Clock::now();  // the counting above is left out
            }
        }
        const double total = seconds_since(start);
        row.step_ms = 1e3 * total / steps;
        row.first_step_ms = 1e3 * first;
        row.set_aabb_ms = 1e3 * timed.set_aabb_s / steps;
        row.pairs_ms = 1e3 * timed.pairs_s / steps;
        row.create_ms = 1e3 * timed.create_s;
        row.pairs = timed.getOverlappingPairCache()->getNumOverlappingPairs();
        row.active = active_bodies(bodies);
        // Every pair out of the cache first (O(1) each), so that the world's teardown, which
        // cleans each proxy's pairs by a scan of the whole cache, costs O(n) and not O(n pairs).
        struct RemoveAll : btOverlapCallback {
            bool processOverlap(btBroadphasePair&) override { return true; }
        } remove_all;
        timed.getOverlappingPairCache()->processAllOverlappingPairs(&remove_all, &dispatcher);
    }
    return row;
}

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::size_t end = comma == std::string::npos ? text.size() : comma;
        if (end > start) out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

int usage() {
    std::fprintf(stderr,
                 "usage: bullet_world N [steps] [names] [--world pile|level|settle] "
                 "[--report-every K] [--active-only]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> positional;
    WorldKind kind = WorldKind::pile;
    int report_every = 0;
    bool active_only = false;
    for (int k = 1; k < argc; ++k) {
        const std::string arg = argv[k];
        if (arg == "--world" && k + 1 < argc) {
            const std::string value = argv[++k];
            if (value == "pile") {
                kind = WorldKind::pile;
            } else if (value == "level") {
                kind = WorldKind::level;
            } else if (value == "settle") {
                kind = WorldKind::settle;
            } else {
                std::fprintf(stderr, "bullet_world: unknown world '%s'\n", value.c_str());
                return usage();
            }
        } else if (arg == "--report-every" && k + 1 < argc) {
            report_every = std::atoi(argv[++k]);
            if (report_every < 1) {
                std::fprintf(stderr, "bullet_world: --report-every must be positive\n");
                return usage();
            }
        } else if (arg == "--active-only") {
            active_only = true;
        } else if (arg.size() > 1 && arg[0] == '-') {
            std::fprintf(stderr, "bullet_world: unknown option '%s'\n", arg.c_str());
            return usage();
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.empty() || positional.size() > 3) return usage();
    const int n = std::atoi(positional[0].c_str());
    const int steps = positional.size() > 1       ? std::atoi(positional[1].c_str())
                      : kind == WorldKind::settle ? 600
                                                  : 60;
    if (n < 1 || steps < 1) {
        std::fprintf(stderr, "bullet_world: N and steps must be positive\n");
        return 2;
    }
    std::vector<std::string> names =
        positional.size() > 2 ? split(positional[2])
                              : std::vector<std::string>{"dbvt", "axis_sweep", "dynamic_aabb_tree",
                                                         "sweep_and_prune", "gpu_lbvh"};
    const World spec = kind == WorldKind::level ? level_world(n) : pile_world(n);
    switch (kind) {
        case WorldKind::pile:
            std::printf("bullet_world: %d boxes, %d steps of 1/60 s\n", n, steps);
            break;
        case WorldKind::level:
            std::printf(
                "bullet_world: level of %d static slabs and %d falling boxes, %d steps of "
                "1/60 s\n",
                spec.statics, spec.dynamics, steps);
            break;
        case WorldKind::settle:
            std::printf("bullet_world: %d boxes settling, %d steps of 1/60 s\n", n, steps);
            break;
    }
    if (active_only)
        std::printf("# setAabb for awake bodies only (setForceUpdateAllAabbs(false))\n");
    std::printf("%-22s %12s %12s %12s %12s %12s %12s %9s %8s\n", "broadphase", "bp ms/step",
                "setAabb ms", "pairs ms", "step ms", "1st step ms", "create ms", "pairs", "active");
#if BROADPHASE_HAS_GPU
    std::unique_ptr<broadphase::gpu::Context> context;
#endif
    const int total_bodies = int(spec.bodies.size());
    std::vector<std::string> labels;
    std::vector<Row> rows;
    for (const std::string& name : names) {
        std::unique_ptr<btBroadphaseInterface> broadphase;
        std::string label = name;
        if (name == "dbvt") {
            broadphase = std::make_unique<btDbvtBroadphase>();
            label = "btDbvtBroadphase";
        } else if (name == "axis_sweep") {
            if (total_bodies + 1 < 16384) {
                broadphase = std::make_unique<btAxisSweep3>(spec.lo, spec.hi, 16384);
                label = "btAxisSweep3";
            } else {
                broadphase = std::make_unique<bt32BitAxisSweep3>(spec.lo, spec.hi,
                                                                 unsigned(total_bodies + 1));
                label = "bt32BitAxisSweep3";
            }
        } else {
            broadphase::bullet::Options options;
#if BROADPHASE_HAS_GPU
            if (name == "gpu_lbvh") {
                if (!context) {
                    auto made = broadphase::gpu::Context::create();
                    if (!made) {
                        std::fprintf(stderr, "bullet_world: %s\n", made.error().message.c_str());
                        continue;
                    }
                    context = std::move(made.value());
                    std::printf("# gpu_lbvh on %s\n", context->info().name.c_str());
                }
                options.context = context.get();
            }
#endif
            auto made = broadphase::bullet::Broadphase::create(name, options);
            if (!made) {
                std::fprintf(stderr, "bullet_world: %s\n", made.error().message.c_str());
                return 1;
            }
            broadphase = std::move(made.value());
            label = "ours " + name;
        }
        const Row row = run(*broadphase, spec, steps, report_every, active_only);
        std::printf("%-22s %12.2f %12.2f %12.2f %12.2f %12.1f %12.1f %9d %8d\n", label.c_str(),
                    row.set_aabb_ms + row.pairs_ms, row.set_aabb_ms, row.pairs_ms, row.step_ms,
                    row.first_step_ms, row.create_ms, row.pairs, row.active);
        std::fflush(stdout);
        labels.push_back(label);
        rows.push_back(row);
    }
    if (report_every > 0 && !rows.empty()) {
        std::printf(
            "\nper interval: bp ms/step and step ms over the interval; active (awake) "
            "bodies and pairs at its end; x first: bp against %s's\n",
            labels[0].c_str());
        const double clock_ns = clock_floor_ns();
        std::printf(
            "# the decorator counts about %.0f ns of clock reads per timed call: %.3f ms per "
            "step when each of the %d bodies gets one setAabb\n",
            clock_ns, clock_ns * total_bodies * 1e-6, total_bodies);
        std::printf("%-11s %-22s %12s %12s %8s %9s %8s\n", "steps", "broadphase", "bp ms/step",
                    "step ms", "active", "pairs", "x first");
        for (std::size_t k = 0; k < rows[0].intervals.size(); ++k) {
            for (std::size_t r = 0; r < rows.size(); ++r) {
                if (k >= rows[r].intervals.size()) continue;
                const Interval& in = rows[r].intervals[k];
                const double base = rows[0].intervals[k].bp_ms;
                const std::string range =
                    std::to_string(in.first_step) + "-" + std::to_string(in.last_step);
                std::printf("%-11s %-22s %12.3f %12.2f %8d %9d %8.2f\n", range.c_str(),
                            labels[r].c_str(), in.bp_ms, in.step_ms, in.active, in.pairs,
                            base > 0 ? in.bp_ms / base : 0.0);
            }
        }
    }
    return 0;
}
