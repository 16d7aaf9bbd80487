// Uniform grid with spatial hashing, as surveyed in magley's "Broad phase algorithms and data
// structures" ("grid hashing"; docs/references.md), with its flaw fixed: a box is entered in
// every cell its closed extent overlaps, so two overlapping boxes always share a cell (the
// survey's rectangles 1 and 2, which meet only in a middle cell, are found). Teschner et al.,
// "Optimized Spatial Hashing for Collision Detection of Deformable Objects", VMV 2003; the cell
// walk of the ray cast is the 3D-DDA of J. Amanatides and A. Woo, "A Fast Voxel Traversal
// Algorithm for Ray Tracing", Eurographics 1987. The levels are hierarchical spatial hashing
// (Mirtich 1996; Eitz and Lixu 2007): build_level sizes each level's cells for the finest size
// class that would otherwise crowd them (see kCrowding).
//
// The cell map is cell(x) = clamp(floor((x - origin) / side), +-kCoordLimit) per axis. It is
// monotone, which is all that correctness rests on: a box covers the cells [cell(min),
// cell(max)], and for two overlapping boxes the point max(min_a, min_b) lies in both, so the
// cell max(cell(min_a), cell(min_b)) is in both ranges. Reporting a pair only from that cell
// reports it exactly once; region queries use the same rule with the region as one box.
#include "uniform_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "best_first.hpp"
#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

using CellCoord = UniformGrid::CellCoord;

// Rounding margin of the ray walk, relative to the coordinates involved. ray_box_entry's slab
// test is exact up to about 2 float ulps of |origin| + |box coordinate|; this is 8 times that.
constexpr double kRayRelativeMargin = 1e-6;
// A ray walk (or a ray's rounding margin) longer than this in cells, or than the number of
// small boxes, is replaced by a linear scan.
constexpr double kMaxGridMagnitude = 1ull << 50;

CellCoord max_coord(const CellCoord& a, const CellCoord& b) {
    return {std::max(a[0], b[0]), std::max(a[1], b[1]), std::max(a[2], b[2])};
}

// Calls f(c) for every cell coordinate c in [lo, hi], x outermost and z innermost.
template <class F>
void for_each_coord(const CellCoord& lo, const CellCoord& hi, F&& f) {
    for (std::int64_t x = lo[0]; x <= hi[0]; ++x) {
        for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
            for (std::int64_t z = lo[2]; z <= hi[2]; ++z) f(CellCoord{x, y, z});
        }
    }
}

// True when c lies in [lo, hi] on every axis.
bool coord_in(const CellCoord& lo, const CellCoord& hi, const CellCoord& c) {
    return lo[0] <= c[0] && c[0] <= hi[0] && lo[1] <= c[1] && c[1] <= hi[1] && lo[2] <= c[2] &&
           c[2] <= hi[2];
}

double cell_span(const CellCoord& lo, const CellCoord& hi) {
    double count = 1;
    for (int a = 0; a < 3; ++a) count *= static_cast<double>(hi[a] - lo[a]) + 1.0;
    return count;
}

std::int64_t clamp_floor(double g) {
    g = std::floor(g);
    if (!(g == g)) return 0;
    const auto limit = static_cast<double>(UniformGrid::kCoordLimit);
    return static_cast<std::int64_t>(std::clamp(g, -limit, limit));
}

}  // namespace

std::size_t UniformGrid::CellTable::hash(const CellCoord& c) {
    // Teschner's hash (x p1 xor y p2 xor z p3), then a multiplicative finaliser so that the
    // low bits used by the power-of-two table are well mixed.
    std::uint64_t h = static_cast<std::uint64_t>(c[0]) * 73856093ull ^
                      static_cast<std::uint64_t>(c[1]) * 19349663ull ^
                      static_cast<std::uint64_t>(c[2]) * 83492791ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return static_cast<std::size_t>(h);
}

std::size_t UniformGrid::CellTable::position(const CellCoord& key) const {
    std::size_t p = hash(key) & mask_;
    while (table_[p] != kVacant && cells_[table_[p]].key != key) p = (p + 1) & mask_;
    return p;
}

const std::vector<std::uint32_t>* UniformGrid::CellTable::find(const CellCoord& key) const {
    if (cells_.empty()) return nullptr;
    const std::uint32_t index = table_[position(key)];
    return index == kVacant ? nullptr : &cells_[index].slots;
}

std::vector<std::uint32_t>& UniformGrid::CellTable::get_or_add(const CellCoord& key) {
    if (2 * (cells_.size() + 1) > table_.size())
        rehash(std::max<std::size_t>(64, 2 * table_.size()));
    const std::size_t p = position(key);
    if (table_[p] == kVacant) {
        table_[p] = static_cast<std::uint32_t>(cells_.size());
        cells_.push_back(Cell{key, {}});
    }
    return cells_[table_[p]].slots;
}

void UniformGrid::CellTable::erase(const CellCoord& key) {
    std::size_t hole = position(key);
    const std::uint32_t index = table_[hole];
    // Backward-shift deletion: pull later entries of the probe run into the hole unless
    // their home position lies cyclically in (hole, q].
    table_[hole] = kVacant;
    for (std::size_t q = (hole + 1) & mask_; table_[q] != kVacant; q = (q + 1) & mask_) {
        const std::size_t home = hash(cells_[table_[q]].key) & mask_;
        const bool stays = hole < q ? (hole < home && home <= q) : (hole < home || home <= q);
        if (stays) continue;
        table_[hole] = table_[q];
        table_[q] = kVacant;
        hole = q;
    }
    // Keep cells_ dense: the last cell takes the erased one's index.
    const auto last = static_cast<std::uint32_t>(cells_.size() - 1);
    if (index != last) {
        table_[position(cells_[last].key)] = index;
        cells_[index] = std::move(cells_[last]);
    }
    cells_.pop_back();
}

