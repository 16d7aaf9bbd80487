// A page's C++ block as the body of main, with Bullet and the Bullet adapter.
// doc-test link: broadphase::bullet
#include <cstdio>
// @top

int main() {
    // @body
    return 0;
}
