// Sweep and prune (sort and sweep), as surveyed in magley's "Broad phase algorithms and data
// structures" (docs/references.md): sort the boxes by their minimum on one axis, chosen as the axis
// of largest centroid variance (so that XLine/YLine-like scenes sweep along their long axis), then
// sweep in that order keeping the boxes whose interval still covers the sweep position (the active
// list); each new box is tested against the active list on the other two axes. Temporal coherence:
// update() re-sorts the last order with insertion sort (O(n) when nearly sorted). D. Baraff 1992;
// J. Cohen et al., I-COLLIDE 1995.
//
// The active list of a plain sweep holds about n * (box extent / scene extent) boxes: for a
// million uniform boxes, some 8000 candidates per box (8e9 tests in all). The active list is
// therefore kept in slabs along the axis of second-largest variance (boundaries at quantiles
// of the boxes' minima, no slab narrower than the median box extent): a box is added to, and
// tested against, the active boxes of the slabs it spans, and a pair of boxes met in several
// slabs is reported only in the slab holding the larger of their two minima on that axis.
// It is the same sweep and the same pairs, with the active list bucketed.
#include "sweep_and_prune.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

// Slabs of the bucketed active list: at most kMaxSlabs, about kBoxesPerSlab boxes at least,
// boundaries taken from a sample of about kSlabSample boxes.
constexpr std::size_t kMaxSlabs = 1024;
constexpr std::size_t kBoxesPerSlab = 16;
constexpr std::size_t kSlabSample = 16384;

bool sweep_less(float key_a, std::uint32_t id_a, float key_b, std::uint32_t id_b) {
    return key_a < key_b || (key_a == key_b && id_a < id_b);
}

// Axes ordered by decreasing variance of box centroids (ties to the lower axis).
std::array<int, 3> axes_by_variance(std::span<const Box> boxes) {
    std::array<double, 3> mean{}, m2{};
    double count = 0;
    for (const Box& b : boxes) {
        count += 1;
        for (int axis = 0; axis < 3; ++axis) {
            const double c = 0.5 * (double(b.min[axis]) + double(b.max[axis]));
            const double d = c - mean[axis];
            mean[axis] += d / count;
            m2[axis] += d * (c - mean[axis]);
        }
    }
    std::array<int, 3> axes = {0, 1, 2};
    std::stable_sort(axes.begin(), axes.end(), [&](int a, int b) { return m2[a] > m2[b]; });
    return axes;
}

}  // namespace

Status SweepAndPrune::build(std::span<const Box> boxes) {
    order_.clear();
    sorted_.clear();
    prefix_max_.clear();
    if (Status s = validate_boxes(boxes); !s) return s;
    const std::array<int, 3> axes = axes_by_variance(boxes);
    axis_ = axes[0];
    slab_axis_ = axes[1];

    const auto n = static_cast<std::uint32_t>(boxes.size());
    std::vector<std::pair<float, std::uint32_t>> keyed(n);
    for (std::uint32_t i = 0; i < n; ++i) keyed[i] = {boxes[i].min[axis_], i};
    std::sort(keyed.begin(), keyed.end());  // (min, id): a total order, zero extents included
    order_.resize(n);
    sorted_.resize(n);
    for (std::uint32_t k = 0; k < n; ++k) {
        order_[k] = keyed[k].second;
        sorted_[k] = boxes[order_[k]];
    }
    refresh_derived();
    return Status::success();
}