void UniformGrid::CellTable::clear() {
    cells_.clear();
    table_.clear();
    mask_ = 0;
}

void UniformGrid::CellTable::reserve(std::size_t cells) {
    cells_.reserve(cells);
    std::size_t capacity = 64;
    while (capacity < 2 * cells) capacity *= 2;
    if (capacity > table_.size()) rehash(capacity);
}

void UniformGrid::CellTable::rehash(std::size_t capacity) {
    table_.assign(capacity, kVacant);
    mask_ = capacity - 1;
    for (std::uint32_t i = 0; i < cells_.size(); ++i) table_[position(cells_[i].key)] = i;
}

std::int64_t UniformGrid::cell_coord(float x, int axis) const {
    return clamp_floor((double(x) - origin_[axis]) * inv_cell_[axis]);
}

CellCoord UniformGrid::cell_of(const Vec3& p) const {
    return {cell_coord(p.x, 0), cell_coord(p.y, 1), cell_coord(p.z, 2)};
}

double UniformGrid::span_cells(std::uint32_t slot) const {
    return cell_span(lo_[slot], hi_[slot]);
}

void UniformGrid::reset_level() {
    boxes_.clear();
    ids_.clear();
    lo_.clear();
    hi_.clear();
    large_pos_.clear();
    slot_of_.clear();
    cells_.clear();
    blocks_.clear();
    large_.clear();
    coarse_.reset();
    small_count_ = 0;
    has_small_bounds_ = false;
    small_bounds_ = {};
    origin_ = {0, 0, 0};
    class_side_.fill(kNoClass);
    for (int a = 0; a < 3; ++a) {
        cell_size_[a] = std::max(config_.fallback_cell_size, min_cell_[a]);
        inv_cell_[a] = 1 / cell_size_[a];
    }
}

Status UniformGrid::build(std::span<const Box> boxes) {
    reset_level();
    if (!(config_.cell_scale > 0) || !(config_.fallback_cell_size > 0) ||
        !std::isfinite(config_.cell_scale) || !std::isfinite(config_.fallback_cell_size)) {
        return invalid("cell_scale and fallback_cell_size must be finite and > 0");
    }
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() >= std::numeric_limits<std::uint32_t>::max()) {
        return Error{ErrorCode::limit_exceeded, "uniform_grid: too many boxes"};
    }
    std::vector<std::uint32_t> ids(boxes.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint32_t>(i);
    return build_level(boxes, ids);
}

std::array<double, 3> UniformGrid::cell_sides(std::span<const Box> boxes,
                                              std::span<const std::uint32_t> members) const {
    std::array<double, 3> sides{};
    const std::size_t n = members.size();
    Box bounds = boxes[members[0]];
    for (const std::uint32_t i : members) bounds = merge(bounds, boxes[i]);
    std::vector<float> extents(n);
    for (int a = 0; a < 3; ++a) {
        for (std::size_t k = 0; k < n; ++k) {
            extents[k] = boxes[members[k]].max[a] - boxes[members[k]].min[a];
        }
        const auto median = extents.begin() + static_cast<std::ptrdiff_t>(n / 2);
        std::nth_element(extents.begin(), median, extents.end());
        const double spread = double(bounds.max[a]) - double(bounds.min[a]);
        double side = config_.cell_scale * double(*median);
        // Mostly zero-extent boxes (points, flat boxes): about one box per cell instead.
        if (!(side > 0) && spread > 0) side = spread / std::max(1.0, std::cbrt(double(n)));
        if (!(side > 0) || !std::isfinite(side)) side = config_.fallback_cell_size;
        sides[a] = std::max(side, min_cell_[a]);
    }
    return sides;
}

bool UniformGrid::crowded(std::span<const Box> boxes, std::span<const std::uint32_t> fine,
                          const std::array<double, 3>& sides, std::size_t level_count) const {
    // Sum over the cells of (fine boxes whose min corner lies there)^2: twice the box tests
    // that the fine boxes' pairs alone would cost in cells of these sides.
    std::vector<CellCoord> keys(fine.size());
    for (std::size_t k = 0; k < fine.size(); ++k) {
        const Box& b = boxes[fine[k]];
        for (int a = 0; a < 3; ++a) {
            keys[k][a] = clamp_floor((double(b.min[a]) - origin_[a]) / sides[a]);
        }
    }
    std::sort(keys.begin(), keys.end());
    double squares = 0;
    for (std::size_t k = 0; k < keys.size();) {
        std::size_t end = k + 1;
        while (end < keys.size() && keys[end] == keys[k]) ++end;
        squares += double(end - k) * double(end - k);
        k = end;
    }
    return squares > kCrowding * double(level_count);
}

