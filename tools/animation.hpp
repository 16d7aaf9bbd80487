// Deterministic animation of a generated scene for the frame-by-frame commands (events, bench
// --frames): frame 0 is the scene itself; in frame f >= 1 box k is shifted on each axis a by
//     0.02 * extent_a / cbrt(N) * sum_{g=1..f} u(k, g, a),
// where extent_a is the scene's extent on axis a, N the box count and u(k, g, a) in [-1, 1) is
// splitmix64(k * 0x9e3779b97f4a7c15 + g * 0xbf58476d1ce4e5b9 + a + 1) >> 40, scaled.
#pragma once

#include <cstdint>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::tool {

/// u(k, g, a) of the file comment: a value in [-1, 1) from box k, frame g and axis a.
float frame_jitter(std::uint64_t k, std::uint64_t frame, std::uint64_t axis);

/// Frame `frame` (>= 0) of the deterministic animation of `base` (see the file comment).
std::vector<Box> animated_frame(const std::vector<Box>& base, int frame);

}  // namespace broadphase::tool