Status SweepAndPrune::update(std::span<const Box> moved) {
    if (moved.size() != order_.size()) {
        return Error{ErrorCode::invalid_argument,
                     "sweep_and_prune update: " + std::to_string(moved.size()) +
                         " boxes given, built over " + std::to_string(order_.size())};
    }
    if (Status s = validate_boxes(moved); !s) return s;
    const std::size_t n = order_.size();
    for (std::size_t k = 0; k < n; ++k) sorted_[k] = moved[order_[k]];

    // Insertion sort of (sorted_, order_) by (min on the sweep axis, id).
    const std::size_t budget = kMaxShiftsPerBox * n;
    std::size_t shifts = 0;
    bool fell_back = false;
    for (std::size_t k = 1; k < n && !fell_back; ++k) {
        const Box box = sorted_[k];
        const std::uint32_t id = order_[k];
        const float key = box.min[axis_];
        std::size_t m = k;
        while (m > 0 && sweep_less(key, id, sorted_[m - 1].min[axis_], order_[m - 1])) {
            sorted_[m] = sorted_[m - 1];
            order_[m] = order_[m - 1];
            --m;
        }
        sorted_[m] = box;
        order_[m] = id;
        shifts += k - m;
        fell_back = shifts > budget;
    }
    if (fell_back) {
        std::vector<std::pair<float, std::uint32_t>> keyed(n);
        for (std::size_t k = 0; k < n; ++k) keyed[k] = {sorted_[k].min[axis_], order_[k]};
        std::sort(keyed.begin(), keyed.end());
        for (std::size_t k = 0; k < n; ++k) {
            order_[k] = keyed[k].second;
            sorted_[k] = moved[order_[k]];
        }
    }
    last_update_shifts_ = shifts;
    last_update_fell_back_ = fell_back;
    refresh_derived();
    return Status::success();
}

void SweepAndPrune::refresh_derived() {
    const std::size_t n = sorted_.size();
    prefix_max_.resize(n);
    float running = 0;
    for (std::size_t k = 0; k < n; ++k) {
        running = k == 0 ? sorted_[k].max[axis_] : std::max(running, sorted_[k].max[axis_]);
        prefix_max_[k] = running;
    }

    // Extent classes for the queries: class key = the exponent of the extent (frexp), zero
    // extents in a class of their own.
    classes_.clear();
    std::vector<std::pair<int, std::uint32_t>> keyed(n);
    for (std::size_t k = 0; k < n; ++k) {
        const float extent = sorted_[k].max[axis_] - sorted_[k].min[axis_];
        int exponent = std::numeric_limits<int>::min();
        if (extent > 0) std::frexp(extent, &exponent);
        keyed[k] = {exponent, static_cast<std::uint32_t>(k)};
    }
    std::sort(keyed.begin(), keyed.end());  // by class, then sweep position
    for (std::size_t k = 0; k < n; ++k) {
        if (k == 0 || keyed[k].first != keyed[k - 1].first) classes_.emplace_back();
        ExtentClass& c = classes_.back();
        const Box& b = sorted_[keyed[k].second];
        c.widest = std::max(c.widest, double(b.max[axis_]) - double(b.min[axis_]));  // exact
        c.mins.push_back(b.min[axis_]);
        c.where.push_back(keyed[k].second);
    }

    // Slab boundaries at quantiles of the boxes' minima on the slab axis (from a strided
    // sample), at most kMaxSlabs slabs, and none narrower than the median box extent: slabs
    // follow the density of the scene, and outliers (one far group, one huge box) do not
    // stretch them. Any boundaries give the same pairs; these only make the sweep fast.
    slab_bounds_.clear();
    if (n < 2 * kBoxesPerSlab) return;
    const std::size_t stride = std::max<std::size_t>(1, n / kSlabSample);
    std::vector<float> mins, extents;
    for (std::size_t k = 0; k < n; k += stride) {
        mins.push_back(sorted_[k].min[slab_axis_]);
        extents.push_back(sorted_[k].max[slab_axis_] - sorted_[k].min[slab_axis_]);
    }
    std::sort(mins.begin(), mins.end());
    const auto median = extents.begin() + static_cast<std::ptrdiff_t>(extents.size() / 2);
    std::nth_element(extents.begin(), median, extents.end());
    const double min_width = *median;
    const std::size_t slabs = std::min<std::size_t>(kMaxSlabs, n / kBoxesPerSlab);
    const std::size_t step = std::max<std::size_t>(1, mins.size() / slabs);
    float last = mins[0];
    for (std::size_t k = step; k < mins.size(); k += step) {
        if (mins[k] > last && double(mins[k]) - double(last) >= min_width) {
            slab_bounds_.push_back(mins[k]);
            last = mins[k];
        }
    }
}