Status UniformGrid::build_level(std::span<const Box> boxes, std::span<const std::uint32_t> ids) {
    reset_level();
    const std::size_t n = boxes.size();
    if (n > 0) {
        Box bounds = boxes[0];
        for (const Box& b : boxes) bounds = merge(bounds, b);
        for (int a = 0; a < 3; ++a) origin_[a] = bounds.min[a];
        std::vector<std::uint32_t> members(n);
        for (std::uint32_t i = 0; i < n; ++i) members[i] = i;
        std::array<double, 3> sides = cell_sides(boxes, members);
        // Size classes far below the median (hierarchical hashing's finer levels): while the
        // boxes kLevelGrowth times smaller than the median-sized box would crowd these cells,
        // size the cells for them instead and keep only them here; the larger boxes go to the
        // coarser levels, which choose their sides the same way. The deepest level keeps every
        // box it is given, so it has no class to choose.
        std::vector<std::uint32_t> fine;
        for (std::uint32_t round = 0; depth_ < kMaxDepth && round < kMaxDepth; ++round) {
            fine.clear();
            for (const std::uint32_t i : members) {
                if (in_class(boxes[i], sides)) fine.push_back(i);
            }
            if (fine.empty() || !crowded(boxes, fine, sides, n)) break;
            const std::array<double, 3> finer = cell_sides(boxes, fine);
            if (!(finer[0] < sides[0] || finer[1] < sides[1] || finer[2] < sides[2])) break;
            class_side_ = sides;
            for (int a = 0; a < 3; ++a) sides[a] = std::min(sides[a], finer[a]);
            members.swap(fine);
        }
        for (int a = 0; a < 3; ++a) {
            cell_size_[a] = sides[a];
            inv_cell_[a] = 1 / sides[a];
        }
    }

    // Slots in cell order of the min corners, so that the boxes of a cell sit close together
    // in memory and consecutive insertions touch the same cells.
    std::vector<std::pair<CellCoord, std::uint32_t>> order;
    std::vector<Box> coarse_boxes;
    std::vector<std::uint32_t> coarse_ids;
    order.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        if (depth_ < kMaxDepth && !fits(boxes[i])) {
            coarse_boxes.push_back(boxes[i]);
            coarse_ids.push_back(ids[i]);
        } else {
            order.emplace_back(cell_of(boxes[i].min), i);
        }
    }
    std::sort(order.begin(), order.end());
    const std::size_t m = order.size();
    boxes_.reserve(m);
    ids_.reserve(m);
    lo_.reserve(m);
    hi_.reserve(m);
    large_pos_.reserve(m);
    slot_of_.reserve(m);
    cells_.reserve(m);
    for (const auto& [key, i] : order) add_slot(ids[i], boxes[i]);
    if (!coarse_boxes.empty()) return coarse_level().build_level(coarse_boxes, coarse_ids);
    return Status::success();
}

bool UniformGrid::in_class(const Box& box, const std::array<double, 3>& sides) const {
    for (int a = 0; a < 3; ++a) {
        const double extent = double(box.max[a]) - double(box.min[a]);
        if (!(config_.cell_scale * extent * kLevelGrowth <= sides[a])) return false;
    }
    return true;
}

bool UniformGrid::fits(const Box& box) const {
    return cell_span(cell_of(box.min), cell_of(box.max)) <= double(config_.max_cells_per_box) &&
           in_class(box, class_side_);
}

UniformGrid& UniformGrid::coarse_level() {
    if (!coarse_) {
        coarse_ = std::make_unique<UniformGrid>(config_);
        coarse_->depth_ = depth_ + 1;
        for (int a = 0; a < 3; ++a) coarse_->min_cell_[a] = kLevelGrowth * cell_size_[a];
        coarse_->reset_level();
        coarse_->origin_ = origin_;
    }
    return *coarse_;
}

bool UniformGrid::contains_id(std::uint32_t id) const {
    return slot_of_.contains(id) || (coarse_ && coarse_->contains_id(id));
}

void UniformGrid::place(std::uint32_t id, const Box& box) {
    if (depth_ < kMaxDepth && !fits(box)) {
        coarse_level().place(id, box);
    } else {
        add_slot(id, box);
    }
}

void UniformGrid::absorb(const UniformGrid& level) const {
    stats_.nodes_visited += level.stats_.nodes_visited;
    stats_.leaves_visited += level.stats_.leaves_visited;
    stats_.box_tests += level.stats_.box_tests;
    level.reset_stats();
}

void UniformGrid::add_slot(std::uint32_t id, const Box& box) {
    const auto slot = static_cast<std::uint32_t>(boxes_.size());
    boxes_.push_back(box);
    ids_.push_back(id);
    lo_.emplace_back();
    hi_.emplace_back();
    large_pos_.push_back(kNotLarge);
    slot_of_.emplace(id, slot);
    enter(slot);
}

void UniformGrid::enter(std::uint32_t slot) {
    const Box& box = boxes_[slot];
    const CellCoord lo = cell_of(box.min), hi = cell_of(box.max);
    lo_[slot] = lo;
    hi_[slot] = hi;
    if (cell_span(lo, hi) > double(config_.max_cells_per_box)) {
        large_pos_[slot] = static_cast<std::uint32_t>(large_.size());
        large_.push_back(slot);
        return;
    }
    large_pos_[slot] = kNotLarge;
    for_each_coord(lo, hi, [&](const CellCoord& cell) {
        std::vector<std::uint32_t>& slots = cells_.get_or_add(cell);
        if (slots.empty()) add_cell_to_block(cell);
        slots.push_back(slot);
    });
    ++small_count_;
    small_bounds_ = has_small_bounds_ ? merge(small_bounds_, box) : box;
    has_small_bounds_ = true;
}

void UniformGrid::leave(std::uint32_t slot) {
    if (const std::uint32_t pos = large_pos_[slot]; pos != kNotLarge) {
        const std::uint32_t last = large_.back();
        large_[pos] = last;
        large_pos_[last] = pos;
        large_.pop_back();
        large_pos_[slot] = kNotLarge;
        return;
    }
    for_each_coord(lo_[slot], hi_[slot], [&](const CellCoord& cell) {
        std::vector<std::uint32_t>& slots = cells_.get_or_add(cell);
        *std::find(slots.begin(), slots.end(), slot) = slots.back();
        slots.pop_back();
        if (slots.empty()) {
            cells_.erase(cell);
            remove_cell_from_block(cell);
        }
    });
    --small_count_;
}

void UniformGrid::relabel(std::uint32_t from, std::uint32_t to) {
    if (large_pos_[from] != kNotLarge) {
        large_[large_pos_[from]] = to;
    } else {
        for_each_coord(lo_[from], hi_[from], [&](const CellCoord& cell) {
            std::vector<std::uint32_t>& slots = cells_.get_or_add(cell);
            *std::find(slots.begin(), slots.end(), from) = to;
        });
    }
    boxes_[to] = boxes_[from];
    ids_[to] = ids_[from];
    lo_[to] = lo_[from];
    hi_[to] = hi_[from];
    large_pos_[to] = large_pos_[from];
    slot_of_[ids_[to]] = to;
}

