// The settings the `broadphase` tool takes from the environment and passes to the library as
// options (the library reads none of them itself): BROADPHASE_SORT_PATH, BROADPHASE_SORT_WINDOW,
// BROADPHASE_SORT_RANK and BROADPHASE_TRAVERSAL_BUDGET, for gpu::Tuning. The GPU tests'
// contexts take them the same way (tests/gpu/gpu_test_env.cpp).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/types.hpp"

namespace broadphase::tool {

/// A count from the environment variable `name`: 0 when unset or empty, else 1 to `most`
/// `unit`; an error naming the variable when it holds anything else.
inline Result<std::uint32_t> count_from_environment(const char* name, std::uint32_t most,
                                                    const char* unit) {
    const char* v = std::getenv(name);
    if (!v || !*v) return 0u;
    const std::string text = v;
    char* end = nullptr;
    errno = 0;
    const unsigned long long count = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0' || text[0] == '-')
        return Error{ErrorCode::invalid_argument,
                     std::string(name) + " is '" + text + "': it must be a number of " + unit};
    if (count < 1 || count > most)
        return Error{ErrorCode::invalid_argument, std::string(name) + " is " + text +
                                                      ": it must be 1 to " + std::to_string(most) +
                                                      " " + unit};
    return static_cast<std::uint32_t>(count);
}

/// The choice the environment variable `name` holds: `first` or `second` by their words,
/// Choice::automatic when it is unset, empty or "automatic"; an error naming the variable for
/// any other word.
template <class Choice>
Result<Choice> choice_from_environment(const char* name, Choice first, const char* first_word,
                                       Choice second, const char* second_word) {
    const char* v = std::getenv(name);
    if (!v || !*v) return Choice::automatic;
    const std::string text = v;
    if (text == first_word) return first;
    if (text == second_word) return second;
    if (text == "automatic") return Choice::automatic;
    return Error{ErrorCode::invalid_argument, std::string(name) + " is '" + text +
                                                  "': it must be " + first_word + ", " +
                                                  second_word + " or automatic"};
}

/// BROADPHASE_SORT_PATH, for gpu::Tuning::sort_path: onesweep, reduce_then_scan, or automatic
/// (the device's rule) when unset, empty or "automatic".
inline Result<gpu::SortPath> sort_path_from_environment() {
    return choice_from_environment("BROADPHASE_SORT_PATH", gpu::SortPath::onesweep, "onesweep",
                                   gpu::SortPath::reduce_then_scan, "reduce_then_scan");
}

/// BROADPHASE_SORT_WINDOW, for gpu::Tuning::sort_window: 0 (kOnesweepWindow) when unset or
/// empty, else 1 to gpu_layout::kOnesweepWindow tiles.
inline Result<std::uint32_t> sort_window_from_environment() {
    return count_from_environment("BROADPHASE_SORT_WINDOW", gpu_layout::kOnesweepWindow, "tiles");
}

/// BROADPHASE_SORT_RANK, for gpu::Tuning::sort_rank: subgroup, shared, or automatic (the
/// device's rule) when unset, empty or "automatic".
inline Result<gpu::SortRank> sort_rank_from_environment() {
    return choice_from_environment("BROADPHASE_SORT_RANK", gpu::SortRank::subgroup, "subgroup",
                                   gpu::SortRank::shared, "shared");
}

/// BROADPHASE_TRAVERSAL_BUDGET, for gpu::Tuning::traversal_budget: 0 (the device's rule) when
/// unset or empty, else 1 to gpu_layout::kTraversalBudget nodes.
inline Result<std::uint32_t> traversal_budget_from_environment() {
    return count_from_environment("BROADPHASE_TRAVERSAL_BUDGET", gpu_layout::kTraversalBudget,
                                  "nodes");
}

/// `choice` from `read` (one of the readers above) when the caller left it open (T{}: automatic,
/// or 0); unchanged, and its variable not read, otherwise.
template <class T>
Status take_if_open(T& choice, Result<T> (*read)()) {
    static_assert(gpu::SortPath{} == gpu::SortPath::automatic &&
                  gpu::SortRank{} == gpu::SortRank::automatic);
    if (choice != T{}) return Status::success();
    auto value = read();
    if (!value) return value.error();
    choice = value.value();
    return Status::success();
}

/// `tuning` with each choice the caller left to the library (automatic, or 0) taken from its
/// environment variable above; the caller's own choices win, and their variables are not read.
/// An error names the first variable that holds no accepted value.
inline Result<gpu::Tuning> tuning_from_environment(gpu::Tuning tuning) {
    Status s = take_if_open(tuning.sort_path, sort_path_from_environment);
    if (s) s = take_if_open(tuning.sort_window, sort_window_from_environment);
    if (s) s = take_if_open(tuning.sort_rank, sort_rank_from_environment);
    if (s) s = take_if_open(tuning.traversal_budget, traversal_budget_from_environment);
    if (!s) return s.error();
    return tuning;
}

}  // namespace broadphase::tool
