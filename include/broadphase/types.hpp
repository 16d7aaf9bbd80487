// Core value types shared by every part of broadphase: vectors, boxes, rays, pairs,
// and the error values that cross the public API instead of exceptions.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

namespace broadphase {

/// A point or direction in 3D; plain aggregate, no invariants.
struct Vec3 {
    float x = 0, y = 0, z = 0;

    float operator[](int axis) const { return axis == 0 ? x : (axis == 1 ? y : z); }
    float& operator[](int axis) { return axis == 0 ? x : (axis == 1 ? y : z); }
    friend bool operator==(const Vec3&, const Vec3&) = default;
};

/// A closed axis-aligned box: every point p with min <= p <= max on each axis.
/// A valid box has finite coordinates and min <= max on every axis (see validate_box).
struct Box {
    Vec3 min, max;
    friend bool operator==(const Box&, const Box&) = default;
};

/// The space-filling curve whose codes order an LBVH's leaves: the GPU build's (gpu::Lbvh) and
/// its CPU twin's (lbvh::build_tree). The values are layout/common.h's kCode* (push constant
/// `code_kind`).
enum class CodeKind : std::uint32_t {
    morton30 = 0,   ///< 10 bits per axis, x highest
    morton63 = 1,   ///< 21 bits per axis, x highest
    hilbert30 = 2,  ///< 3D Hilbert index, 10 bits per axis (Skilling's transform)
};

/// Closed-box overlap: touching faces, edges and corners count as overlapping.
inline bool overlaps(const Box& a, const Box& b) {
    return a.min.x <= b.max.x && b.min.x <= a.max.x && a.min.y <= b.max.y && b.min.y <= a.max.y &&
           a.min.z <= b.max.z && b.min.z <= a.max.z;
}

/// True when point p lies in the closed box b.
inline bool contains(const Box& b, const Vec3& p) {
    return b.min.x <= p.x && p.x <= b.max.x && b.min.y <= p.y && p.y <= b.max.y && b.min.z <= p.z &&
           p.z <= b.max.z;
}

/// True when the closed box `inner` lies in the closed box `outer` (faces may touch).
inline bool contains_box(const Box& outer, const Box& inner) {
    return outer.min.x <= inner.min.x && outer.min.y <= inner.min.y && outer.min.z <= inner.min.z &&
           inner.max.x <= outer.max.x && inner.max.y <= outer.max.y && inner.max.z <= outer.max.z;
}

/// Half the surface area of b (dx dy + dy dz + dz dx), in double so that large coordinates
/// neither overflow nor cancel. The surface area heuristic's measure of a box.
inline double half_area(const Box& b) {
    const double dx = double(b.max.x) - double(b.min.x);
    const double dy = double(b.max.y) - double(b.min.y);
    const double dz = double(b.max.z) - double(b.min.z);
    return dx * dy + dy * dz + dz * dx;
}

/// Centre of b, 0.5 min + 0.5 max on each axis: finite for every finite box, where
/// (min + max) * 0.5 overflows past half the largest float. The CPU structures split by it.
inline Vec3 centroid(const Box& b) {
    return {0.5f * b.min.x + 0.5f * b.max.x, 0.5f * b.min.y + 0.5f * b.max.y,
            0.5f * b.min.z + 0.5f * b.max.z};
}

/// Smallest box containing both a and b.
inline Box merge(const Box& a, const Box& b) {
    return {{std::min(a.min.x, b.min.x), std::min(a.min.y, b.min.y), std::min(a.min.z, b.min.z)},
            {std::max(a.max.x, b.max.x), std::max(a.max.y, b.max.y), std::max(a.max.z, b.max.z)}};
}

/// Smallest box containing every one of `boxes`; the unit box [0, 1]^3 when there is none (so
/// that cameras and grids placed from a scene's bounds stay valid for an empty scene).
inline Box bounds_of(std::span<const Box> boxes) {
    if (boxes.empty()) return {{0, 0, 0}, {1, 1, 1}};
    Box bounds = boxes[0];
    for (const Box& b : boxes) bounds = merge(bounds, b);
    return bounds;
}

/// A ray origin + t * dir for t in [0, tmax]; dir need not be normalised (t is in units of dir).
struct Ray {
    Vec3 origin, dir;
    float tmax = 0;
};

/// An overlapping pair of box ids (indices into the input), always i < j.
struct Pair {
    std::uint32_t i = 0, j = 0;
    friend auto operator<=>(const Pair&, const Pair&) = default;
};

/// Collision filter of a box, with Box2D's meaning (b2Filter): a box belongs to the categories
/// set in `category` and collides with those set in `mask`; boxes of the same non-zero group
/// always collide (positive group) or never do (negative group), whatever their bits.
struct Filter {
    std::uint32_t category = 1;
    std::uint32_t mask = 0xFFFFFFFFu;
    std::int32_t group = 0;
    friend bool operator==(const Filter&, const Filter&) = default;
};

/// True when a pair of overlapping boxes with these filters is reported: the same non-zero
/// group decides by its sign; otherwise each one's category must be in the other's mask.
/// The rule of every self-pairs and set-versus-set query, on the CPU and the GPU.
inline bool should_collide(const Filter& a, const Filter& b) {
    if (a.group == b.group && a.group != 0) return a.group > 0;
    return (a.category & b.mask) != 0 && (b.category & a.mask) != 0;
}

/// Closest hit of a ray: the box id and the ray parameter t of the entry point (0 if the
/// origin is inside the box).
struct RayHit {
    std::uint32_t id = 0;
    float t = 0;
};

/// Keeps in `best` the closer of itself and a hit of box `id` at entry parameter `t` (nothing:
/// a miss): the smaller t, ties to the smaller id, the order in which ray casts answer.
inline void keep_closer(std::optional<RayHit>& best, std::uint32_t id, std::optional<float> t) {
    if (t && (!best || *t < best->t || (*t == best->t && id < best->id))) best = RayHit{id, *t};
}

/// Slab test of a ray against a closed box. Returns the entry parameter in [0, tmax], or
/// nothing when the ray misses. Axis-parallel rays (dir component 0) are handled exactly.
std::optional<float> ray_box_entry(const Ray& ray, const Box& box);

/// The slab intersection behind ray_box_entry: narrows [t_near, t_far] (the caller starts it at
/// [0, tmax]) to the ray's parameters inside the closed box on every axis, in float. False when
/// the ray is parallel to a slab and outside it, or a division gives NaN (non-finite input);
/// the interval may be empty (t_near > t_far) when it returns true.
bool ray_box_slabs(const Ray& ray, const Box& box, float& t_near, float& t_far);

/// Euclidean distance from p to the closed box b (0 inside), computed in double and rounded
/// to float once: every structure's k-nearest query ranks by exactly this value (ties by id).
/// Monotone under containment: a box's distance bounds those of the boxes inside it.
float point_box_distance(const Vec3& p, const Box& b);
/// The square of point_box_distance, in double and not rounded.
double point_box_distance2(const Vec3& p, const Box& b);

/// What kind of thing went wrong; the message says where.
enum class ErrorCode {
    invalid_box,         ///< NaN, infinity or min > max in a box
    parse_error,         ///< malformed line in a scene or query file
    io_error,            ///< a file could not be opened, read or written
    invalid_argument,    ///< bad option, unknown method or generator
    unsupported,         ///< the device or structure cannot do this
    vulkan_error,        ///< a Vulkan call failed
    out_of_memory,       ///< host or device memory exhausted
    limit_exceeded,      ///< a device limit (e.g. maxStorageBufferRange) is too small
    invariant_violated,  ///< validate() found an invariant broken: a library bug, not bad input
};

/// An error value. `box` is the offending box id and `line` the 1-based file line, where known;
/// `Error{code, message}` names neither.
struct Error {
    Error() = default;
    Error(ErrorCode error_code, std::string error_message,
          std::optional<std::size_t> box_id = std::nullopt,
          std::optional<std::size_t> file_line = std::nullopt)
        : code(error_code), message(std::move(error_message)), box(box_id), line(file_line) {}