Status UniformGrid::insert(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (contains_id(id)) {
        return Error{ErrorCode::invalid_argument,
                     "uniform_grid insert: id " + std::to_string(id) + " is already present", id};
    }
    if (size() + 1 >= std::numeric_limits<std::uint32_t>::max()) {
        return Error{ErrorCode::limit_exceeded, "uniform_grid: too many boxes", id};
    }
    place(id, box);
    return Status::success();
}

void UniformGrid::erase_slot(std::uint32_t slot) {
    slot_of_.erase(ids_[slot]);
    leave(slot);
    const auto last = static_cast<std::uint32_t>(boxes_.size() - 1);
    if (slot != last) relabel(last, slot);
    boxes_.pop_back();
    ids_.pop_back();
    lo_.pop_back();
    hi_.pop_back();
    large_pos_.pop_back();
}

Status UniformGrid::remove(std::uint32_t id) {
    if (const auto it = slot_of_.find(id); it != slot_of_.end()) {
        erase_slot(it->second);
        return Status::success();
    }
    if (coarse_ && coarse_->contains_id(id)) return coarse_->remove(id);
    return Error{ErrorCode::invalid_argument,
                 "uniform_grid remove: id " + std::to_string(id) + " is not present", id};
}

Status UniformGrid::move(std::uint32_t id, const Box& box) {
    if (Status s = validate_box(box, id); !s) return s;
    if (!contains_id(id)) {
        return Error{ErrorCode::invalid_argument,
                     "uniform_grid move: id " + std::to_string(id) + " is not present", id};
    }
    // Removed and placed again from the finest level: the box may change level.
    if (Status s = remove(id); !s) return s;
    place(id, box);
    return Status::success();
}

CellCoord UniformGrid::block_of(const CellCoord& cell) {
    return {cell[0] >> kBlockShift, cell[1] >> kBlockShift, cell[2] >> kBlockShift};
}

void UniformGrid::add_cell_to_block(const CellCoord& cell) {
    blocks_[block_of(cell)].push_back(cell);
}

void UniformGrid::remove_cell_from_block(const CellCoord& cell) {
    const auto it = blocks_.find(block_of(cell));
    std::vector<CellCoord>& list = it->second;
    *std::find(list.begin(), list.end(), cell) = list.back();
    list.pop_back();
    if (list.empty()) blocks_.erase(it);
}

template <class F>
void UniformGrid::for_each_cell(const CellCoord& lo, const CellCoord& hi, F&& f) const {
    for (int a = 0; a < 3; ++a) {
        if (lo[a] > hi[a]) return;
    }
    const auto lookups = [&](const CellCoord& l, const CellCoord& h) {
        for_each_coord(l, h, [&](const CellCoord& key) {
            ++stats_.nodes_visited;
            if (const auto* slots = cells_.find(key)) f(key, *slots);
        });
    };
    constexpr double kBlockCells = double(1 << (3 * kBlockShift));
    const double span = cell_span(lo, hi);
    if (span <= std::min(kBlockCells, double(cells_.size()))) return lookups(lo, hi);
    // An occupied block: its cells in [lo, hi], by its list or by lookup.
    const auto visit_block = [&](const CellCoord& block, const std::vector<CellCoord>& list) {
        ++stats_.nodes_visited;
        CellCoord l, h;
        for (int a = 0; a < 3; ++a) {
            l[a] = std::max(lo[a], block[a] * (std::int64_t{1} << kBlockShift));
            h[a] = std::min(hi[a], (block[a] + 1) * (std::int64_t{1} << kBlockShift) - 1);
        }
        if (cell_span(l, h) < double(list.size())) return lookups(l, h);
        for (const CellCoord& key : list) {
            ++stats_.nodes_visited;
            if (coord_in(lo, hi, key)) f(key, *cells_.find(key));
        }
    };
    const CellCoord blo = block_of(lo), bhi = block_of(hi);
    if (cell_span(blo, bhi) <= double(blocks_.size())) {
        for_each_coord(blo, bhi, [&](const CellCoord& block) {
            ++stats_.nodes_visited;
            if (const auto it = blocks_.find(block); it != blocks_.end()) {
                visit_block(block, it->second);
            }
        });
        return;
    }
    for (const auto& [block, list] : blocks_) {
        ++stats_.nodes_visited;
        if (coord_in(blo, bhi, block)) visit_block(block, list);
    }
}

