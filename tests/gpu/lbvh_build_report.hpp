// The tree build of a plain gpu::Lbvh, summed from its stage report: what the cull's and the
// moving scene's reports are checked against when they build the same tree.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <span>

#include "broadphase/gpu/instruments.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {

/// The build stages (the first four) of the last_report of an Lbvh of the test context after
/// find_pairs(boxes), summed into one StageReport (dispatches, bytes, passes); every build
/// records the refinement's steps (LbvhOptions::refine_on_demand off), as the cull's and the
/// frames' do. Nothing, after a failure, when a step fails or the report does not have the
/// four build stages, all pairs and pair sort.
inline std::optional<gpu::StageReport> lbvh_build_totals(std::span<const Box> boxes) {
    gpu::LbvhOptions recorded;
    recorded.refine_on_demand = false;
    auto lbvh = gpu::Lbvh::create(gpu_context(), recorded);
    EXPECT_TRUE(lbvh) << (lbvh ? "" : lbvh.error().message);
    if (!lbvh) return std::nullopt;
    auto pairs = lbvh.value()->find_pairs(boxes);
    EXPECT_TRUE(pairs) << (pairs ? "" : pairs.error().message);
    if (!pairs) return std::nullopt;
    auto report = last_report(*lbvh.value());
    EXPECT_TRUE(report) << (report ? "" : report.error().message);
    if (!report) return std::nullopt;
    EXPECT_EQ(report->size(), 6u) << "four build stages, all pairs, pair sort";
    if (report->size() != 6) return std::nullopt;
    gpu::StageReport total;
    total.name = "tree build";
    for (std::size_t k = 0; k < 4; ++k) {
        total.dispatches += (*report)[k].dispatches;
        total.bytes_read += (*report)[k].bytes_read;
        total.bytes_written += (*report)[k].bytes_written;
        total.passes += (*report)[k].passes;
    }
    return total;
}

}  // namespace broadphase::testing
