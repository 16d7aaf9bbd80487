// The tuning the `broadphase` tool and the GPU tests' contexts take from the environment
// (tools/environment.hpp) and pass to the library as gpu::Tuning: each variable's accepted
// values, its errors (naming it), and the caller's own choices winning. No device is needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "environment.hpp"

namespace broadphase::tool {
namespace {

constexpr const char* kVariables[] = {"BROADPHASE_SORT_PATH", "BROADPHASE_SORT_WINDOW",
                                      "BROADPHASE_SORT_RANK", "BROADPHASE_TRAVERSAL_BUDGET"};

// Each case starts with none of the variables set (this process is the test's own).
class EnvironmentTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* name : kVariables) ::unsetenv(name);
    }
    void TearDown() override { SetUp(); }
};

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The error `read` returns while `name` holds `value`: invalid_argument, naming the variable.
template <class Read>
std::string refusal(const char* name, const char* value, Read read) {
    ::setenv(name, value, 1);
    auto result = read();
    EXPECT_FALSE(result) << name << "=" << value;
    if (result) return "";
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(has(result.error().message, name)) << result.error().message;
    return result.error().message;
}

// Test 1: with no variable set (or set empty), every choice is left to the library: the
// Tuning comes back as given.
TEST_F(EnvironmentTest, UnsetOrEmptyLeavesTheLibrarysRule) {
    for (bool empty : {false, true}) {
        SCOPED_TRACE(empty ? "empty" : "unset");
        if (empty)
            for (const char* name : kVariables) ::setenv(name, "", 1);
        auto tuning = tuning_from_environment({});
        ASSERT_TRUE(tuning) << tuning.error().message;
        EXPECT_EQ(tuning->sort_path, gpu::SortPath::automatic);
        EXPECT_EQ(tuning->sort_window, 0u);
        EXPECT_EQ(tuning->sort_rank, gpu::SortRank::automatic);
        EXPECT_EQ(tuning->traversal_budget, 0u);
        EXPECT_TRUE(tuning->split_tree_bindings);
    }
}

// A choice variable: `name` holding `first_word` or `second_word` reads (by `read`) as `first`
// or `second`, "automatic" as automatic; another word is refused, naming the variable, and so
// is the whole Tuning.
template <class Choice>
void expect_choice_variable(const char* name, Result<Choice> (*read)(), Choice first,
                            const char* first_word, Choice second, const char* second_word) {
    ::setenv(name, first_word, 1);
    EXPECT_EQ(read().value(), first);
    ::setenv(name, second_word, 1);
    EXPECT_EQ(read().value(), second);
    ::setenv(name, "automatic", 1);
    EXPECT_EQ(read().value(), Choice::automatic);
    refusal(name, "fastest", read);
    EXPECT_FALSE(tuning_from_environment({}));
}

// A count variable: `name` holding 1 to `most` reads (by `read`) as that count; a word, 0, a
// number with a word after it, a negative number and most + 1 are refused, naming the variable,
// and so is the whole Tuning.
void expect_count_variable(const char* name, Result<std::uint32_t> (*read)(), std::uint32_t most) {
    for (std::uint32_t count : {1u, most / 2 + 1, most}) {
        ::setenv(name, std::to_string(count).c_str(), 1);
        EXPECT_EQ(read().value(), count);
    }
    const std::string too_many = std::to_string(most + 1);
    for (const char* bad : {"many", "0", "3x", "-2", too_many.c_str()}) {
        SCOPED_TRACE(bad);
        refusal(name, bad, read);
        EXPECT_FALSE(tuning_from_environment({}));
    }
}

// Test 2: BROADPHASE_SORT_PATH takes onesweep, reduce_then_scan or automatic; any other word is
// refused, naming the variable and the words it takes.
TEST_F(EnvironmentTest, SortPath) {
    expect_choice_variable("BROADPHASE_SORT_PATH", sort_path_from_environment,
                           gpu::SortPath::onesweep, "onesweep", gpu::SortPath::reduce_then_scan,
                           "reduce_then_scan");
    ::setenv("BROADPHASE_SORT_PATH", "onesweep", 1);
    EXPECT_EQ(tuning_from_environment({})->sort_path, gpu::SortPath::onesweep);
    EXPECT_EQ(refusal("BROADPHASE_SORT_PATH", "fastest", sort_path_from_environment),
              "BROADPHASE_SORT_PATH is 'fastest': it must be onesweep, reduce_then_scan or "
              "automatic");
}

