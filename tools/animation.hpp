// Deterministic animation of a generated scene for the frame-by-frame commands (events, bench
// --frames): frame 0 is the scene itself; in frame f >= 1 box k is shifted on each axis a by
//     0.025 * m_a * sum_{g=1..f} u(k, g, a),
// where m_a is the median of the boxes' sizes on axis a (the upper median for an even count)
// and u(k, g, a) in [-1, 1) is splitmix64(k * 0x9e3779b97f4a7c15 + g * 0xbf58476d1ce4e5b9 +
// a + 1) >> 40, scaled. Bodies move by a fraction of a typical body's size per frame, as in a
// simulation, whatever the scene's extent: a few outliers or one world-wide slab (the `level`
// scene), or clusters 1e4 apart (`multiscale`), do not make every box jump across the world.
// On `uniform` (cubes of side 0.8 / cbrt(N)) the step is 0.02 / cbrt(N), the same as a step
// of 0.02 * extent / cbrt(N).
#pragma once

#include <cstdint>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::tool {

/// u(k, g, a) of the file comment: a value in [-1, 1) from box k, frame g and axis a. Inline,
/// so that the GPU tests' animations (which do not link this file) draw the same values.
inline float frame_jitter(std::uint64_t k, std::uint64_t frame, std::uint64_t axis) {
    std::uint64_t z = k * 0x9e3779b97f4a7c15ull + frame * 0xbf58476d1ce4e5b9ull + axis + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return float(z >> 40) / float(1ull << 24) * 2.0f - 1.0f;
}

/// The frames of the animation of a scene in order, each in O(N) time and no more memory
/// than three copies of the scene: frame f here is animated_frame(base, f) bit for bit.
class Animation {
public:
    /// At frame 0: boxes() is `base`.
    explicit Animation(std::vector<Box> base);
    /// The boxes of frame frame().
    const std::vector<Box>& boxes() const { return boxes_; }
    int frame() const { return frame_; }
    /// Moves on to the next frame.
    void advance();

    /// The step as a fraction of the median box size (the 0.025 of the file comment).
    static constexpr float kStepOfMedianSize = 0.025f;

private:
    std::vector<Box> base_, boxes_;
    std::vector<Vec3> offset_;  ///< sum over g = 1..frame of the step times u(k, g, a)
    Vec3 step_;
    int frame_ = 0;
};

/// Frame `frame` (>= 0) of the deterministic animation of `base` (see the file comment).
std::vector<Box> animated_frame(const std::vector<Box>& base, int frame);

}  // namespace broadphase::tool
