// The settings the `broadphase` tool takes from the environment and passes to the library as
// options (the library reads none of them itself). The GPU tests' contexts take them the same
// way (tests/gpu/gpu_test_env.cpp).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "broadphase/gpu/layout/common.h"
#include "broadphase/types.hpp"

namespace broadphase::tool {

/// BROADPHASE_TRAVERSAL_BUDGET, for gpu::Tuning::traversal_budget: 0 (the device's rule) when
/// unset or empty, else 1 to gpu_layout::kTraversalBudget nodes; an error naming the variable
/// when it holds anything else.
inline Result<std::uint32_t> traversal_budget_from_environment() {
    constexpr const char* kName = "BROADPHASE_TRAVERSAL_BUDGET";
    const char* v = std::getenv(kName);
    if (!v || !*v) return 0u;
    const std::string text = v;
    char* end = nullptr;
    errno = 0;
    const unsigned long long count = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0' || text[0] == '-')
        return Error{ErrorCode::invalid_argument,
                     std::string(kName) + " is '" + text + "': it must be a number of nodes"};
    if (count < 1 || count > gpu_layout::kTraversalBudget)
        return Error{ErrorCode::invalid_argument,
                     std::string(kName) + " is " + text + ": it must be 1 to " +
                         std::to_string(gpu_layout::kTraversalBudget) + " nodes"};
    return static_cast<std::uint32_t>(count);
}

}  // namespace broadphase::tool
