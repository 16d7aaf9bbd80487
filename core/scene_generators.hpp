// The standard seeded scene generators (include/broadphase/scene.hpp lists them), as a table
// that scene.cpp looks names up in. Private to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::detail {

/// One generator: `generate(count, seed)` returns exactly `count` valid boxes, the same ones
/// for the same arguments. It may throw std::bad_alloc; the caller catches it.
struct Generator {
    std::string_view name;
    std::vector<Box> (*generate)(std::size_t count, std::uint32_t seed);
};

/// Every standard generator, in the order generator_names() lists them.
std::span<const Generator> generators();

}  // namespace broadphase::detail
