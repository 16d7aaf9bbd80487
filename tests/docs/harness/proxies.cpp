// A page's C++ block as the body of main, linked with the CPU library only (no Vulkan).
// doc-test link: broadphase::cpu
#include <cstdio>
// @top

int main() {
    // @body
    return 0;
}
