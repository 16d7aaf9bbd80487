// Sphere BVH with split planes, after the article "Sort a sphere BVH with split planes"
// (January 10, 2024), whose bvh_build is the model for build_range below).
//
// Build, per node over a range of boxes (top down, depth first, left child next in memory):
// the node's box bounds (kept per node) give the sphere centre (their midpoint); one pass over
// the boxes (a sample of at most 2 kPricingSample of them) gathers, for the midpoint plane of
// each axis, both sides' bounds and counts, and the plane of least surface area heuristic cost
// wins (ties to the longest axis); the boxes are divided by their centres, those below the plane
// going left. Where every midpoint is degenerate (everything on one side) the median on the
// longest axis is used, as it is below max_midpoint_depth. The article sizes a parent sphere over
// its objects; here a parent's sphere is sized to hold its children's spheres (so the
// containment is checked locally by validate()), and a leaf's sphere to hold the corners of its
// boxes. Radii are computed in double and rounded up to float.
//
// Queries: spheres prune (in self-pairs, region and point queries together with the node
// bounds: the sphere-and-box region of an SR-tree), leaves test the actual boxes with the same
// predicates as brute force (overlaps, contains, ray_box_entry, point_box_distance), so results
// are exact. Sphere tests run in double on a radius inflated by kRadiusSlack; the ray test is
// also widened by a margin proportional to the ray's length that covers ray_box_entry's float
// rounding.
#include "sphere_bvh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

constexpr std::uint32_t kMaxBoxes = 1u << 29;  // slots and node indices fit in link's 30 bits
constexpr std::uint32_t kMaxMidpointDepth = 128;
// Fewer than twice this many boxes of a node price its split planes.
constexpr std::uint32_t kPricingSample = 32;
// ray_box_entry's rounding moves a reported hit by at most a few float ulps of t * |dir|.
constexpr double kRaySlack = 1e-5;

// Halves first, so that boxes near the float limits do not overflow to infinity.
double square(double x) {
    return x * x;
}

// Calls f with a function giving a box's centre on `axis`, one instantiation per axis (an
// axis index inside sort comparators slows the build down).
template <class F>
auto with_axis(std::uint32_t axis, F&& f) {
    if (axis == 0) return f([](const Box& b) { return 0.5f * b.min.x + 0.5f * b.max.x; });
    if (axis == 1) return f([](const Box& b) { return 0.5f * b.min.y + 0.5f * b.max.y; });
    return f([](const Box& b) { return 0.5f * b.min.z + 0.5f * b.max.z; });
}

double distance2(const Vec3& a, const Vec3& b) {
    return square(double(a.x) - double(b.x)) + square(double(a.y) - double(b.y)) +
           square(double(a.z) - double(b.z));
}

// Squared distance from c to the farthest corner of b.
double farthest_corner2(const Vec3& c, const Box& b) {
    double sum = 0;
    for (int axis = 0; axis < 3; ++axis) {
        const double lo = std::abs(double(c[axis]) - double(b.min[axis]));
        const double hi = std::abs(double(b.max[axis]) - double(c[axis]));
        sum += square(std::max(lo, hi));
    }
    return sum;
}

// The smallest float >= r (with a little headroom for the double arithmetic that made r).
float round_up(double r) {
    r *= 1 + 1e-12;
    if (!(r <= double(std::numeric_limits<float>::max()))) {
        return std::numeric_limits<float>::infinity();
    }
    float f = static_cast<float>(r);
    if (double(f) < r) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}

// The radius every query and validate() work with.
double effective_radius(const SphereBvh::Node& node) {
    return double(node.radius) * (1 + SphereBvh::kRadiusSlack);
}

bool sphere_overlaps_box(const SphereBvh::Node& node, const Box& b) {
    const double r = effective_radius(node);
    return !(point_box_distance2(node.center, b) > r * r);
}

