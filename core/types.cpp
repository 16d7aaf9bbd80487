// Ray versus closed axis-aligned box: the slab test (Kay and Kajiya 1986), written with
// divisions instead of reciprocals so that no 0 * inf NaN can arise, and with axis-parallel
// rays (a zero direction component) handled exactly as an inside/outside test on that axis.
#include "broadphase/types.hpp"

#include <cmath>
#include <utility>

namespace broadphase {

bool ray_box_slabs(const Ray& ray, const Box& box, float& t_near, float& t_far) {
    for (int axis = 0; axis < 3; ++axis) {
        const float o = ray.origin[axis];
        const float d = ray.dir[axis];
        const float lo = box.min[axis];
        const float hi = box.max[axis];
        if (d == 0.0f) {
            // Parallel to this slab: inside it for every t, or never.
            if (!(lo <= o && o <= hi)) return false;
            continue;
        }
        float t0 = (lo - o) / d;
        float t1 = (hi - o) / d;
        if (std::isnan(t0) || std::isnan(t1)) return false;  // non-finite input
        if (t0 > t1) std::swap(t0, t1);
        t_near = std::max(t_near, t0);
        t_far = std::min(t_far, t1);
    }
    return true;
}

std::optional<float> ray_box_entry(const Ray& ray, const Box& box) {
    float t_near = 0.0f;
    float t_far = ray.tmax;
    if (!ray_box_slabs(ray, box, t_near, t_far) || !(t_near <= t_far)) return std::nullopt;
    return t_near;
}

double point_box_distance2(const Vec3& p, const Box& b) {
    double sum = 0;
    for (int axis = 0; axis < 3; ++axis) {
        const double below = double(b.min[axis]) - double(p[axis]);
        const double above = double(p[axis]) - double(b.max[axis]);
        const double d = std::max({below, above, 0.0});
        sum += d * d;
    }
    return sum;
}

float point_box_distance(const Vec3& p, const Box& b) {
    return static_cast<float>(std::sqrt(point_box_distance2(p, b)));
}

const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::invalid_box:
            return "invalid_box";
        case ErrorCode::parse_error:
            return "parse_error";
        case ErrorCode::io_error:
            return "io_error";
        case ErrorCode::invalid_argument:
            return "invalid_argument";
        case ErrorCode::unsupported:
            return "unsupported";
        case ErrorCode::vulkan_error:
            return "vulkan_error";
        case ErrorCode::out_of_memory:
            return "out_of_memory";
        case ErrorCode::limit_exceeded:
            return "limit_exceeded";
        case ErrorCode::invariant_violated:
            return "invariant_violated";
    }
    return "unknown";
}

BadResultAccess::BadResultAccess(Error error)
    : error_(std::move(error)), what_(error_.message + " [" + error_code_name(error_.code) + "]") {}

}  // namespace broadphase
