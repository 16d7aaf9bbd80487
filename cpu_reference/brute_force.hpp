// Brute force: every box against every other, O(n^2) pairs and linear queries. The oracle
// that every other structure is compared with (kept "as a reference", as in Jolt's broad phase).
#pragma once

#include <span>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `brute_force` Structure: no acceleration at all, obviously correct.
class BruteForce final : public Structure {
public:
    std::string_view name() const override { return "brute_force"; }
    Status build(std::span<const Box> boxes) override;
    void self_pairs(std::vector<Pair>& out) const override;
    void query_box(const Box& region, std::vector<std::uint32_t>& out) const override;
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override;
    std::optional<RayHit> ray_cast(const Ray& ray) const override;
    Status validate() const override;
    std::size_t size() const override { return boxes_.size(); }

private:
    std::vector<Box> boxes_;
};

}  // namespace broadphase