bool sphere_contains_point(const SphereBvh::Node& node, const Vec3& p) {
    const double r = effective_radius(node);
    return !(distance2(node.center, p) > r * r);
}

bool spheres_overlap(const SphereBvh::Node& a, const SphereBvh::Node& b) {
    const double r = effective_radius(a) + effective_radius(b);
    return !(distance2(a.center, b.center) > r * r);
}

// The ray against a node's sphere, widened for ray_box_entry's rounding. Returns a lower bound
// on the entry t of any box inside that ray_box_entry could report, or nothing when the ray
// cannot hit any of them.
struct RayContext {
    Ray ray;
    double dd = 0;      // |dir|^2
    double margin = 0;  // kRaySlack * tmax * |dir|
};

std::optional<double> sphere_entry(const RayContext& rc, const SphereBvh::Node& node) {
    const Ray& ray = rc.ray;
    const double ox = double(node.center.x) - double(ray.origin.x);
    const double oy = double(node.center.y) - double(ray.origin.y);
    const double oz = double(node.center.z) - double(ray.origin.z);
    // A box inside the sphere is hit, if at all, at t |dir| <= |origin - centre| + radius: the
    // margin for ray_box_entry's rounding need not exceed kRaySlack times that, so that one far
    // node (a body fallen 1e7 below the level) does not widen the spheres near the origin.
    const double radius = effective_radius(node);
    const double local = kRaySlack * (std::sqrt(ox * ox + oy * oy + oz * oz) + radius);
    const double r = radius + std::min(rc.margin, local);
    if (rc.dd == 0) {  // a zero direction: the origin is the whole ray
        if (ox * ox + oy * oy + oz * oz > r * r) return std::nullopt;
        return 0.0;
    }
    const double dx = ray.dir.x, dy = ray.dir.y, dz = ray.dir.z;
    const double tca = (ox * dx + oy * dy + oz * dz) / rc.dd;  // closest approach on the line
    const double ts = std::clamp(tca, 0.0, double(ray.tmax));  // ... on the segment
    const double px = ts * dx - ox, py = ts * dy - oy, pz = ts * dz - oz;
    if (px * px + py * py + pz * pz > r * r) return std::nullopt;
    const double qx = tca * dx - ox, qy = tca * dy - oy, qz = tca * dz - oz;
    const double half_chord2 = r * r - (qx * qx + qy * qy + qz * qz);
    const double entry = tca - std::sqrt(std::max(half_chord2, 0.0) / rc.dd);
    return std::max(entry, 0.0);
}

// The merge of the boxes of items [begin, end), begin < end.
template <class Items>
Box bounds_of(const Items& items, std::uint32_t begin, std::uint32_t end) {
    Box b = items[begin].box;
    for (std::uint32_t k = begin + 1; k < end; ++k) b = merge(b, items[k].box);
    return b;
}

// A candidate split of a node's boxes: each side's box bounds (empty: inverted and infinite)
// and count.
struct Split {
    static constexpr float kInf = std::numeric_limits<float>::infinity();
    static constexpr Box kEmpty{{kInf, kInf, kInf}, {-kInf, -kInf, -kInf}};
    Box left = kEmpty, right = kEmpty;
    std::uint32_t left_count = 0, right_count = 0;

    void add(const Box& b, bool to_left) {
        if (to_left) {
            left = merge(left, b);
            ++left_count;
        } else {
            right = merge(right, b);
            ++right_count;
        }
    }
    bool degenerate() const { return left_count == 0 || right_count == 0; }
    // The surface area heuristic: each side's area times its boxes.
    double cost() const {
        return half_area(left) * double(left_count) + half_area(right) * double(right_count);
    }
};

}  // namespace

// ---- build -----------------------------------------------------------------------------------