void UniformGrid::self_pairs(std::vector<Pair>& out) const {
    const auto report = [&](std::uint32_t a, std::uint32_t b) {
        const std::uint32_t ia = ids_[a], ib = ids_[b];
        report_pair(out, ia, ib);
    };

    // Small against small, in the cell holding max(min_a, min_b) only.
    for (const auto& [key, slots] : cells_.cells()) {
        ++stats_.nodes_visited;
        ++stats_.leaves_visited;
        const std::size_t m = slots.size();
        stats_.box_tests += m * (m - 1) / 2;
        for (std::size_t p = 0; p < m; ++p) {
            const std::uint32_t a = slots[p];
            const Box box = boxes_[a];
            const CellCoord& lo_a = lo_[a];
            for (std::size_t q = p + 1; q < m; ++q) {
                const std::uint32_t b = slots[q];
                if (overlaps(box, boxes_[b]) && max_coord(lo_a, lo_[b]) == key) report(a, b);
            }
        }
    }

    // Large against small: the large box meets each small box in the cells of its range,
    // and reports it from the same cell as above.
    for (const std::uint32_t a : large_) {
        const Box& box = boxes_[a];
        for_each_cell(lo_[a], hi_[a], [&](const CellCoord& key, const auto& slots) {
            ++stats_.leaves_visited;
            stats_.box_tests += slots.size();
            for (const std::uint32_t b : slots) {
                if (overlaps(box, boxes_[b]) && max_coord(lo_[a], lo_[b]) == key) report(a, b);
            }
        });
    }

    // Large against large: sweep on x.
    std::vector<std::uint32_t> order(large_.begin(), large_.end());
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return boxes_[a].min.x < boxes_[b].min.x; });
    for (std::size_t p = 0; p < order.size(); ++p) {
        const Box& box = boxes_[order[p]];
        for (std::size_t q = p + 1; q < order.size() && boxes_[order[q]].min.x <= box.max.x; ++q) {
            ++stats_.box_tests;
            if (overlaps(box, boxes_[order[q]])) report(order[p], order[q]);
        }
    }

    // This level against the coarser ones: each box's region query there reports every
    // coarser box it overlaps once.
    if (coarse_count() == 0) return;
    // The coarser levels hold their own filters (none): their pairs are filtered here.
    std::vector<Pair> coarse_pairs;
    coarse_->self_pairs(coarse_pairs);
    for (const Pair& p : coarse_pairs) report_pair(out, p.i, p.j);
    std::vector<std::uint32_t> hits;
    for (std::uint32_t s = 0; s < boxes_.size(); ++s) {
        hits.clear();
        coarse_->query_box(boxes_[s], hits);
        for (const std::uint32_t id : hits) {
            report_pair(out, ids_[s], id);
        }
    }
    absorb(*coarse_);
}

void UniformGrid::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    stats_.box_tests += large_.size();
    for (const std::uint32_t s : large_) {
        if (overlaps(region, boxes_[s])) out.push_back(ids_[s]);
    }
    const CellCoord lo = cell_of(region.min);
    CellCoord hi = cell_of(region.max);
    // On an axis where region.min > region.max, the boxes overlapping the region are those
    // holding all of [max, min], and max(region.min, box.min) = region.min lies in them.
    for (int a = 0; a < 3; ++a) hi[a] = std::max(hi[a], lo[a]);
    for_each_cell(lo, hi, [&](const CellCoord& key, const auto& slots) {
        ++stats_.leaves_visited;
        stats_.box_tests += slots.size();
        for (const std::uint32_t s : slots) {
            if (overlaps(region, boxes_[s]) && max_coord(lo, lo_[s]) == key) out.push_back(ids_[s]);
        }
    });
    if (coarse_) {
        coarse_->query_box(region, out);
        absorb(*coarse_);
    }
}

void UniformGrid::query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
    if (coarse_) {
        coarse_->query_point(p, out);
        absorb(*coarse_);
    }
    stats_.box_tests += large_.size();
    for (const std::uint32_t s : large_) {
        if (contains(boxes_[s], p)) out.push_back(ids_[s]);
    }
    ++stats_.nodes_visited;
    const auto* slots = cells_.find(cell_of(p));
    if (!slots) return;
    ++stats_.leaves_visited;
    stats_.box_tests += slots->size();
    for (const std::uint32_t s : *slots) {
        if (contains(boxes_[s], p)) out.push_back(ids_[s]);
    }
}

std::optional<RayHit> UniformGrid::ray_cast(const Ray& ray) const {
    // A few cells of every level first (a hit near the origin, on any level, then cuts every
    // other level's walk short), then the rest of the walks that did not finish.
    // The origin's cells come first: a ray starting in a box is then done with one lookup per
    // level.
    constexpr double kFirstSteps = 4;
    std::optional<RayHit> best;
    std::vector<const UniformGrid*> unfinished, walked;
    for (const UniformGrid* level = this; level; level = level->coarse_.get()) {
        if (!level->ray_walk(ray, best, true, 0)) unfinished.push_back(level);
        if (level != this) absorb(*level);
    }
    for (const UniformGrid* level : unfinished) {
        if (!level->ray_walk(ray, best, false, kFirstSteps)) walked.push_back(level);
        if (level != this) absorb(*level);
    }
    for (const UniformGrid* level : walked) {
        level->ray_walk(ray, best, false, -1);
        if (level != this) absorb(*level);
    }
    return best;
}

void UniformGrid::ray_cell(const Ray& ray, std::optional<RayHit>& best,
                           const std::vector<std::uint32_t>& slots) const {
    ++stats_.leaves_visited;
    for (const std::uint32_t s : slots) {
        ++stats_.box_tests;
        keep_closer(best, ids_[s], ray_box_entry(ray, boxes_[s]));
    }
}

bool UniformGrid::ray_linear(const Ray& ray, std::optional<RayHit>& best, double max_steps) const {
    if (max_steps >= 0) return false;
    for (const auto& [key, slots] : cells_.cells()) {
        ++stats_.nodes_visited;
        ray_cell(ray, best, slots);
    }
    return true;
}

