// A tree's node arrays, bound whole or split over kTreeParts descriptors (layout/common.h, "Split
// tree bindings"). Every shader that reads or writes a tree's LbvhNode or LbvhWideNode array
// declares it with TREE_ARRAY (no semicolon after it), reads whole elements through NODE / WIDE
// / OTHER_NODE / OTHER_WIDE and reads or writes fields through AT_NODE / AT_WIDE, so that one
// source compiles to both variants:
//   - whole (the default): `name` is a plain runtime array, NODE(i) is nodes[i] and
//     AT_NODE(i, PART_REF(nodes).lo = v) is { uint k_ = i; nodes[k_].lo = v; };
//   - split (compiled with -DTREE_SPLIT as NAME_split; Kernel runs it only when a tree's array
//     is larger than one descriptor may bind): `name` is an array of kTreeParts blocks, element
//     i in block i >> s at i & (2^s - 1). The block is chosen by a switch over constant
//     indices, so no device feature is needed (an index that differs between invocations
//     would need shaderStorageBufferArrayNonUniformIndexing, which lavapipe lacks).
// The arguments are named more than once: they must have no side effects.
#ifndef BROADPHASE_TREE_PARTS_GLSL
#define BROADPHASE_TREE_PARTS_GLSL

#ifdef TREE_SPLIT
// kTreeParts is 4: the four cases below.
#define TREE_ARRAY(qualifiers, binding_, Block, Type, name, s)   \
    layout(std430, binding = binding_) qualifiers buffer Block { \
        Type items[];                                            \
    }                                                            \
    name##_parts[kTreeParts];                                    \
    Type name##_at(uint i) {                                     \
        uint k = i & ((1u << (s)) - 1u);                         \
        switch (i >> (s)) {                                      \
            case 0u:                                             \
                return name##_parts[0].items[k];                 \
            case 1u:                                             \
                return name##_parts[1].items[k];                 \
            case 2u:                                             \
                return name##_parts[2].items[k];                 \
            default:                                             \
                return name##_parts[3].items[k];                 \
        }                                                        \
    }
#define PART_AT(name, i) name##_at(i)
// PART_SWITCH(name, i, s, body): `body` (statements, no top-level commas) with PART_REF(name)
// naming element i, once per part in a switch: what a shader reads or writes of one element
// goes into one body, since llvmpipe compiles each access into a loop over its SIMD lanes, and
// four switches per access made the split build and refit take minutes to compile. (The
// climbs, 96 steps unrolled, now touch no split array but the refit's one link read per step:
// they write arrays bound whole, which lbvh_assemble.comp copies into the split tree.)
#define PART_SWITCH(name, i, s, body)       \
    {                                       \
        uint k_ = (i) & ((1u << (s)) - 1u); \
        switch ((i) >> (s)) {               \
            case 0u: {                      \
                const uint q_ = 0u;         \
                body;                       \
            } break;                        \
            case 1u: {                      \
                const uint q_ = 1u;         \
                body;                       \
            } break;                        \
            case 2u: {                      \
                const uint q_ = 2u;         \
                body;                       \
            } break;                        \
            default: {                      \
                const uint q_ = 3u;         \
                body;                       \
            } break;                        \
        }                                   \
    }
#define PART_REF(name) name##_parts[q_].items[k_]
#else
#define TREE_ARRAY(qualifiers, binding_, Block, Type, name, s)   \
    layout(std430, binding = binding_) qualifiers buffer Block { \
        Type name[];                                             \
    };
#define PART_AT(name, i) name[i]
#define PART_SWITCH(name, i, s, body) \
    {                                 \
        uint k_ = (i);                \
        body;                         \
    }
#define PART_REF(name) name[k_]
#endif

// The names every tree shader uses: `nodes` and `wide` for its tree, `other_nodes` and
// `other_wide` for the second tree of the cross pass (lbvh_pairs.glsl); their part shifts.
#define NODE_SHIFT pc.node_shift
#define WIDE_SHIFT pc.wide_shift
#define NODE(i) PART_AT(nodes, i)
#define WIDE(i) PART_AT(wide, i)
#define OTHER_NODE(i) PART_AT(other_nodes, i)
#define OTHER_WIDE(i) PART_AT(other_wide, i)
// AT_NODE(i, body) / AT_WIDE(i, body): body with PART_REF(nodes) / PART_REF(wide) naming
// element i, e.g. AT_NODE(i, lo = PART_REF(nodes).lo.xyz; hi = PART_REF(nodes).hi.xyz).
#define AT_NODE(i, body) PART_SWITCH(nodes, i, NODE_SHIFT, body)
#define AT_WIDE(i, body) PART_SWITCH(wide, i, WIDE_SHIFT, body)

#endif  // BROADPHASE_TREE_PARTS_GLSL
