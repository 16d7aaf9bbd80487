// What both octrees (octree.hpp, loose_octree.hpp) keep around their trees: every box by caller
// id, and the boxes their root does not take in an outside list tested linearly, which makes
// the whole tree be rebuilt around every box once it outgrows 16 + a quarter of the tree's
// boxes (list_sweep.hpp: outside_overflows). insert, remove and move are written here once; each
// octree writes its tree: place_all (a fresh tree over all entries, around the robust root or the
// whole scene), tree_insert and tree_remove (one box).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "list_sweep.hpp"

namespace broadphase::detail {

/// What a node of either octree holds besides its bounds: its 8 children, consecutive from
/// first_child (child c the upper half on axis a iff bit a of c is set), or none (a leaf); and
/// a list of entries, indexed when crowded.
template <class Entry>
struct OctreeNode {
    static constexpr std::uint32_t kNoChild = 0xffffffffu;

    std::uint32_t first_child = kNoChild;  ///< index of child 0, or kNoChild for a leaf
    std::vector<Entry> entries;
    SweepIndex index;  ///< order of `entries` when crowded
    bool is_leaf() const { return first_child == kNoChild; }
};

/// The id map and outside list of an octree whose stored entries are `Entry` (a `box` and an
/// `id`, default-constructible).
template <class Entry>
class OctreeBase : public Structure {
public:
    bool is_dynamic() const override { return true; }
    /// Into the tree when tree_insert takes the box, else into the outside list (rebuilding the
    /// tree once that list overflows). Rejects an invalid box or an id in use.
    Status insert(std::uint32_t id, const Box& box) override {
        if (Status s = validate_box(box, id); !s) return s;
        if (items_.count(id)) return invalid("insert: id " + std::to_string(id) + " is in use", id);
        Entry entry{};
        entry.box = box;
        entry.id = id;
        if (tree_insert(entry)) {
            items_.emplace(id, Item{box, false});
            ++inside_count_;
            return Status::success();
        }
        items_.emplace(id, Item{box, true});
        outside_.push_back(entry);
        if (outside_overflows(outside_.size(), inside_count_)) {
            rebuild(entries_by_id<Entry>(items_));
        }
        return Status::success();
    }
    /// Rejects an absent id.
    Status remove(std::uint32_t id) override {
        auto it = items_.find(id);
        if (it == items_.end()) {
            return invalid("remove: id " + std::to_string(id) + " is absent", id);
        }
        if (it->second.outside) {
            erase_by_id(outside_, id);
        } else {
            tree_remove(id, it->second.box);
            --inside_count_;
        }
        items_.erase(it);
        return Status::success();
    }
    /// remove, then insert; rejects an invalid box or an absent id.
    Status move(std::uint32_t id, const Box& box) override {
        if (Status s = validate_box(box, id); !s) return s;
        if (!items_.count(id)) return invalid("move: id " + std::to_string(id) + " is absent", id);
        if (Status s = remove(id); !s) return s;
        return insert(id, box);
    }

    /// Boxes not inside the root, tested linearly by every query.
    std::span<const Entry> outside() const { return outside_; }

protected:
    struct Item {
        Box box;
        bool outside = false;  ///< in the outside list, not in the tree
    };

    /// Forgets every box (the derived class empties its tree).
    void clear_boxes() {
        outside_.clear();
        items_.clear();
        inside_count_ = 0;
    }

    /// build()'s common part once its Config is checked: checks the boxes, then places boxes[i]
    /// with id i.
    Status build_from(std::span<const Box> boxes) {
        if (Status s = validate_boxes(boxes); !s) return s;
        rebuild(numbered_entries<Entry>(boxes));
        return Status::success();
    }

    /// A fresh tree over `entries` around the robust root; around the whole scene when
    /// trimming leaves out too many boxes (large against the core).
    void rebuild(const std::vector<Entry>& entries) {
        place_all(entries, true);
        if (outside_overflows(outside_.size(), inside_count_)) place_all(entries, false);
    }

    /// ray_cast's start: the closest hit among the outside boxes (one box test each).
    std::optional<RayHit> outside_ray_hit(const Ray& ray) const {
        std::optional<RayHit> best;
        stats_.box_tests += outside_.size();
        for (const Entry& e : outside_) keep_closer(best, e.id, ray_box_entry(ray, e.box));
        return best;
    }

    /// validate()'s check of the outside list: the counts add up, and each outside entry is its
    /// id's current box, marked outside, and not one fits_root(box) would take into the tree.
    template <class FitsRoot>
    Status validate_outside(FitsRoot&& fits_root) const {
        if (inside_count_ + outside_.size() != items_.size()) {
            return broken("counts of tree and outside boxes disagree");
        }
        for (const Entry& e : outside_) {
            auto it = items_.find(e.id);
            if (it == items_.end() || !it->second.outside || !(it->second.box == e.box)) {
                return broken("outside list holds a stale or unknown id", e.id);
            }
            if (fits_root(e.box)) return broken("an outside box fits the root", e.id);
        }
        return Status::success();
    }

    std::vector<Entry> outside_;
    std::unordered_map<std::uint32_t, Item> items_;
    std::size_t inside_count_ = 0;  ///< boxes in the tree

private:
    /// Empties everything, then builds the tree over the entries that fit the root (robust or
    /// the whole scene's, see rebuild) and fills items_, outside_ and inside_count_.
    virtual void place_all(const std::vector<Entry>& entries, bool robust) = 0;
    /// Puts `entry` in the tree and returns true, or returns false when it does not fit the root.
    virtual bool tree_insert(Entry entry) = 0;
    /// Takes the box `box` with `id` out of the tree, where tree_insert put it.
    virtual void tree_remove(std::uint32_t id, const Box& box) = 0;
};

}  // namespace broadphase::detail
