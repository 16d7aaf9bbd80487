// README's engine block: Bullet's world parts declared as a Bullet program has them, then the
// block (which also swaps FCL's manager) as the body of main.
// doc-test link: broadphase::bullet broadphase::fcl
#include <btBulletDynamicsCommon.h>
#include <cstdio>
// @top

int main() {
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher(&configuration);
    btSequentialImpulseConstraintSolver solver;
    // @body
    return 0;
}
