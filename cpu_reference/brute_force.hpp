// Brute force: every box against every other, O(n^2) pairs and linear queries. The oracle
// that every other structure is compared with (kept "as a reference", as in Jolt's broad phase).
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `brute_force` Structure: no acceleration at all, obviously correct. Dynamic too, so
/// that it is the oracle of the dynamic structures' insert/remove/move sequences.
class BruteForce final : public Structure {
public:
    std::string_view name() const override { return "brute_force"; }
    // Every query tests every box.
    BROADPHASE_STRUCTURE_OVERRIDES;
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override;
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;
    BROADPHASE_DYNAMIC_OVERRIDES;

private:
    // Slot s holds box boxes_[s] with id ids_[s]; after build, ids_[s] == s.
    std::vector<Box> boxes_;
    std::vector<std::uint32_t> ids_;
    std::unordered_map<std::uint32_t, std::uint32_t> slot_of_;  // filled on first mutation
    bool identity_ = true;                                      // ids_[s] == s for all s

    void make_slot_map();
};

}  // namespace broadphase
