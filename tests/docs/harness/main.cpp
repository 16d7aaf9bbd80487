// A page's C++ block as the body of main (tests/docs/doc_blocks.py puts the block's #include
// and `using namespace` lines at // @top and the rest at // @body).
// doc-test link: broadphase::gpu
#include <cstdio>
// @top

int main() {
    // @body
    return 0;
}