    ErrorCode code = ErrorCode::invalid_argument;
    std::string message;
    std::optional<std::size_t> box;
    std::optional<std::size_t> line;
};

/// The name of an ErrorCode ("invalid_box", ...).
const char* error_code_name(ErrorCode code);

/// What Result::value() throws when the Result holds an error, as std::expected's value()
/// throws std::bad_expected_access: the error itself, and a what() that gives its message and
/// code, so that a program that did not check a Result stops with the library's words
/// ("terminate called after throwing ... what(): unknown CPU method ... [invalid_argument]").
/// The library itself never throws it: errors are values; this is the misuse of one.
class BadResultAccess : public std::exception {
public:
    explicit BadResultAccess(Error error);
    const char* what() const noexcept override { return what_.c_str(); }
    const Error& error() const noexcept { return error_; }

private:
    Error error_;
    std::string what_;
};

/// Either a value or an Error; the API's replacement for exceptions. Check it (`if (!r)`,
/// then r.error()) before reading the value: value(), `*` and `->` on an error throw
/// BadResultAccess.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & {
        check();
        return std::get<0>(v_);
    }
    const T& value() const& {
        check();
        return std::get<0>(v_);
    }
    T&& value() && {
        check();
        return std::get<0>(std::move(v_));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    const Error& error() const { return std::get<1>(v_); }

private:
    void check() const {
        if (!ok()) throw BadResultAccess(std::get<1>(v_));
    }
    std::variant<T, Error> v_;
};

/// Success or an Error.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error) : error_(std::move(error)) {}
    static Status success() { return {}; }

    bool ok() const { return !error_.has_value(); }
    explicit operator bool() const { return ok(); }
    const Error& error() const { return *error_; }

private:
    std::optional<Error> error_;
};

}  // namespace broadphase