Status SphereBvh::build(std::span<const Box> boxes) {
    nodes_.clear();
    bounds_.clear();
    ids_.clear();
    boxes_.clear();
    if (config_.max_leaf_size == 0) return invalid("max_leaf_size must be at least 1");
    if (config_.max_midpoint_depth > kMaxMidpointDepth) {
        return invalid("max_midpoint_depth must be at most " + std::to_string(kMaxMidpointDepth));
    }
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() >= kMaxBoxes) {
        return Error{ErrorCode::limit_exceeded, "sphere_bvh: at most 2^29 - 1 boxes"};
    }
    const auto n = static_cast<std::uint32_t>(boxes.size());
    if (n == 0) return Status::success();

    std::vector<Item> items(n);
    Box bounds = boxes[0];
    for (std::uint32_t i = 0; i < n; ++i) {
        items[i] = {boxes[i], i};
        bounds = merge(bounds, boxes[i]);
    }
    nodes_.reserve(2 * (n / config_.max_leaf_size) + 8);
    bounds_.reserve(nodes_.capacity());
    build_range(items, 0, n, 0, bounds);

    ids_.resize(n);
    boxes_.resize(n);
    for (std::uint32_t k = 0; k < n; ++k) {
        ids_[k] = items[k].id;
        boxes_[k] = items[k].box;
    }
    return Status::success();
}

std::uint32_t SphereBvh::build_range(std::vector<Item>& items, std::uint32_t begin,
                                     std::uint32_t end, std::uint32_t depth, const Box& bounds) {
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(Node{});
    bounds_.push_back(bounds);
    const Vec3 center = centroid(bounds);
    const std::uint32_t num = end - begin;

    if (num <= config_.max_leaf_size) {
        double r2 = 0;
        for (std::uint32_t k = begin; k < end; ++k) {
            r2 = std::max(r2, farthest_corner2(center, items[k].box));
        }
        nodes_[index] = Node{center, round_up(std::sqrt(r2)), (begin << 2) | kLeafAxis, num};
        return index;
    }

    // The article's longest-axis rule, ties to the lower axis: the axis of the median fallback,
    // and the midpoint candidate kept unless another axis costs strictly less.
    const float dims[3] = {bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y,
                           bounds.max.z - bounds.min.z};
    std::uint32_t axis = 0;
    if (dims[0] < dims[1]) axis = 1;
    if (dims[1] < dims[2] && dims[0] < dims[2]) axis = 2;

    // The midpoint plane through the sphere's centre on each axis, priced by the surface area
    // heuristic in one pass over the boxes. Large nodes are priced on an even sample of their
    // boxes: the choice of axis needs no more, and pricing every box (three unpredictable
    // branches each) would add about two thirds to the build time.
    bool chosen = false;
    if (depth < config_.max_midpoint_depth) {
        Split splits[3];
        const std::uint32_t stride = std::max(1u, num / kPricingSample);
        for (std::uint32_t k = begin; k < end; k += stride) {
            const Box& box = items[k].box;
            const Vec3 c = centroid(box);
            for (int a = 0; a < 3; ++a) splits[a].add(box, c[a] < center[a]);
        }
        const std::uint32_t longest = axis;
        double best = std::numeric_limits<double>::infinity();
        for (std::uint32_t a : {longest, (longest + 1) % 3, (longest + 2) % 3}) {
            if (splits[a].degenerate()) continue;
            const double cost = splits[a].cost();
            if (cost < best) best = cost, axis = a, chosen = true;
        }
    }

    const auto first = items.begin() + begin, last = items.begin() + end;
    std::uint32_t mid = begin + num / 2;
    if (chosen) {
        const float plane = center[static_cast<int>(axis)];
        mid = static_cast<std::uint32_t>(
            with_axis(axis,
                      [&](auto key) {
                          return std::partition(
                              first, last, [&](const Item& item) { return key(item.box) < plane; });
                      }) -
            items.begin());
    } else {  // every midpoint split degenerate, or too deep: the median
        with_axis(axis, [&](auto key) {
            std::nth_element(first, items.begin() + mid, last,
                             [&](const Item& a, const Item& b) { return key(a.box) < key(b.box); });
            return 0;
        });
    }
    // The children's bounds from the boxes as divided (the pricing pass may have sampled).
    const std::uint32_t left =
        build_range(items, begin, mid, depth + 1, bounds_of(items, begin, mid));
    const std::uint32_t right = build_range(items, mid, end, depth + 1, bounds_of(items, mid, end));
    const double rl = std::sqrt(distance2(center, nodes_[left].center)) + nodes_[left].radius;
    const double rr = std::sqrt(distance2(center, nodes_[right].center)) + nodes_[right].radius;
    nodes_[index] = Node{center, round_up(std::max(rl, rr)), (right << 2) | axis, num};
    return index;
}

