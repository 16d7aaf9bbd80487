// A small Bullet world on broadphase::bullet (docs/bullet.md): the one-line swap of
// btDbvtBroadphase, a pile of boxes falling onto the ground until it rests, a trigger zone (a
// btPairCachingGhostObject) that sees the boxes inside it, and a ray test straight down.
//
//     broadphase_bullet_example [method]      (default: the adapter's default, dynamic_aabb_tree)
//
// It checks what it prints: the boxes come to rest on the ground, the trigger zone's pairs are
// exactly the boxes whose bounds overlap it, and the ray stops on the top of the pile. Exits 0
// when all three hold, 1 when one does not, 2 on a bad method name.
#include <broadphase/bullet.hpp>

#include <BulletCollision/CollisionDispatch/btGhostObject.h>
#include <btBulletDynamicsCommon.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    // The swap. create() returns an error, never throws: check it before using the value.
    // btDbvtBroadphase broadphase;                                  // Bullet's own
    auto made = argc > 1 ? broadphase::bullet::Broadphase::create(argv[1])
                         : broadphase::bullet::Broadphase::create();
    if (!made) {
        std::fprintf(stderr, "broadphase: %s\n", made.error().message.c_str());
        return 2;
    }
    std::unique_ptr<broadphase::bullet::Broadphase> broadphase = std::move(*made);

    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher(&configuration);
    btSequentialImpulseConstraintSolver solver;
    btDiscreteDynamicsWorld world(&dispatcher, broadphase.get(), &solver, &configuration);
    world.setGravity(btVector3(0, -10, 0));
    // Ghost objects keep their own pair lists: Bullet tells them through this callback.
    btGhostPairCallback ghost_callback;
    broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(&ghost_callback);

    // The ground, and a 4 x 6 x 4 block of unit boxes above it.
    btBoxShape ground_shape(btVector3(20, 0.5f, 20));
    btBoxShape box_shape(btVector3(0.5f, 0.5f, 0.5f));
    std::vector<std::unique_ptr<btDefaultMotionState>> motions;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    auto add_body = [&](btCollisionShape* shape, btScalar mass, const btVector3& at) {
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
    add_body(&ground_shape, 0, btVector3(0, -0.5f, 0));
    for (int i = 0; i < 96; ++i)
        add_body(&box_shape, 1,
                 btVector3(btScalar(i % 4) * 1.05f, 2 + btScalar(i / 16) * 1.1f,
                           btScalar(i / 4 % 4) * 1.05f));

    // The trigger zone: a ghost object over the block's lower half, no contact response.
    btBoxShape zone_shape(btVector3(3, 1.5f, 3));
    btPairCachingGhostObject zone;
    btTransform zone_at;
    zone_at.setIdentity();
    zone_at.setOrigin(btVector3(1.5f, 1.5f, 1.5f));
    zone.setWorldTransform(zone_at);
    zone.setCollisionShape(&zone_shape);
    zone.setCollisionFlags(btCollisionObject::CF_NO_CONTACT_RESPONSE);
    world.addCollisionObject(&zone, btBroadphaseProxy::SensorTrigger,
                             btBroadphaseProxy::AllFilter & ~btBroadphaseProxy::SensorTrigger);

    int steps = 0;
    for (; steps < 600; ++steps) {
        world.stepSimulation(btScalar(1) / 60, 1, btScalar(1) / 60);
        bool resting = true;
        for (std::size_t b = 1; b < bodies.size(); ++b)
            resting = resting && bodies[b]->getLinearVelocity().length() < 0.05f;
        if (steps > 30 && resting) break;
    }
    const broadphase::bullet::Stats stats = broadphase->stats();
    std::printf("%s: %zu boxes at rest after %d steps; %llu pairs in the cache\n",
                std::string(broadphase->method()).c_str(), bodies.size() - 1, steps,
                static_cast<unsigned long long>(stats.pairs));
    bool ok = steps < 600;
    for (std::size_t b = 1; b < bodies.size(); ++b)
        ok = ok && bodies[b]->getWorldTransform().getOrigin().y() > 0.4f;  // on the ground

    // The zone's pairs: the boxes whose bounds overlap its bounds (a broadphase test).
    btVector3 zone_min, zone_max;
    zone.getCollisionShape()->getAabb(zone.getWorldTransform(), zone_min, zone_max);
    int expected = 0;
    for (std::size_t b = 1; b < bodies.size(); ++b) {
        btVector3 lo, hi;
        bodies[b]->getAabb(lo, hi);
        expected += TestAabbAgainstAabb2(lo, hi, zone_min, zone_max) ? 1 : 0;
    }
    int inside = 0;  // the boxes among the zone's objects (the ground touches it too)
    for (int k = 0; k < zone.getNumOverlappingObjects(); ++k)
        inside += zone.getOverlappingObject(k) != bodies[0].get() ? 1 : 0;
    std::printf("trigger zone: %d boxes inside (bounds: %d)\n", inside, expected);
    ok = ok && inside == expected && inside > 0;

    // A ray straight down through the block stops on the top box.
    const btVector3 from(1.5f, 30, 1.5f), to(1.5f, -5, 1.5f);
    btCollisionWorld::ClosestRayResultCallback ray(from, to);
    world.rayTest(from, to, ray);
    const bool hit_box =
        ray.hasHit() && ray.m_collisionObject != bodies[0].get() && ray.m_collisionObject != &zone;
    std::printf("ray down: %s at height %.2f\n", hit_box ? "a box" : "no box",
                ray.hasHit() ? double(ray.m_hitPointWorld.y()) : 0.0);
    ok = ok && hit_box;

    world.removeCollisionObject(&zone);
    for (auto& body : bodies) world.removeRigidBody(body.get());
    if (!broadphase->status()) {
        std::fprintf(stderr, "broadphase: %s\n", broadphase->status().error().message.c_str());
        return 1;
    }
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
