// docs/fcl.md's block as the body of main, with FCL and the FCL adapter; `your_objects()` stands
// for the application's own objects: here a row of 1 m boxes, each touching the next.
// doc-test link: broadphase::fcl
#include <fcl/geometry/shape/box.h>
#include <fcl/narrowphase/collision_object.h>
#include <cstdio>
#include <memory>
#include <vector>
// @top

static std::vector<fcl::CollisionObjectd*> your_objects() {
    static std::vector<std::unique_ptr<fcl::CollisionObjectd>> kept;
    auto box = std::make_shared<fcl::Boxd>(1.0, 1.0, 1.0);
    std::vector<fcl::CollisionObjectd*> objects;
    for (int i = 0; i < 10; ++i) {
        fcl::Transform3d placed = fcl::Transform3d::Identity();
        placed.translation() = fcl::Vector3d(0.9 * i, 0, 0);
        kept.push_back(std::make_unique<fcl::CollisionObjectd>(box, placed));
        kept.back()->computeAABB();
        objects.push_back(kept.back().get());
    }
    return objects;
}

int main() {
    // @body
    return 0;
}