std::uint32_t SphereBvh::height() const {
    std::uint32_t h = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;  // (node, depth)
    if (!nodes_.empty()) stack.push_back({0, 0});
    while (!stack.empty()) {
        const auto [index, depth] = stack.back();
        stack.pop_back();
        h = std::max(h, depth);
        const Node& node = nodes_[index];
        if (node.is_leaf()) continue;
        stack.push_back({index + 1, depth + 1});
        stack.push_back({node.right(), depth + 1});
    }
    return h;
}

// ---- self pairs ------------------------------------------------------------------------------

void SphereBvh::self_pairs(std::vector<Pair>& out) const {
    if (!nodes_.empty()) self_pairs_node(0, out);
}

// Whether subtrees a and b may hold overlapping boxes: both their box bounds and their spheres
// must meet (the bounds are exact merges, so the first test is exact; the second is padded).
bool SphereBvh::may_overlap(std::uint32_t a, std::uint32_t b) const {
    return overlaps(bounds_[a], bounds_[b]) && spheres_overlap(nodes_[a], nodes_[b]);
}

void SphereBvh::self_pairs_node(std::uint32_t index, std::vector<Pair>& out) const {
    const Node& node = nodes_[index];
    if (node.is_leaf()) {
        ++stats_.leaves_visited;
        const std::uint32_t begin = node.first(), end = begin + node.count;
        for (std::uint32_t a = begin; a < end; ++a) {
            const Box& box = boxes_[a];
            for (std::uint32_t b = a + 1; b < end; ++b) {
                if (overlaps(box, boxes_[b])) {
                    report_pair(out, ids_[a], ids_[b]);
                }
            }
        }
        stats_.box_tests += std::uint64_t{node.count} * (node.count - 1) / 2;
        return;
    }
    ++stats_.nodes_visited;
    self_pairs_node(index + 1, out);
    self_pairs_node(node.right(), out);
    if (may_overlap(index + 1, node.right())) cross_pairs(index + 1, node.right(), out);
}

// Pairs with one box under `a` and the other under `b` (disjoint subtrees that may overlap;
// children are tested before the call, which saves most calls).
void SphereBvh::cross_pairs(std::uint32_t a, std::uint32_t b, std::vector<Pair>& out) const {
    const Node& na = nodes_[a];
    const Node& nb = nodes_[b];
    if (na.is_leaf() && nb.is_leaf()) {
        ++stats_.leaves_visited;
        const std::uint32_t a_end = na.first() + na.count, b_end = nb.first() + nb.count;
        for (std::uint32_t i = na.first(); i < a_end; ++i) {
            const Box& box = boxes_[i];
            for (std::uint32_t j = nb.first(); j < b_end; ++j) {
                if (overlaps(box, boxes_[j])) {
                    report_pair(out, ids_[i], ids_[j]);
                }
            }
        }
        stats_.box_tests += std::uint64_t{na.count} * nb.count;
        return;
    }
    ++stats_.nodes_visited;
    // Descend the larger sphere, or the only internal one.
    if (nb.is_leaf() || (!na.is_leaf() && na.radius >= nb.radius)) {
        if (may_overlap(a + 1, b)) cross_pairs(a + 1, b, out);
        if (may_overlap(na.right(), b)) cross_pairs(na.right(), b, out);
    } else {
        if (may_overlap(a, b + 1)) cross_pairs(a, b + 1, out);
        if (may_overlap(a, nb.right())) cross_pairs(a, nb.right(), out);
    }
}

