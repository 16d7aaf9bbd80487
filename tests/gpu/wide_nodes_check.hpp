// The check every tree test runs on the LbvhWideNode records beside a GPU tree: they equal,
// bit for bit, lbvh::wide_nodes of the tree's own nodes (what lbvh_build.comp and
// lbvh_refit.comp must write whenever they write a node's bounds).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <vector>

#include "broadphase/gpu.hpp"
#include "lbvh.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"

namespace broadphase::testing {

/// The wide records of the tree held from offset 0 in `tree_buffer` (n boxes) equal
/// lbvh::wide_nodes(nodes), `nodes` being the same tree's LbvhNode array read back.
inline void expect_wide_nodes_match(gpu::Context& ctx, const gpu::Buffer& tree_buffer,
                                    std::span<const gpu_layout::LbvhNode> nodes) {
    const auto n = static_cast<std::uint32_t>((nodes.size() + 1) / 2);
    auto got = gpu::download_wide_nodes(ctx, tree_buffer, n);
    ASSERT_TRUE(got) << got.error().message;
    const std::vector<gpu_layout::LbvhWideNode> want = lbvh::wide_nodes(nodes);
    ASSERT_EQ(got->size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(std::memcmp(&(*got)[i], &want[i], sizeof(gpu_layout::LbvhWideNode)), 0)
            << "wide node " << i << " of " << want.size();
}

}  // namespace broadphase::testing