bool UniformGrid::ray_walk(const Ray& ray, std::optional<RayHit>& best, bool first,
                           double max_steps) const {
    if (first) {
        for (const std::uint32_t s : large_) {
            ++stats_.box_tests;
            keep_closer(best, ids_[s], ray_box_entry(ray, boxes_[s]));
        }
    }
    if (small_count_ == 0 || !(ray.tmax >= 0)) return true;  // no hit for tmax < 0 or NaN

    // Only a box holding the origin enters at t = 0: ray_box_entry's slab bounds (lo - o) / d
    // have the sign of lo - o, unless the quotient underflows (a gap below |d| * 2^-149). So
    // the origin's cell(s) hold every box entered at 0, and after a hit at 0 nothing else can
    // tie. A walk with max_steps = 0 visits only them.
    if (max_steps == 0 || (best && best->t == 0)) {
        for (int a = 0; a < 3; ++a) {
            if (!std::isfinite(ray.origin[a]) || !std::isfinite(ray.dir[a]))
                return ray_linear(ray, best, max_steps);
        }
        CellCoord lo, hi;
        for (int a = 0; a < 3; ++a) {
            const double o = ray.origin[a], m = std::abs(double(ray.dir[a])) * 1e-44;
            lo[a] = clamp_floor((o - m - origin_[a]) * inv_cell_[a]);
            hi[a] = clamp_floor((o + m - origin_[a]) * inv_cell_[a]);
        }
        for_each_cell(lo, hi,
                      [&](const CellCoord&, const auto& slots) { ray_cell(ray, best, slots); });
        return !(max_steps == 0 && !(best && best->t == 0));
    }

    const std::optional<RaySpan> span = ray_span(ray);
    if (!span) return true;
    if (span->linear) return ray_linear(ray, best, max_steps);
    // Every box here enters at t0 or after: none can beat a hit before t0, nor tie it.
    if (best && double(best->t) < span->t0) return true;
    return ray_dda(ray, *span, best, max_steps);
}

std::optional<UniformGrid::RaySpan> UniformGrid::ray_span(const Ray& ray) const {
    // Clip [0, tmax] to the small boxes' bounds, grown by the rounding margin.
    RaySpan span;
    span.t1 = ray.tmax;
    for (int a = 0; a < 3; ++a) {
        const double o = ray.origin[a], d = ray.dir[a];
        if (!std::isfinite(o) || !std::isfinite(d)) return RaySpan{true};
        const double lo = small_bounds_.min[a], hi = small_bounds_.max[a];
        const double margin =
            kRayRelativeMargin * (std::abs(o) + std::max(std::abs(lo), std::abs(hi))) +
            std::numeric_limits<float>::min();
        span.g0[a] = (o - origin_[a]) * inv_cell_[a];
        span.gd[a] = d * inv_cell_[a];
        if (d == 0) {
            if (o < lo - margin || o > hi + margin) return std::nullopt;
            continue;
        }
        double ta = (lo - margin - o) / d, tb = (hi + margin - o) / d;
        if (ta > tb) std::swap(ta, tb);
        span.t0 = std::max(span.t0, ta);
        span.t1 = std::min(span.t1, tb);
    }
    if (!(span.t0 <= span.t1)) return std::nullopt;
    return span;
}

bool UniformGrid::ray_dda(const Ray& ray, const RaySpan& span, std::optional<RayHit>& best,
                          double max_steps) const {
    const bool bounded = max_steps >= 0;
    const double t0 = span.t0, t1 = span.t1;
    const std::array<double, 3>& g0 = span.g0;
    const std::array<double, 3>& gd = span.gd;
    // Rounding margin, in cells, at parameter t: the point ray(t) found by ray_box_entry may
    // be off the box by this much. Grows with t, so its value at t1 bounds the whole walk.
    // (An axis the ray does not move along contributes no t term: t1 may be infinite there.)
    const auto margin_cells = [&](int a, double t) {
        const double o = std::abs(double(ray.origin[a]));
        const double along = gd[a] == 0 ? 0 : std::abs(double(ray.dir[a])) * t;
        return (kRayRelativeMargin * (2 * o + along) +
                1e-12 * (std::abs(origin_[a]) + cell_size_[a])) *
               inv_cell_[a];
    };
    const auto grid_at = [&](int a, double t) { return gd[a] == 0 ? g0[a] : g0[a] + t * gd[a]; };
    double crossings = 0;
    for (int a = 0; a < 3; ++a) {
        if (!std::isfinite(margin_cells(a, t1))) return ray_linear(ray, best, max_steps);
        if (!(std::abs(grid_at(a, t0)) <= kMaxGridMagnitude) ||
            !(std::abs(grid_at(a, t1)) <= kMaxGridMagnitude)) {
            return ray_linear(ray, best, max_steps);
        }
        crossings += (gd[a] == 0 ? 0 : std::abs(gd[a]) * (t1 - t0)) + 1;
    }

    // 3D-DDA: segments [t, next crossing], each visiting the cells of the segment's bounds
    // widened by the margin (one cell, or two or four near an edge or corner; more far from
    // the grid origin, where for_each_cell passes over the empty blocks).
    std::array<double, 3> next{}, delta{};
    for (int a = 0; a < 3; ++a) {
        const double c = std::floor(grid_at(a, t0));
        if (gd[a] > 0) {
            next[a] = (c + 1 - g0[a]) / gd[a];
            delta[a] = 1 / gd[a];
        } else if (gd[a] < 0) {
            next[a] = (c - g0[a]) / gd[a];
            delta[a] = -1 / gd[a];
        } else {
            next[a] = std::numeric_limits<double>::infinity();
        }
    }
    // The walk stops (bounded) or turns linear once it has looked up more cells than the level
    // holds, or has taken more steps than its crossings allow (it stalled on rounding).
    const double stall_steps = 2 * crossings + 16;
    const double lookup_limit = double(cells_.size()) + 16;
    double lookups = 0;
    double t = t0;
    for (double step = 0;; ++step) {
        if (bounded && step >= max_steps) return false;
        if (step > stall_steps || lookups > lookup_limit) return ray_linear(ray, best, max_steps);
        double t_end = std::min({next[0], next[1], next[2], t1});
        if (t_end < t) t_end = t;
        CellCoord lo, hi;
        for (int a = 0; a < 3; ++a) {
            const double ga = grid_at(a, t), gb = grid_at(a, t_end);
            const double m = margin_cells(a, t_end);
            lo[a] = clamp_floor(std::min(ga, gb) - m);
            hi[a] = clamp_floor(std::max(ga, gb) + m);
        }
        const std::uint64_t visited = stats_.nodes_visited;
        for_each_cell(lo, hi,
                      [&](const CellCoord&, const auto& slots) { ray_cell(ray, best, slots); });
        lookups += double(stats_.nodes_visited - visited);
        if (t_end >= t1) break;
        t = t_end;
        // A later hit enters at t or after: it can only tie the best when best->t == t.
        if (best && double(best->t) < t) break;
        const int axis =
            static_cast<int>(std::min_element(next.begin(), next.end()) - next.begin());
        next[axis] += delta[axis];
    }
    return true;
}

