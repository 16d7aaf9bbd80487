// Flat shading of the instanced meshes: the face normal from the screen-space derivatives of
// the world position (the same fragments give the same derivatives, so culled and unculled
// frames stay byte-identical), two-sided diffuse light, each instance a hashed colour blended
// with its mesh's tint.
#version 450

layout(location = 0) in vec3 world;
layout(location = 1) flat in uint instance;
layout(location = 2) flat in vec4 tint;
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
    vec3 n = cross(dFdx(world), dFdy(world));
    float len = length(n);
    const vec3 kLight = normalize(vec3(0.4, 0.8, 0.3));
    float lit = len > 0.0 ? 0.3 + 0.7 * abs(dot(n / len, kLight)) : 0.65;
    uint h = hash(instance);
    vec3 base = vec3(0.35) + 0.65 * vec3(h & 255u, (h >> 8) & 255u, (h >> 16) & 255u) / 255.0;
    color = vec4(mix(base, tint.rgb, tint.w) * lit, 1.0);
}
