// The bounded traversals' first-round rule (layout/common.h, "Bounded traversal"): a pass whose
// first round does more per invocation than its later ones (the all-pairs pass, region queries,
// ray casts) takes `scale` times the later rounds' budget in round 0, at most kTraversalBudget.
// TraversalRounds::with_first_round applies it to a pass; the Context reports the device's
// (DeviceInfo::pair_first_round, query_first_round).
#pragma once

#include <algorithm>
#include <cstdint>

#include "broadphase/gpu/layout/common.h"

namespace broadphase::gpu {

/// Round 0's budget of a pass whose later rounds take `budget` steps.
inline std::uint32_t first_round_budget(std::uint32_t budget, std::uint32_t scale) {
    return std::min(budget * scale, gpu_layout::kTraversalBudget);
}

}  // namespace broadphase::gpu