// ---- region, point and ray queries -----------------------------------------------------------

template <class MeetsNode, class MeetsBox>
void SphereBvh::collect(MeetsNode&& meets_node, MeetsBox&& meets_box,
                        std::vector<std::uint32_t>& out) const {
    if (nodes_.empty()) return;
    std::vector<std::uint32_t> stack{0};
    while (!stack.empty()) {
        const std::uint32_t index = stack.back();
        stack.pop_back();
        const Node& node = nodes_[index];
        if (!meets_node(index)) continue;
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            for (std::uint32_t k = node.first(); k < node.first() + node.count; ++k) {
                if (meets_box(boxes_[k])) out.push_back(ids_[k]);
            }
            continue;
        }
        ++stats_.nodes_visited;
        stack.push_back(node.right());
        stack.push_back(index + 1);
    }
}

void SphereBvh::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    collect(
        [&](std::uint32_t index) {
            return overlaps(bounds_[index], region) && sphere_overlaps_box(nodes_[index], region);
        },
        [&](const Box& box) { return overlaps(region, box); }, out);
}

void SphereBvh::query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
    collect(
        [&](std::uint32_t index) {
            return contains(bounds_[index], p) && sphere_contains_point(nodes_[index], p);
        },
        [&](const Box& box) { return contains(box, p); }, out);
}

std::optional<RayHit> SphereBvh::ray_cast(const Ray& ray) const {
    std::optional<RayHit> best;
    // ray_box_entry never hits with a negative or NaN tmax.
    if (nodes_.empty() || !(ray.tmax >= 0)) return best;
    RayContext rc{ray, 0, 0};
    rc.dd = square(ray.dir.x) + square(ray.dir.y) + square(ray.dir.z);
    // The rounding margin grows with the t where a hit can still happen: no further than where
    // the ray leaves the root sphere, t <= (|origin - centre| + radius) / |dir|. Bounding it so
    // keeps rays with an infinite or huge tmax (1e30, FLT_MAX) as cheap as short ones; with
    // tmax alone the margin covered every sphere and a ray visited the whole tree.
    double t_reach = double(ray.tmax);
    if (rc.dd > 0) {
        const double reach =
            std::sqrt(distance2(ray.origin, nodes_[0].center)) + effective_radius(nodes_[0]);
        t_reach = std::min(t_reach, reach / std::sqrt(rc.dd) * (1 + 1e-6));
    }
    rc.margin = kRaySlack * t_reach * std::sqrt(rc.dd);
    const std::optional<double> root_t = sphere_entry(rc, nodes_[0]);
    if (!root_t) return best;
    struct Entry {
        std::uint32_t node;
        double t;
    };
    std::vector<Entry> stack{{0, *root_t}};
    while (!stack.empty()) {
        const Entry entry = stack.back();
        stack.pop_back();
        if (best && entry.t > double(best->t)) continue;
        const Node& node = nodes_[entry.node];
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            for (std::uint32_t k = node.first(); k < node.first() + node.count; ++k) {
                keep_closer(best, ids_[k], ray_box_entry(ray, boxes_[k]));
            }
            continue;
        }
        ++stats_.nodes_visited;
        const std::uint32_t left = entry.node + 1, right = node.right();
        const std::optional<double> tl = sphere_entry(rc, nodes_[left]);
        const std::optional<double> tr = sphere_entry(rc, nodes_[right]);
        // Push the farther child first so that the nearer one is popped next.
        if (tl && tr) {
            if (*tl <= *tr) {
                stack.push_back({right, *tr});
                stack.push_back({left, *tl});
            } else {
                stack.push_back({left, *tl});
                stack.push_back({right, *tr});
            }
        } else if (tl) {
            stack.push_back({left, *tl});
        } else if (tr) {
            stack.push_back({right, *tr});
        }
    }
    return best;
}

