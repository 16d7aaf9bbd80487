// Exclusive prefix sum of one uint per invocation across a 256-invocation workgroup
// (Hillis-Steele in shared memory; no subgroup operations, so any subgroup size works).
// All invocations must call it (it contains barriers).
#ifndef BROADPHASE_WORKGROUP_SCAN_GLSL
#define BROADPHASE_WORKGROUP_SCAN_GLSL

shared uint s_scan[2][kWorkgroupSize];

// Returns the exclusive prefix of v; `total` receives the sum over the workgroup.
uint workgroup_exclusive_scan(uint v, out uint total) {
    uint t = gl_LocalInvocationID.x;
    uint src = 0u;
    s_scan[0][t] = v;
    barrier();
    for (uint d = 1u; d < kWorkgroupSize; d <<= 1u) {
        uint x = s_scan[src][t];
        if (t >= d) x += s_scan[src][t - d];
        s_scan[1u - src][t] = x;
        src = 1u - src;
        barrier();
    }
    uint inclusive = s_scan[src][t];
    total = s_scan[src][kWorkgroupSize - 1u];
    barrier();  // s_scan may be reused by the next call
    return inclusive - v;
}

#endif
