// Shared declarations of the climb kernels (lavapipe_climb.cpp binds them).
// Node numbering (Karras): internal nodes 0 .. n-2 (root 0), leaf i is node n-1+i.
// Each node's value is uvec2(sum of its leaves' values, number of leaves); the host fills
// val[] with 0xffffffff (never written) and flags[] with 0 before each run.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint n;      // leaves
    uint steps;  // runtime trip count (variant f_runtime96)
}
pc;
#ifndef VAL_QUAL
#define VAL_QUAL coherent
#endif
#ifndef FLAG_QUAL
#define FLAG_QUAL coherent
#endif
layout(std430, binding = 0) readonly buffer Parent {
    uint parent[];
};  // 2n-1, root: kNone
layout(std430, binding = 1) readonly buffer Child {
    uvec2 child[];
};  // n-1 (left, right)
layout(std430, binding = 2) FLAG_QUAL buffer Flags {
    uint flags[];
};  // n-1
layout(std430, binding = 3) VAL_QUAL buffer Vals {
    uvec2 val[];
};  // 2n-1
layout(std430, binding = 4) readonly buffer Leaf {
    uint leafval[];
};  // n
const uint kNone = 0xffffffffu;

// The arrival at an internal node: returns 0 for the first arrival, non-zero for the second.
// FLAG_OP 0: atomicAdd (flags end 2), 1: atomicXor (end 0), 2: atomicExchange (end 1).
#ifndef FLAG_OP
#define FLAG_OP 0
#endif
#if FLAG_OP == 1
#define ARRIVE(x) atomicXor(flags[x], 1u)
#elif FLAG_OP == 2
#define ARRIVE(x) atomicExchange(flags[x], 1u)
#else
#define ARRIVE(x) atomicAdd(flags[x], 1u)
#endif

uvec2 merge(uint node) {
    uvec2 c = child[node];
    uvec2 a = val[c.x], b = val[c.y];
    return a + b;
}