// ---- nearest ---------------------------------------------------------------------------------

Status SphereBvh::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty()) return Status::success();
    // A node's key is a float rounded down from max(0, |p - c| - r), so it never exceeds the
    // point_box_distance of a box inside it.
    auto lower_bound = [&p](const Node& node) {
        const double d = std::sqrt(distance2(p, node.center)) - effective_radius(node);
        const double bound = std::max(d * (1 - 1e-9), 0.0);
        if (!(bound <= double(std::numeric_limits<float>::max()))) {
            return std::numeric_limits<float>::max();
        }
        float f = static_cast<float>(bound);
        if (double(f) > bound) f = std::nextafter(f, 0.0f);
        return f;
    };
    best_first::Queue queue;
    queue.push_node(lower_bound(nodes_[0]), 0);
    queue.search(k, out, [&](std::uint32_t index, best_first::Queue& q) {
        const Node& node = nodes_[index];
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            for (std::uint32_t s = node.first(); s < node.first() + node.count; ++s)
                q.push_box(point_box_distance(p, boxes_[s]), ids_[s]);
            return;
        }
        ++stats_.nodes_visited;
        const std::uint32_t left = index + 1;
        q.push_node(lower_bound(nodes_[left]), left);
        q.push_node(lower_bound(nodes_[node.right()]), node.right());
    });
    return Status::success();
}

// ---- front to back ---------------------------------------------------------------------------

template <class Outside, class Visible>
void SphereBvh::walk_front_to_back(const Vec3& eye, Outside&& outside, Visible&& visible,
                                   std::vector<std::uint32_t>& out) const {
    if (nodes_.empty()) return;
    std::vector<std::uint32_t> stack{0};
    std::vector<std::pair<float, std::uint32_t>> leaf;  // (distance, id)
    while (!stack.empty()) {
        const std::uint32_t index = stack.back();
        stack.pop_back();
        const Node& node = nodes_[index];
        if (outside(node)) continue;
        if (node.is_leaf()) {
            ++stats_.leaves_visited;
            stats_.box_tests += node.count;
            leaf.clear();
            for (std::uint32_t k = node.first(); k < node.first() + node.count; ++k) {
                if (visible(boxes_[k]))
                    leaf.push_back({point_box_distance(eye, boxes_[k]), ids_[k]});
            }
            std::sort(leaf.begin(), leaf.end());
            for (const auto& entry : leaf) out.push_back(entry.second);
            continue;
        }
        ++stats_.nodes_visited;
        // The article's test: the left child holds the centres below the plane.
        const int axis = static_cast<int>(node.axis());
        const bool left_first = eye[axis] < node.center[axis];
        stack.push_back(left_first ? node.right() : index + 1);
        stack.push_back(left_first ? index + 1 : node.right());
    }
}

void SphereBvh::front_to_back(const Vec3& eye, std::vector<std::uint32_t>& out) const {
    walk_front_to_back(
        eye, [](const Node&) { return false; }, [](const Box&) { return true; }, out);
}

void SphereBvh::cull_front_to_back(const Frustum& f, std::vector<std::uint32_t>& out) const {
    // A sphere is outside plane (n, d) when dot(n, c) + d < -r; the slack covers |n| != 1 in
    // float and the rounding of the boxes' own float margins.
    auto sphere_outside = [&](const Node& node) {
        for (const Plane& p : f.planes) {
            const double m = double(p.normal.x) * node.center.x +
                             double(p.normal.y) * node.center.y +
                             double(p.normal.z) * node.center.z + double(p.d);
            const double scale = std::abs(double(p.d)) +
                                 std::abs(double(p.normal.x) * node.center.x) +
                                 std::abs(double(p.normal.y) * node.center.y) +
                                 std::abs(double(p.normal.z) * node.center.z);
            if (m + double(node.radius) * (1 + 1e-5) + 1e-5 * scale < 0) return true;
        }
        return false;
    };
    walk_front_to_back(
        f.eye, sphere_outside, [&](const Box& box) { return frustum_may_see(f, box); }, out);
}

