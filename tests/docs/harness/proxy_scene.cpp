// docs/proxies.md's GPU block: it goes on from the page's first block, whose filter `player`
// it uses.
// doc-test link: broadphase::gpu
#include <broadphase/gpu.hpp>
#include <broadphase/proxies.hpp>
#include <cstdio>
// @top
using namespace broadphase;

int main() {
    const Filter player{0x2, ~0x2u, 0};  // as the page's first block
    // @body
    return 0;
}
