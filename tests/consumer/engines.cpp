// The consumer's engine program: the library as the broadphase of a Bullet dynamics world and
// as an FCL collision manager, on dynamic_aabb_tree, sweep_and_prune, kd_tree and gpu_lbvh
// (lavapipe in CI). For each method, a world of falling boxes is stepped until it rests, and
// after every step Bullet's pair cache must hold exactly the overlapping pairs of the proxies'
// boxes (brute force); an FCL manager's self collide must report the pairs
// fcl::NaiveCollisionManager reports. Exits 0 only when every method agrees.
#include <broadphase/bullet.hpp>
#include <broadphase/fcl.hpp>

#include <btBulletDynamicsCommon.h>
#include <fcl/broadphase/broadphase_bruteforce.h>
#include <fcl/geometry/shape/box.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using PairSet = std::set<std::pair<const void*, const void*>>;

std::pair<const void*, const void*> ordered(const void* a, const void* b) {
    return a < b ? std::pair{a, b} : std::pair{b, a};
}

// Bullet: 64 boxes falling onto a static ground, 240 steps of 1/60 s.
bool bullet_world(const char* method) {
    auto broadphase = broadphase::bullet::Broadphase::create(method);
    if (!broadphase) {
        std::fprintf(stderr, "bullet %s: %s\n", method, broadphase.error().message.c_str());
        return false;
    }
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher(&configuration);
    btSequentialImpulseConstraintSolver solver;
    btDiscreteDynamicsWorld world(&dispatcher, broadphase->get(), &solver, &configuration);
    world.setGravity(btVector3(0, -10, 0));

    btBoxShape ground_shape(btVector3(50, 1, 50));
    btBoxShape box_shape(btVector3(0.5f, 0.5f, 0.5f));
    std::vector<std::unique_ptr<btDefaultMotionState>> motions;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    auto add_body = [&](btCollisionShape* shape, float mass, const btVector3& at) {
        btTransform transform;
        transform.setIdentity();
        transform.setOrigin(at);
        btVector3 inertia(0, 0, 0);
        if (mass > 0) shape->calculateLocalInertia(mass, inertia);
        motions.push_back(std::make_unique<btDefaultMotionState>(transform));
        bodies.push_back(std::make_unique<btRigidBody>(
            btRigidBody::btRigidBodyConstructionInfo(mass, motions.back().get(), shape, inertia)));
        world.addRigidBody(bodies.back().get());
    };
    add_body(&ground_shape, 0, btVector3(0, -1, 0));
    for (int i = 0; i < 64; ++i)
        add_body(
            &box_shape, 1,
            btVector3(float(i % 8) * 1.5f - 5, 2.0f + float(i / 8) * 1.2f, float(i % 3) * 0.4f));

    bool same = true;
    for (int step = 0; step < 240 && same; ++step) {
        world.stepSimulation(1.0f / 60, 1, 1.0f / 60);
        PairSet cache;
        btBroadphasePairArray& pairs = world.getPairCache()->getOverlappingPairArray();
        for (int i = 0; i < pairs.size(); ++i)
            cache.insert(ordered(pairs[i].m_pProxy0, pairs[i].m_pProxy1));
        PairSet expected;
        for (std::size_t i = 0; i < bodies.size(); ++i)
            for (std::size_t j = i + 1; j < bodies.size(); ++j) {
                const btBroadphaseProxy* a = bodies[i]->getBroadphaseHandle();
                const btBroadphaseProxy* b = bodies[j]->getBroadphaseHandle();
                const bool overlap =
                    a->m_aabbMin.x() <= b->m_aabbMax.x() && b->m_aabbMin.x() <= a->m_aabbMax.x() &&
                    a->m_aabbMin.y() <= b->m_aabbMax.y() && b->m_aabbMin.y() <= a->m_aabbMax.y() &&
                    a->m_aabbMin.z() <= b->m_aabbMax.z() && b->m_aabbMin.z() <= a->m_aabbMax.z();
                if (overlap && (a->m_collisionFilterGroup & b->m_collisionFilterMask) &&
                    (b->m_collisionFilterGroup & a->m_collisionFilterMask))
                    expected.insert(ordered(a, b));
            }
        same = cache == expected;
        if (!same)
            std::fprintf(stderr, "bullet %s: step %d: %zu pairs in the cache, %zu overlap\n",
                         method, step, cache.size(), expected.size());
    }
    float lowest = 1e9f;
    for (std::size_t i = 1; i < bodies.size(); ++i)
        lowest = std::min(lowest, bodies[i]->getCenterOfMassPosition().y());
    const bool resting = lowest > 0.3f && lowest < 0.7f;  // on the ground, half a box up
    std::printf("bullet %s: %d bodies, pairs %s, lowest box at y = %.3f\n", method,
                world.getNumCollisionObjects(), same ? "exact" : "WRONG", double(lowest));
    for (auto& body : bodies) world.removeRigidBody(body.get());
    return same && resting;
}

// FCL: 300 random boxes, self collide against fcl::NaiveCollisionManager.
bool fcl_manager(const char* method) {
    auto manager = broadphase::fcl::CollisionManager<double>::create(method);
    if (!manager) {
        std::fprintf(stderr, "fcl %s: %s\n", method, manager.error().message.c_str());
        return false;
    }
    std::mt19937 random(7);
    std::uniform_real_distribution<double> at(0, 20), size(0.2, 2);
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> objects;
    for (int i = 0; i < 300; ++i) {
        auto box = std::make_shared<fcl::Boxd>(size(random), size(random), size(random));
        objects.push_back(std::make_unique<fcl::CollisionObjectd>(box));
        objects.back()->setTranslation(fcl::Vector3d(at(random), at(random), at(random)));
        objects.back()->computeAABB();
    }
    fcl::NaiveCollisionManager<double> naive;
    for (auto& object : objects) {
        (*manager)->registerObject(object.get());
        naive.registerObject(object.get());
    }
    (*manager)->setup();
    naive.setup();
    auto record = [](fcl::CollisionObjectd* a, fcl::CollisionObjectd* b, void* data) {
        static_cast<PairSet*>(data)->insert(ordered(a, b));
        return false;
    };
    PairSet ours, theirs;
    (*manager)->collide(&ours, record);
    naive.collide(&theirs, record);
    const bool same = ours == theirs;
    std::printf("fcl %s: %zu objects, %zu pairs (%s)\n", method, (*manager)->size(), ours.size(),
                same ? "same as naive" : "DIFFERENT from naive");
    return same && !ours.empty();
}

}  // namespace

int main() {
    bool ok = true;
    for (const char* method : {"dynamic_aabb_tree", "sweep_and_prune", "kd_tree", "gpu_lbvh"}) {
        ok = bullet_world(method) && ok;
        ok = fcl_manager(method) && ok;
    }
    return ok ? 0 : 1;
}