// Test 3: BROADPHASE_SORT_WINDOW takes 1 to kOnesweepWindow tiles; anything else is refused,
// naming the variable.
TEST_F(EnvironmentTest, SortWindow) {
    expect_count_variable("BROADPHASE_SORT_WINDOW", sort_window_from_environment,
                          gpu_layout::kOnesweepWindow);
    ::setenv("BROADPHASE_SORT_WINDOW", "5", 1);
    EXPECT_EQ(tuning_from_environment({})->sort_window, 5u);
    EXPECT_EQ(refusal("BROADPHASE_SORT_WINDOW", "wide", sort_window_from_environment),
              "BROADPHASE_SORT_WINDOW is 'wide': it must be a number of tiles");
    EXPECT_EQ(refusal("BROADPHASE_SORT_WINDOW", "9", sort_window_from_environment),
              "BROADPHASE_SORT_WINDOW is 9: it must be 1 to 8 tiles");
}

// Test 4: BROADPHASE_SORT_RANK takes subgroup, shared or automatic; any other word is refused,
// naming the variable. (Whether the device has subgroup ballots is the library's to check.)
TEST_F(EnvironmentTest, SortRank) {
    expect_choice_variable("BROADPHASE_SORT_RANK", sort_rank_from_environment,
                           gpu::SortRank::subgroup, "subgroup", gpu::SortRank::shared, "shared");
    ::setenv("BROADPHASE_SORT_RANK", "subgroup", 1);
    EXPECT_EQ(tuning_from_environment({})->sort_rank, gpu::SortRank::subgroup);
    EXPECT_EQ(refusal("BROADPHASE_SORT_RANK", "ballots", sort_rank_from_environment),
              "BROADPHASE_SORT_RANK is 'ballots': it must be subgroup, shared or automatic");
}

// Test 5: BROADPHASE_TRAVERSAL_BUDGET takes 1 to kTraversalBudget nodes; anything else is
// refused, naming the variable.
TEST_F(EnvironmentTest, TraversalBudget) {
    EXPECT_EQ(traversal_budget_from_environment().value(), 0u);
    expect_count_variable("BROADPHASE_TRAVERSAL_BUDGET", traversal_budget_from_environment,
                          gpu_layout::kTraversalBudget);
    ::setenv("BROADPHASE_TRAVERSAL_BUDGET", "64", 1);
    EXPECT_EQ(tuning_from_environment({})->traversal_budget, 64u);
    EXPECT_EQ(refusal("BROADPHASE_TRAVERSAL_BUDGET", "12x", traversal_budget_from_environment),
              "BROADPHASE_TRAVERSAL_BUDGET is '12x': it must be a number of nodes");
    EXPECT_EQ(refusal("BROADPHASE_TRAVERSAL_BUDGET", "5000", traversal_budget_from_environment),
              "BROADPHASE_TRAVERSAL_BUDGET is 5000: it must be 1 to 4096 nodes");
}

// Test 6: the caller's own choices (a --sort-path, a --traversal-budget, a test's options) win:
// their variables are not read, so not even a bad value there is an error; the choices left
// open still take theirs.
TEST_F(EnvironmentTest, CallersChoicesWin) {
    gpu::Tuning mine;
    mine.sort_path = gpu::SortPath::reduce_then_scan;
    mine.sort_window = 2;
    mine.sort_rank = gpu::SortRank::shared;
    mine.traversal_budget = 7;
    mine.split_tree_bindings = false;
    ::setenv("BROADPHASE_SORT_PATH", "onesweep", 1);
    ::setenv("BROADPHASE_SORT_WINDOW", "5", 1);
    ::setenv("BROADPHASE_SORT_RANK", "subgroup", 1);
    ::setenv("BROADPHASE_TRAVERSAL_BUDGET", "64", 1);
    auto tuning = tuning_from_environment(mine);
    ASSERT_TRUE(tuning) << tuning.error().message;
    EXPECT_EQ(tuning->sort_path, gpu::SortPath::reduce_then_scan);
    EXPECT_EQ(tuning->sort_window, 2u);
    EXPECT_EQ(tuning->sort_rank, gpu::SortRank::shared);
    EXPECT_EQ(tuning->traversal_budget, 7u);
    EXPECT_FALSE(tuning->split_tree_bindings);
    for (const char* name : kVariables) ::setenv(name, "bad", 1);
    EXPECT_TRUE(tuning_from_environment(mine));
    gpu::Tuning open_window = mine;
    open_window.sort_window = 0;
    ::setenv("BROADPHASE_SORT_WINDOW", "3", 1);
    auto partly = tuning_from_environment(open_window);
    ASSERT_TRUE(partly) << partly.error().message;
    EXPECT_EQ(partly->sort_window, 3u);
    EXPECT_EQ(partly->sort_path, gpu::SortPath::reduce_then_scan);
}

}  // namespace
}  // namespace broadphase::tool
