// FCL on broadphase::fcl (docs/fcl.md): the one-line swap of DynamicAABBTreeCollisionManager,
// a self collide with FCL's narrowphase, a few frames of moving objects (update() after
// setTranslation + computeAABB), a collide of one query object against the manager, and a
// distance query.
//
//     broadphase_fcl_example [method]      (default: the adapter's default, dynamic_aabb_tree)
//
// Each answer is checked against FCL's own DynamicAABBTreeCollisionManager over the same
// objects: the number of colliding pairs, the query's contacts and the smallest distance.
// Exits 0 when they agree, 1 when not, 2 on a bad method name.
#include <broadphase/fcl.hpp>

#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/default_broadphase_callbacks.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/sphere.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using Object = fcl::CollisionObjectd;

struct Counts {
    int pairs = 0;
    double distance = 0;
    int query_contacts = 0;
};

// The same questions to any manager: its self collide, a collide with `query`, and the
// distance from `far` (outside the objects' cube) to the nearest object.
Counts ask(fcl::BroadPhaseCollisionManagerd& manager, Object& query, Object& far) {
    Counts c;
    fcl::DefaultCollisionData<double> collisions;
    collisions.request.num_max_contacts = 100000;
    manager.collide(&collisions, fcl::DefaultCollisionFunction<double>);
    c.pairs = int(collisions.result.numContacts());
    fcl::DefaultCollisionData<double> hits;
    hits.request.num_max_contacts = 100000;
    manager.collide(&query, &hits, fcl::DefaultCollisionFunction<double>);
    c.query_contacts = int(hits.result.numContacts());
    fcl::DefaultDistanceData<double> distance;
    manager.distance(&far, &distance, fcl::DefaultDistanceFunction<double>);
    c.distance = distance.result.min_distance;
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    // The swap. create() returns an error, never throws: check it before using the value.
    // fcl::DynamicAABBTreeCollisionManagerd manager;                         // FCL's own
    auto made = argc > 1 ? broadphase::fcl::CollisionManager<double>::create(argv[1])
                         : broadphase::fcl::CollisionManager<double>::create();
    if (!made) {
        std::fprintf(stderr, "broadphase: %s\n", made.error().message.c_str());
        return 2;
    }
    std::unique_ptr<broadphase::fcl::CollisionManager<double>> manager = std::move(*made);
    fcl::DynamicAABBTreeCollisionManagerd reference;  // FCL's own, to check against

    // 400 boxes and spheres in a 12 m cube.
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> where(0, 12), size(0.3, 1.2);
    std::vector<std::unique_ptr<Object>> objects;
    std::vector<Object*> pointers;
    for (int i = 0; i < 400; ++i) {
        std::shared_ptr<fcl::CollisionGeometryd> shape;
        if (i % 2 == 0) {
            shape = std::make_shared<fcl::Boxd>(size(rng), size(rng), size(rng));
        } else {
            shape = std::make_shared<fcl::Sphered>(size(rng) / 2);
        }
        auto object = std::make_unique<Object>(shape);
        object->setTranslation(fcl::Vector3d(where(rng), where(rng), where(rng)));
        object->computeAABB();
        pointers.push_back(object.get());
        objects.push_back(std::move(object));
    }
    manager->registerObjects(pointers);
    manager->setup();
    reference.registerObjects(pointers);
    reference.setup();

    Object query(std::make_shared<fcl::Sphered>(2.0));
    query.setTranslation(fcl::Vector3d(6, 6, 6));
    query.computeAABB();
    Object far(std::make_shared<fcl::Sphered>(0.5));
    far.setTranslation(fcl::Vector3d(16, 6, 6));
    far.computeAABB();

    bool ok = true;
    std::uniform_real_distribution<double> step(-0.05, 0.05);
    for (int frame = 0; frame < 5; ++frame) {
        const Counts ours = ask(*manager, query, far);
        const Counts theirs = ask(reference, query, far);
        std::printf(
            "frame %d: %d colliding pairs (FCL's tree: %d), the query touches %d (%d), "
            "nearest at %.4f (%.4f)\n",
            frame, ours.pairs, theirs.pairs, ours.query_contacts, theirs.query_contacts,
            ours.distance, theirs.distance);
        ok = ok && ours.pairs == theirs.pairs && ours.query_contacts == theirs.query_contacts &&
             std::abs(ours.distance - theirs.distance) < 1e-9;
        for (auto& object : objects) {  // every object moves a little, then both update
            object->setTranslation(object->getTranslation() +
                                   fcl::Vector3d(step(rng), step(rng), step(rng)));
            object->computeAABB();
        }
        manager->update();
        reference.update();
    }
    if (!manager->status()) {
        std::fprintf(stderr, "broadphase: %s\n", manager->status().error().message.c_str());
        return 1;
    }
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