void UniformGrid::linear_nearest(const Vec3& p, std::vector<Neighbor>& candidates) const {
    for (const auto& [key, slots] : cells_.cells()) {
        ++stats_.nodes_visited;
        ++stats_.leaves_visited;
        stats_.box_tests += slots.size();
        for (const std::uint32_t s : slots) {
            candidates.push_back(Neighbor{ids_[s], point_box_distance(p, boxes_[s])});
        }
    }
}

Status UniformGrid::nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
    out.clear();
    if (k == 0) return Status::success();
    // One candidate list for all levels, so that the near boxes of one level bound the search
    // of every other: shells around p on each level, then a region walk on the unsettled ones.
    std::vector<Neighbor> candidates;
    std::vector<const UniformGrid*> unsettled;
    for (const UniformGrid* level = this; level; level = level->coarse_.get()) {
        if (!level->nearest_shells(p, k, candidates, true)) unsettled.push_back(level);
        if (level != this) absorb(*level);
    }
    const auto sort_unique = [&]() {
        std::sort(candidates.begin(), candidates.end(), best_first::nearer);
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    };
    for (const UniformGrid* level : unsettled) {
        // Every box among the k nearest is within the k-th candidate's distance, once there
        // are k candidates; before that, the level's shells grow until they settle.
        sort_unique();
        if (candidates.size() >= k) {
            level->nearest_region(p, double(candidates[k - 1].distance), candidates);
        } else {
            level->nearest_shells(p, k, candidates, false);
        }
        if (level != this) absorb(*level);
    }
    sort_unique();
    const std::size_t count = std::min(k, candidates.size());
    out.insert(out.end(), candidates.begin(), candidates.begin() + std::ptrdiff_t(count));
    return Status::success();
}

bool UniformGrid::nearest_shells(const Vec3& p, std::size_t k, std::vector<Neighbor>& candidates,
                                 bool first) const {
    if (first) {
        stats_.box_tests += large_.size();
        for (const std::uint32_t s : large_) {
            candidates.push_back(Neighbor{ids_[s], point_box_distance(p, boxes_[s])});
        }
    }
    if (small_count_ == 0) return true;
    std::array<double, 3> g{};
    for (int a = 0; a < 3; ++a) {
        g[a] = (double(p[a]) - origin_[a]) * inv_cell_[a];
        if (!std::isfinite(g[a]) || !(std::abs(g[a]) < kMaxGridMagnitude)) {
            if (first) return false;
            linear_nearest(p, candidates);
            return true;
        }
    }
    const CellCoord c = cell_of(p);
    const CellCoord blo = cell_of(small_bounds_.min), bhi = cell_of(small_bounds_.max);
    std::int64_t r_all = 0;   // the shell radius that covers every occupied cell
    std::int64_t r_none = 0;  // the shells below this radius hold no occupied cell
    for (int a = 0; a < 3; ++a) {
        r_all = std::max({r_all, c[a] - blo[a], bhi[a] - c[a]});
        r_none = std::max({r_none, blo[a] - c[a], c[a] - bhi[a]});
    }
    const double min_cell = std::min({cell_size_[0], cell_size_[1], cell_size_[2]});
    std::size_t sorted = 0;  // candidates[0, sorted) are in order, without repeats
    // The first call stops at radius 1; a later one goes on, turning linear once its shells
    // hold more cells than the level has occupied cells.
    constexpr std::int64_t kFirstShells = 1;
    double enumerated = 0;
    for (std::int64_t r = 0; !first || r <= kFirstShells; ++r) {
        const double side = 2.0 * double(r) + 1;
        enumerated += side * side * side - (r == 0 ? 0 : (side - 2) * (side - 2) * (side - 2));
        if (!first && enumerated > double(cells_.size()) + 27) {
            linear_nearest(p, candidates);
            return true;
        }
        // The shell of cells at Chebyshev distance r from c.
        for (std::int64_t x = c[0] - r; x <= c[0] + r && r >= r_none; ++x) {
            for (std::int64_t y = c[1] - r; y <= c[1] + r; ++y) {
                const bool face = std::abs(x - c[0]) == r || std::abs(y - c[1]) == r;
                const std::int64_t dz = face || r == 0 ? 1 : 2 * r;
                for (std::int64_t z = c[2] - r; z <= c[2] + r; z += dz) {
                    ++stats_.nodes_visited;
                    const auto* slots = cells_.find({x, y, z});
                    if (!slots) continue;
                    ++stats_.leaves_visited;
                    stats_.box_tests += slots->size();
                    for (const std::uint32_t s : *slots) {
                        candidates.push_back(Neighbor{ids_[s], point_box_distance(p, boxes_[s])});
                    }
                }
            }
        }
        if (r >= r_all) return true;
        // A box not met yet lies wholly in cells at least r + 1 away, so more than r cells
        // from p on some axis.
        if (candidates.size() >= k) {
            // The shells' new candidates sorted alone and merged into the ones sorted before.
            const auto settled = candidates.begin() + std::ptrdiff_t(sorted);
            std::sort(settled, candidates.end(), best_first::nearer);
            std::inplace_merge(candidates.begin(), settled, candidates.end(), best_first::nearer);
            candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
            sorted = candidates.size();
            if (candidates.size() >= k &&
                double(candidates[k - 1].distance) < double(r) * min_cell * (1 - 1e-6)) {
                return true;
            }
        }
    }
    return false;
}

