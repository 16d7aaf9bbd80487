// Runs of equal first codes in the sorted keys (adaptive codes, lbvh::refine_codes), and the
// centroids their bounds hold, for code_runs.comp, run_bounds.comp and refine_codes.comp; the
// includer declares keys[] (one uint per sorted position) before including it.
#ifndef BROADPHASE_CODE_RUNS_GLSL
#define BROADPHASE_CODE_RUNS_GLSL

// First position in [0, p] whose key equals keys[p]: galloping backwards, then bisecting
// (O(log(p - s)) reads).
uint run_first(uint p) {
    uint key = keys[p];
    uint hi = p;  // keys[hi] == key throughout
    uint step = 1u;
    while (hi > 0u) {
        uint probe = hi > step ? hi - step : 0u;
        if (keys[probe] != key) {
            uint lo = probe;  // keys[lo] != key: the first equal key is in (lo, hi]
            while (hi - lo > 1u) {
                uint mid = lo + (hi - lo) / 2u;
                if (keys[mid] == key)
                    hi = mid;
                else
                    lo = mid;
            }
            return hi;
        }
        hi = probe;
        step *= 2u;
    }
    return 0u;
}

// A box's centroid as order-preserving uints (float_to_ordered): how the runs' centroid bounds
// hold it, so that min and max order it as floats.
uvec3 ordered_centroid(GpuBox b) {
    precise vec3 c = (b.lo.xyz + b.hi.xyz) * 0.5;
    return uvec3(float_to_ordered(c.x), float_to_ordered(c.y), float_to_ordered(c.z));
}

// Whether the run that starts at s holds `length` boxes or more (the keys are sorted, so the
// key length - 1 places on is still equal). The empty slots' run (sorted last) never does.
bool run_holds(uint s, uint n, uint length) {
    uint last = s + length - 1u;
    return last < n && keys[last] == keys[s] && keys[s] != kEmptyCode30;
}
// A run whose centroid bounds run_bounds.comp reduces (kRefineBoundsRun boxes or more).
bool long_run(uint s, uint n) {
    return run_holds(s, n, kRefineBoundsRun);
}

#endif
