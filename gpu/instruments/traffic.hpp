// Memory traffic of the GPU kernels, for the instruments of `broadphase bench` (StageReport):
// the bytes each kernel must read and write by its documented access pattern (every element
// it reads or writes counted once; re-reads that a cache serves, such as the neighbours'
// keys of a binary search, and shared-memory traffic not counted). Each recorder that owns
// kernels states its model beside them (RadixSort::traffic, the Lbvh's stages in
// gpu/lbvh/lbvh.cpp), so that a change to a kernel's access pattern changes its model in the same
// file.
#pragma once

#include <cstdint>

#include "broadphase/gpu/instruments.hpp"

namespace broadphase::gpu {

struct Traffic {
    std::uint64_t read = 0;
    std::uint64_t written = 0;
    Traffic& operator+=(const Traffic& other) {
        read += other.read;
        written += other.written;
        return *this;
    }
};

}  // namespace broadphase::gpu