void UniformGrid::nearest_region(const Vec3& p, double bound,
                                 std::vector<Neighbor>& candidates) const {
    if (small_count_ == 0) return;
    if (!(bound < std::numeric_limits<double>::infinity())) {
        linear_nearest(p, candidates);
        return;
    }
    // A box within `bound` of p meets the cube p +- bound on every axis; the cube is widened
    // by the rounding of point_box_distance (float, relative to the coordinates).
    CellCoord lo, hi;
    for (int a = 0; a < 3; ++a) {
        const double x = p[a];
        const double margin = 1e-5 * (bound + std::abs(x) + std::abs(origin_[a])) +
                              double(std::numeric_limits<float>::min());
        const double glo = (x - bound - margin - origin_[a]) * inv_cell_[a];
        const double ghi = (x + bound + margin - origin_[a]) * inv_cell_[a];
        if (!std::isfinite(glo) || !std::isfinite(ghi)) {
            linear_nearest(p, candidates);
            return;
        }
        lo[a] = std::max(clamp_floor(glo), cell_of(small_bounds_.min)[a]);
        hi[a] = std::min(clamp_floor(ghi), cell_of(small_bounds_.max)[a]);
    }
    for_each_cell(lo, hi, [&](const CellCoord&, const auto& slots) {
        ++stats_.leaves_visited;
        stats_.box_tests += slots.size();
        for (const std::uint32_t s : slots) {
            candidates.push_back(Neighbor{ids_[s], point_box_distance(p, boxes_[s])});
        }
    });
}

std::size_t UniformGrid::size() const {
    return boxes_.size() + coarse_count();
}

Status UniformGrid::validate() const {
    const std::size_t n = boxes_.size();
    if (ids_.size() != n || lo_.size() != n || hi_.size() != n || large_pos_.size() != n ||
        slot_of_.size() != n) {
        return broken("per-box arrays and the id map differ in size");
    }
    std::size_t small = 0;
    std::vector<std::uint64_t> entries(n, 0);
    for (std::uint32_t s = 0; s < n; ++s) {
        const std::uint32_t id = ids_[s];
        const auto it = slot_of_.find(id);
        if (it == slot_of_.end() || it->second != s) {
            return broken("id " + std::to_string(id) + " does not map to its slot", id);
        }
        if (Status st = validate_box(boxes_[s], id); !st) return st;
        if (lo_[s] != cell_of(boxes_[s].min) || hi_[s] != cell_of(boxes_[s].max)) {
            return broken("box " + std::to_string(id) + " has a stale cell range", id);
        }
        const bool large = span_cells(s) > double(config_.max_cells_per_box);
        if (large != (large_pos_[s] != kNotLarge)) {
            return broken("box " + std::to_string(id) + " is in the wrong list", id);
        }
        if (large && depth_ < kMaxDepth) {
            return broken("box " + std::to_string(id) + " is too large for level " +
                              std::to_string(depth_) + " but was not moved to a coarser one",
                          id);
        }
        if (depth_ < kMaxDepth && !in_class(boxes_[s], class_side_)) {
            return broken("box " + std::to_string(id) + " is outside the size class of level " +
                              std::to_string(depth_),
                          id);
        }
        if (coarse_ && coarse_->contains_id(id)) {
            return broken("id " + std::to_string(id) + " is in two levels", id);
        }
        if (large && (large_pos_[s] >= large_.size() || large_[large_pos_[s]] != s)) {
            return broken("box " + std::to_string(id) + " has a wrong large-list index", id);
        }
        if (!large) {
            ++small;
            const Box& b = boxes_[s];
            if (!has_small_bounds_ || merge(small_bounds_, b) != small_bounds_) {
                return broken("box " + std::to_string(id) + " is outside the bounds", id);
            }
        }
    }
    if (small != small_count_ || small + large_.size() != n) {
        return broken("small and large counts disagree with the boxes");
    }
    std::vector<std::uint32_t> sorted;  // one cell's slots in order (one buffer for every cell)
    for (const auto& [key, slots] : cells_.cells()) {
        if (slots.empty()) return broken("an empty cell is stored");
        sorted.assign(slots.begin(), slots.end());
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
            return broken("a box is entered twice in one cell");
        }
        for (const std::uint32_t s : slots) {
            if (s >= n || large_pos_[s] != kNotLarge) {
                return broken("a cell holds a slot that is not a small box");
            }
            for (int a = 0; a < 3; ++a) {
                if (key[a] < lo_[s][a] || key[a] > hi_[s][a]) {
                    return broken(
                        "box " + std::to_string(ids_[s]) + " is in a cell outside its range",
                        ids_[s]);
                }
            }
            ++entries[s];
        }
    }
    for (std::uint32_t s = 0; s < n; ++s) {
        if (large_pos_[s] == kNotLarge && double(entries[s]) != span_cells(s)) {
            return broken(
                "box " + std::to_string(ids_[s]) + " is missing from some cells it overlaps",
                ids_[s]);
        }
    }
    if (!coarse_) return Status::success();
    if (coarse_->depth_ != depth_ + 1) return broken("a coarser level has the wrong depth");
    for (int a = 0; a < 3; ++a) {
        if (!(coarse_->cell_size_[a] >= kLevelGrowth * cell_size_[a])) {
            return broken("level " + std::to_string(depth_ + 1) + " has cells too small");
        }
    }
    for (std::uint32_t s = 0; s < coarse_->boxes_.size(); ++s) {
        if (fits(coarse_->boxes_[s])) {
            const std::uint32_t id = coarse_->ids_[s];
            return broken("box " + std::to_string(id) + " fits level " + std::to_string(depth_) +
                              " but is kept in a coarser one",
                          id);
        }
    }
    return coarse_->validate();
}

}  // namespace broadphase
