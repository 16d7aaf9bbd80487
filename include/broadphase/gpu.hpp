// The Vulkan side of broadphase, every public GPU class in one include: the context (own
// device, or the caller's), the GPU LBVH (Karras 2012) with its all-pairs traversal, its
// queries, the frustum culler, moving scenes, proxy scenes and the tiled pairs of a scene over
// a memory budget. Each class has its own header under broadphase/gpu/; the instruments (stage
// reports, bandwidth, kernel costs, warm-up) are apart, in broadphase/gpu/instruments.hpp.
#pragma once

#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#include "broadphase/gpu/tiled_pairs.hpp"