// ---- validate --------------------------------------------------------------------------------

std::size_t SphereBvh::size() const {
    return boxes_.size();
}

Status SphereBvh::validate() const {
    const std::size_t n = boxes_.size();
    if (Status s = validate_slots(boxes_, ids_); !s) return s;
    if (n == 0) {
        return nodes_.empty() && bounds_.empty() ? Status::success()
                                                 : broken("nodes in an empty tree");
    }
    if (nodes_.empty()) return broken("no nodes over " + std::to_string(n) + " boxes");
    if (bounds_.size() != nodes_.size()) return broken("node bounds and nodes differ in size");

    struct Expect {
        std::uint32_t node, begin, end;
    };
    const std::vector<Expect> root{{0, 0, static_cast<std::uint32_t>(n)}};
    return walk_tree(
        root, nodes_.size(),
        [&](const Expect& e, const std::string& where, std::vector<Expect>& stack) -> Status {
            const Node& node = nodes_[e.node];
            if (node.count != e.end - e.begin || e.begin >= e.end) {
                return broken(where + "count does not match its place in the tree");
            }
            if (!(node.radius >= 0)) return broken(where + "negative or NaN radius");
            const double r = effective_radius(node);
            const Box& bounds = bounds_[e.node];
            for (std::uint32_t k = e.begin; k < e.end; ++k) {
                if (farthest_corner2(node.center, boxes_[k]) > r * r) {
                    return broken(where + "sphere does not contain box " + std::to_string(ids_[k]),
                                  ids_[k]);
                }
                if (merge(bounds, boxes_[k]) != bounds) {
                    return broken(where + "bounds do not contain box " + std::to_string(ids_[k]),
                                  ids_[k]);
                }
            }
            if (node.is_leaf()) {
                if (node.first() != e.begin) return broken(where + "leaf slots out of place");
                if (node.count > config_.max_leaf_size) {
                    return broken(where + "leaf holds " + std::to_string(node.count) +
                                  " boxes, more than max_leaf_size");
                }
                return Status::success();
            }
            // Two bits hold 0..3 and 3 marks a leaf, so an internal node's axis is always 0..2.
            const int axis = static_cast<int>(node.axis());
            const std::uint32_t left = e.node + 1, right = node.right();
            if (right <= left || right >= nodes_.size()) return broken(where + "bad right child");
            const Node& l = nodes_[left];
            const Node& rn = nodes_[right];
            if (l.count == 0 || rn.count == 0 || l.count + rn.count != node.count) {
                return broken(where + "children do not partition its boxes");
            }
            // The split: no box centre on the left lies beyond one on the right along the axis.
            float left_max = -std::numeric_limits<float>::infinity();
            float right_min = std::numeric_limits<float>::infinity();
            const std::uint32_t mid = e.begin + l.count;
            for (std::uint32_t k = e.begin; k < mid; ++k) {
                left_max = std::max(left_max, centroid(boxes_[k])[axis]);
            }
            for (std::uint32_t k = mid; k < e.end; ++k) {
                right_min = std::min(right_min, centroid(boxes_[k])[axis]);
            }
            if (left_max > right_min) {
                return broken(where + "children are not separated along the split axis");
            }
            for (const Node* child : {&l, &rn}) {
                const double reach =
                    std::sqrt(distance2(node.center, child->center)) + child->radius;
                if (reach > r) return broken(where + "sphere does not contain a child's sphere");
            }
            stack.push_back({right, mid, e.end});
            stack.push_back({left, e.begin, mid});
            return Status::success();
        });
}

}  // namespace broadphase
