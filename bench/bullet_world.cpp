// bullet_world: a btDiscreteDynamicsWorld of N boxes falling onto a ground slab, run for a
// fixed number of steps on each broadphase: Bullet's btDbvtBroadphase and btAxisSweep3
// (bt32BitAxisSweep3 past 16,000 boxes), and broadphase::bullet::Broadphase on CPU methods
// and gpu_lbvh. Every broadphase is wrapped in a forwarding decorator that times its
// setAabb and calculateOverlappingPairs calls (the broadphase's own work in a step; the clock
// reads around each setAabb cost the same for every broadphase). Prints one row per
// broadphase: broadphase ms per step (setAabb + pairs), total step ms, and the pairs at the end.
//
//     bullet_world N [steps] [names]   names: comma-separated, of dbvt, axis_sweep, gpu_lbvh
//                                      and CPU method names (default: a standard list)
#include <btBulletDynamicsCommon.h>

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
        return inner_->createProxy(lo, hi, shape, user, group, mask, dispatcher);
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

private:
    btBroadphaseInterface* inner_;
};

struct Row {
    double set_aabb_ms = 0, pairs_ms = 0, step_ms = 0, first_step_ms = 0;
    int pairs = 0;
    int active = 0;
};

/// N unit boxes in a square grid 1.3 apart, each 1 to 4 above the ground and turned a little,
/// dropped onto a ground slab for `steps` steps of 1/60 s.
Row run(btBroadphaseInterface& broadphase, int n, int steps) {
    Timed timed(&broadphase);
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher(&configuration);
    btSequentialImpulseConstraintSolver solver;
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    const int side = int(std::ceil(std::sqrt(double(n))));
    const float half = 0.65f * float(side) + 2;
    btBoxShape ground_shape(btVector3(half, 1, half));
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    {
        btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, &ground_shape);
        info.m_startWorldTransform.setOrigin(btVector3(0, -1, 0));
        bodies.push_back(std::make_unique<btRigidBody>(info));
    }
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> height(1, 4), angle(-0.5f, 0.5f);
    btVector3 inertia;
    cube.calculateLocalInertia(1, inertia);
    for (int i = 0; i < n; ++i) {
        btRigidBody::btRigidBodyConstructionInfo info(1, nullptr, &cube, inertia);
        info.m_startWorldTransform.setOrigin(
            btVector3(1.3f * float(i % side) - 0.65f * float(side), height(rng),
                      1.3f * float(i / side) - 0.65f * float(side)));
        info.m_startWorldTransform.setRotation(btQuaternion(angle(rng), angle(rng), angle(rng)));
        bodies.push_back(std::make_unique<btRigidBody>(info));
    }
    Row row;
    {
        btDiscreteDynamicsWorld world(&dispatcher, &timed, &solver, &configuration);
        world.setGravity(btVector3(0, -10, 0));
        for (auto& body : bodies) world.addRigidBody(body.get());
        double first = 0;
        const auto start = Clock::now();
        for (int step = 0; step < steps; ++step) {
            const auto step_start = Clock::now();
            world.stepSimulation(1.0f / 60, 0);
            if (step == 0) first = seconds_since(step_start);
        }
        const double total = seconds_since(start);
        row.step_ms = 1e3 * total / steps;
        row.first_step_ms = 1e3 * first;
        row.set_aabb_ms = 1e3 * timed.set_aabb_s / steps;
        row.pairs_ms = 1e3 * timed.pairs_s / steps;
        row.pairs = timed.getOverlappingPairCache()->getNumOverlappingPairs();
        for (auto& body : bodies) row.active += body->isActive() ? 1 : 0;
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

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bullet_world N [steps] [names]\n");
        return 2;
    }
    const int n = std::atoi(argv[1]);
    const int steps = argc > 2 ? std::atoi(argv[2]) : 60;
    if (n < 1 || steps < 1) {
        std::fprintf(stderr, "bullet_world: N and steps must be positive\n");
        return 2;
    }
    std::vector<std::string> names =
        argc > 3 ? split(argv[3])
                 : std::vector<std::string>{"dbvt", "axis_sweep", "dynamic_aabb_tree",
                                            "sweep_and_prune", "gpu_lbvh"};
    std::printf("bullet_world: %d boxes, %d steps of 1/60 s\n", n, steps);
    std::printf("%-22s %12s %12s %12s %12s %12s %9s %8s\n", "broadphase", "bp ms/step",
                "setAabb ms", "pairs ms", "step ms", "1st step ms", "pairs", "active");
#if BROADPHASE_HAS_GPU
    std::unique_ptr<broadphase::gpu::Context> context;
#endif
    for (const std::string& name : names) {
        std::unique_ptr<btBroadphaseInterface> broadphase;
        std::string label = name;
        const float extent = 0.65f * std::ceil(std::sqrt(float(n))) + 10;
        if (name == "dbvt") {
            broadphase = std::make_unique<btDbvtBroadphase>();
            label = "btDbvtBroadphase";
        } else if (name == "axis_sweep") {
            const btVector3 lo(-extent, -5, -extent), hi(extent, 10, extent);
            if (n + 2 < 16384) {
                broadphase = std::make_unique<btAxisSweep3>(lo, hi, 16384);
                label = "btAxisSweep3";
            } else {
                broadphase = std::make_unique<bt32BitAxisSweep3>(lo, hi, unsigned(n + 2));
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
        const Row row = run(*broadphase, n, steps);
        std::printf("%-22s %12.2f %12.2f %12.2f %12.2f %12.1f %9d %8d\n", label.c_str(),
                    row.set_aabb_ms + row.pairs_ms, row.set_aabb_ms, row.pairs_ms, row.step_ms,
                    row.first_step_ms, row.pairs, row.active);
        std::fflush(stdout);
    }
    return 0;
}
