// Per-face shading of the instanced cubes: the face is the unit-cube axis whose coordinate is
// nearest 0 or 1; each face direction has its own brightness, each instance a hashed colour,
// and edges are darkened so that neighbouring boxes stay distinguishable.
#version 450

layout(location = 0) in vec3 local;
layout(location = 1) flat in uint instance;
layout(location = 0) out vec4 color;

// Integer hash (Wellons' lowbias32).
uint hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

void main() {
    vec3 d = min(local, 1.0 - local);
    int axis = (d.x <= d.y && d.x <= d.z) ? 0 : (d.y <= d.z ? 1 : 2);
    int side = local[axis] > 0.5 ? 1 : 0;
    // -x, +x, -y, +y, -z, +z
    const float kShade[6] = float[6](0.55, 0.85, 0.40, 1.00, 0.70, 0.62);
    uint h = hash(instance);
    vec3 base = vec3(0.35) + 0.65 * vec3(h & 255u, (h >> 8) & 255u, (h >> 16) & 255u) / 255.0;
    // Second-nearest face distance small: the fragment lies on an edge of the face.
    float second = (axis == 0) ? min(d.y, d.z) : (axis == 1 ? min(d.x, d.z) : min(d.x, d.y));
    float edge = second < 0.06 ? 0.45 : 1.0;
    color = vec4(base * kShade[axis * 2 + side] * edge, 1.0);
}