void SweepAndPrune::self_pairs(std::vector<Pair>& out) const {
    const int a = axis_, b = slab_axis_, c = 3 - axis_ - slab_axis_;
    // Monotone in v, so a box spans the contiguous slabs [slab(min), slab(max)].
    const auto slab = [this](float v) {
        return static_cast<std::uint32_t>(
            std::upper_bound(slab_bounds_.begin(), slab_bounds_.end(), v) - slab_bounds_.begin());
    };
    const auto in_slab = [this](float v, std::uint32_t s) {
        return (s == 0 || slab_bounds_[s - 1] <= v) &&
               (s == slab_bounds_.size() || v < slab_bounds_[s]);
    };
    struct Active {
        float max_a, min_b, max_b, min_c, max_c;
        std::uint32_t id;
    };
    std::vector<std::vector<Active>> active(slab_bounds_.size() + 1);
    const std::size_t n = sorted_.size();
    for (std::size_t k = 0; k < n; ++k) {
        const Box& box = sorted_[k];
        const std::uint32_t id = order_[k];
        const float min_a = box.min[a];
        const Active entry{box.max[a], box.min[b], box.max[b], box.min[c], box.max[c], id};
        const std::uint32_t first = slab(box.min[b]), last = slab(box.max[b]);
        for (std::uint32_t s = first; s <= last; ++s) {
            std::vector<Active>& list = active[s];
            ++stats_.leaves_visited;
            std::size_t kept = 0;
            for (const Active& other : list) {
                // Every active box starts at or before min_a; it is dropped once it ends
                // before min_a, since every later box starts at or after min_a.
                const bool alive = other.max_a >= min_a;
                list[kept] = other;
                kept += alive;
                // Each interval test is one comparison, max of mins <= min of maxes: the
                // separate comparisons are coin flips that the branch predictor cannot learn,
                // while the c overlap almost always fails and so predicts well.
                const float lo_b = std::max(other.min_b, entry.min_b);
                if (alive &&
                    std::max(other.min_c, entry.min_c) <= std::min(other.max_c, entry.max_c) &&
                    lo_b <= std::min(other.max_b, entry.max_b) && in_slab(lo_b, s)) {
                    report_pair(out, id, other.id);
                }
            }
            stats_.box_tests += list.size();
            list.resize(kept);
            list.push_back(entry);
        }
    }
}

void SweepAndPrune::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    // In each extent class, a box overlapping the region on the sweep axis has its min in
    // [region.min - widest, region.max] (computed in double: no rounding can drop one).
    for (const ExtentClass& c : classes_) {
        const double from = double(region.min[axis_]) - c.widest;
        const auto begin = std::lower_bound(c.mins.begin(), c.mins.end(), from,
                                            [](float m, double v) { return double(m) < v; });
        for (auto it = begin; it != c.mins.end() && *it <= region.max[axis_]; ++it) {
            ++stats_.box_tests;
            const std::size_t k = c.where[static_cast<std::size_t>(it - c.mins.begin())];
            if (overlaps(region, sorted_[k])) out.push_back(order_[k]);
        }
    }
}

std::optional<RayHit> SweepAndPrune::ray_cast(const Ray& ray) const {
    // A linear scan: the sort order does not bound a ray's entry parameter.
    std::optional<RayHit> best;
    for (std::size_t k = 0; k < sorted_.size(); ++k) {
        ++stats_.box_tests;
        keep_closer(best, order_[k], ray_box_entry(ray, sorted_[k]));
    }
    return best;
}

std::size_t SweepAndPrune::size() const {
    return order_.size();
}

Status SweepAndPrune::validate() const {
    const std::size_t n = order_.size();
    if (sorted_.size() != n || prefix_max_.size() != n) return broken("array sizes differ");
    std::vector<std::uint8_t> seen(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
        const std::uint32_t id = order_[k];
        if (id >= n || seen[id]++) {
            return broken("order is not a permutation at position " + std::to_string(k));
        }
        if (Status s = validate_box(sorted_[k], id); !s) return s;
        if (k > 0 &&
            !sweep_less(sorted_[k - 1].min[axis_], order_[k - 1], sorted_[k].min[axis_], id)) {
            return broken("order not sorted at position " + std::to_string(k));
        }
        const float expected =
            k == 0 ? sorted_[k].max[axis_] : std::max(prefix_max_[k - 1], sorted_[k].max[axis_]);
        if (prefix_max_[k] != expected) {
            return broken("running maximum wrong at position " + std::to_string(k));
        }
    }
    return Status::success();
}

}  // namespace broadphase
