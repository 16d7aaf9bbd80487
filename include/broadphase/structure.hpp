// The one interface behind which every CPU broadphase structure sits, brute force (the
// oracle) included, and the factory that makes them by method name.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

/// A work counter that concurrent queries may bump without a data race: a relaxed atomic load
/// and store, as cheap as a plain increment; bumps that race may be lost, which costs a
/// statistic, never memory safety. Reads as a std::uint64_t.
class WorkCounter {
public:
    WorkCounter(std::uint64_t value = 0) : value_(value) {}
    WorkCounter(const WorkCounter& other) : value_(other.get()) {}
    WorkCounter& operator=(const WorkCounter& other) {
        value_.store(other.get(), std::memory_order_relaxed);
        return *this;
    }
    operator std::uint64_t() const { return get(); }
    std::uint64_t get() const { return value_.load(std::memory_order_relaxed); }
    WorkCounter& operator++() { return *this += 1; }
    WorkCounter& operator+=(std::uint64_t n) {
        value_.store(get() + n, std::memory_order_relaxed);
        return *this;
    }

private:
    std::atomic<std::uint64_t> value_;
};

/// Work counters of the queries since the last reset_stats().
struct QueryStats {
    WorkCounter nodes_visited = 0;   ///< internal nodes / cells entered
    WorkCounter leaves_visited = 0;  ///< leaves / buckets whose boxes were tested
    WorkCounter box_tests = 0;       ///< box-versus-box (or ray/point) tests on input boxes
};

/// One of the k nearest boxes to a point: distance from the point to the closed box (0 inside).
struct Neighbor {
    std::uint32_t id = 0;
    float distance = 0;
    friend bool operator==(const Neighbor&, const Neighbor&) = default;
};

/// A CPU spatial structure over a set of boxes whose ids are their input indices.
/// Every query reports exactly what brute force reports; only the order may differ.
class Structure {
public:
    virtual ~Structure() = default;

    /// The method name (`brute_force`, `sweep_and_prune`, `lbvh`, ...).
    virtual std::string_view name() const = 0;

    /// Builds over `boxes` (copied). Rejects NaN, infinity and min > max, naming the box.
    virtual Status build(std::span<const Box> boxes) = 0;

    /// Appends every overlapping pair once, i < j, in no particular order.
    virtual void self_pairs(std::vector<Pair>& out) const = 0;

    /// Appends the id of every box overlapping the closed region, in no particular order.
    /// Precondition: the region is a valid box (min <= max); otherwise the result is unspecified.
    virtual void query_box(const Box& region, std::vector<std::uint32_t>& out) const = 0;

    /// Appends the id of every box containing point p, in no particular order. By default the
    /// box query of the degenerate region [p, p] (a closed box contains p exactly when it
    /// overlaps that region); structures with a cheaper point search override it.
    virtual void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const {
        query_box(Box{p, p}, out);
    }

    /// Closest hit along the ray: smallest entry t in [0, tmax], ties to the smallest id.
    virtual std::optional<RayHit> ray_cast(const Ray& ray) const = 0;

    /// Appends a superset of the ids of the boxes that the segment of `ray` (t in [0, tmax],
    /// tmax finite) touches once each box b is grown to [b.min + lo, b.max + hi] (lo <= 0 <=
    /// hi: a swept shape's extent), each id once; the caller tests each candidate exactly.
    /// By default the box query of the segment's bounds grown by -hi and -lo; the dynamic AABB
    /// tree walks its nodes along the ray instead (one walk per ray, however long).
    virtual void query_ray_candidates(const Ray& ray, const Vec3& lo, const Vec3& hi,
                                      std::vector<std::uint32_t>& out) const;

    /// Replaces `out` with the k boxes nearest to p (point_box_distance), nearest first, ties
    /// to the smaller id; fewer when the structure holds fewer. Structures that cannot answer
    /// return ErrorCode::unsupported.
    virtual Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const {
        (void)p, (void)k, (void)out;
        return unsupported("nearest");
    }

    /// Dynamic structures (is_dynamic() true) also insert, remove and move boxes by id. Ids
    /// are chosen by the caller: insert needs an unused id, remove and move a present one.
    /// After build(boxes) the ids are 0 .. boxes.size()-1. Static structures return
    /// ErrorCode::unsupported.
    virtual bool is_dynamic() const { return false; }
    virtual Status insert(std::uint32_t id, const Box& box) {
        (void)id, (void)box;
        return unsupported("insert");
    }
    virtual Status remove(std::uint32_t id) {
        (void)id;
        return unsupported("remove");
    }
    virtual Status move(std::uint32_t id, const Box& box) {
        (void)id, (void)box;
        return unsupported("move");
    }

    /// Replaces box i by boxes[i] for every id the structure holds (boxes.size() == size(), the
    /// ids of build: 0 .. size()-1), keeping a tree's topology and recomputing its bounds
    /// bottom-up in O(n), as FCL's update() does; structures without a cheaper way rebuild (this
    /// default calls build(boxes)). A refitted tree decays when boxes move far from where it
    /// was built.
    virtual Status refit_all(std::span<const Box> boxes) { return build(boxes); }

    /// Sets the collision filter of id `id` (the default Filter until set). Filters belong to
    /// ids, not to boxes: build, insert and remove leave them as they are. self_pairs reports
    /// a pair only when should_collide(filter(i), filter(j)), tested where the pair is found,
    /// so that a filtered pair costs no output. Queries (box, point, ray, nearest) ignore them.
    void set_filter(std::uint32_t id, const Filter& filter);
    /// The filter of `id`: the last set_filter's, or the default Filter.
    Filter filter(std::uint32_t id) const { return id < filters_.size() ? filters_[id] : Filter{}; }
    /// True when the filters of ids a and b let their pair be reported (should_collide).
    bool collides(std::uint32_t a, std::uint32_t b) const {
        return !filtered_ || should_collide(filter(a), filter(b));
    }
    /// Every id back to the default Filter.
    void clear_filters() {
        filters_.clear();
        filtered_ = false;
    }

    /// Checks the structure's invariants; an error (invariant_violated; invalid_box for a stored
    /// box that is not valid) says which one failed and where.
    virtual Status validate() const = 0;

    /// Number of boxes built over.
    virtual std::size_t size() const = 0;

    const QueryStats& stats() const { return stats_; }
    void reset_stats() const { stats_ = {}; }

protected:
    Error unsupported(const char* what) const {
        return Error{ErrorCode::unsupported, std::string(name()) + " does not support " + what};
    }
    /// The invalid_argument error "<name>: <what>" for a bad configuration or a bad argument
    /// (options, build() input other than boxes), naming the offending box where there is one.
    Error invalid(const std::string& what, std::optional<std::size_t> box = std::nullopt) const {
        return Error{ErrorCode::invalid_argument, std::string(name()) + ": " + what, box};
    }
    /// The invariant_violated error "<name>: <what>" for an invariant that validate() found
    /// broken (a bug in the library, not in the input), naming the offending box where there is
    /// one.
    Error broken(const std::string& what, std::optional<std::size_t> box = std::nullopt) const {
        return Error{ErrorCode::invariant_violated, std::string(name()) + ": " + what, box};
    }
    /// The opening check of a static structure's validate(): slot s holds box boxes[s] with id
    /// ids[s], the ids are a permutation of 0 .. boxes.size()-1, and every box is valid.
    Status validate_slots(std::span<const Box> boxes, std::span<const std::uint32_t> ids) const;
    /// The free-list check of a node pool's validate() (dynamic_aabb_tree, rtree): from `head`,
    /// following next(i) until -1, every node must lie in the pool of `total` nodes and be
    /// is_free(i), and the list must end within `total` steps. The number of free nodes, or the
    /// first error found.
    template <class Next, class IsFree>
    Result<std::int64_t> count_free_list(std::int32_t head, std::int64_t total, Next&& next,
                                         IsFree&& is_free) const {
        std::int64_t count = 0;
        for (std::int32_t i = head; i != -1; i = next(i)) {
            if (i < 0 || i >= total) return broken("free list points outside the pool");
            if (!is_free(i))
                return broken("node " + std::to_string(i) + " on the free list is in use");
            if (++count > total) return broken("free list has a cycle");
        }
        return count;
    }
    /// The walk of a node pool's tree in validate() (dynamic_aabb_tree, rtree) from `root`, in
    /// a pool of `total` nodes of which count_free_list found `free_count` free: each node
    /// popped must be within `total` steps (else the links form a cycle) and not is_free(i);
    /// then check(i, stack) checks it and pushes its children. At the end every node must have
    /// been reached or be free. The first error found, if any.
    template <class IsFree, class Check>
    Status walk_pool(std::int32_t root, std::int64_t total, std::int64_t free_count,
                     IsFree&& is_free, Check&& check) const {
        std::int64_t reached = 0;
        std::vector<std::int32_t> stack{root};
        while (!stack.empty()) {
            const std::int32_t i = stack.back();
            stack.pop_back();
            if (++reached > total) return broken("tree links form a cycle");
            if (is_free(i)) return broken("node " + std::to_string(i) + " is free but linked");
            if (Status s = check(i, stack); !s) return s;
        }
        if (reached + free_count != total) return broken("nodes leaked from the pool");
        return Status::success();
    }
    /// The walk of a static tree's validate() over an array of `node_count` nodes, from the
    /// expectations in `stack` (an Expect names its node in `node`): each one popped must name a
    /// node in range that no earlier one named, then check(e, where, stack) (where: "node <i>: ")
    /// checks that node against e and pushes its children's expectations. At the end every node
    /// must have been reached. The first error found is returned.
    template <class Expect, class Check>
    Status walk_tree(std::vector<Expect> stack, std::size_t node_count, Check&& check) const {
        std::size_t reached = 0;
        while (!stack.empty()) {
            const Expect e = stack.back();
            stack.pop_back();
            const std::string where = "node " + std::to_string(e.node) + ": ";
            if (e.node >= node_count) return broken(where + "index out of range");
            if (++reached > node_count) return broken(where + "reached twice (not a tree)");
            if (Status s = check(e, where, stack); !s) return s;
        }
        if (reached != node_count) return broken("nodes unreachable from the root");
        return Status::success();
    }
    /// Appends the pair of ids a and b (in either order) as Pair{min, max} when their filters
    /// allow it; the one way every self_pairs reports a pair.
    void report_pair(std::vector<Pair>& out, std::uint32_t a, std::uint32_t b) const {
        if (!collides(a, b)) return;
        out.push_back(a < b ? Pair{a, b} : Pair{b, a});
    }
    mutable QueryStats stats_;

private:
    std::vector<Filter> filters_;  // by id; ids past the end have the default filter
    bool filtered_ = false;        // some id has a filter other than the default
};

/// Declares, inside a class derived from Structure (written `BROADPHASE_STRUCTURE_OVERRIDES;`),
/// the overrides every structure defines in its own .cpp: build, self_pairs, query_box, ray_cast,
/// validate and size. Each structure's header says above it what its versions do; name(),
/// nearest() and query_point(), which not every structure writes the same way or has at all,
/// are written out beside it.
// clang-format off
#define BROADPHASE_STRUCTURE_OVERRIDES                                                  \
    Status build(std::span<const Box> boxes) override;                                  \
    void self_pairs(std::vector<Pair>& out) const override;                             \
    void query_box(const Box& region, std::vector<std::uint32_t>& out) const override;  \
    std::optional<RayHit> ray_cast(const Ray& ray) const override;                      \
    Status validate() const override;                                                   \
    std::size_t size() const override

/// Declares, inside a class derived from Structure (written `BROADPHASE_DYNAMIC_OVERRIDES;`),
/// the overrides of a dynamic structure: is_dynamic() (true), and insert, remove and move,
/// defined in the structure's .cpp.
#define BROADPHASE_DYNAMIC_OVERRIDES                                                    \
    bool is_dynamic() const override { return true; }                                   \
    Status insert(std::uint32_t id, const Box& box) override;                           \
    Status remove(std::uint32_t id) override;                                           \
    Status move(std::uint32_t id, const Box& box) override
// clang-format on

/// Names of the CPU methods make_structure knows, in a stable order.
std::vector<std::string_view> cpu_method_names();

/// Makes an empty structure for `method`, or an error naming the unknown method.
Result<std::unique_ptr<Structure>> make_structure(std::string_view method);

/// Canonical pairs of a built structure: self_pairs sorted ascending.
std::vector<Pair> sorted_pairs(const Structure& structure);

/// structure.build(boxes), with running out of memory returned as ErrorCode::out_of_memory
/// (naming the method and the box count) instead of thrown.
Status build_structure(Structure& structure, std::span<const Box> boxes);

/// sorted_pairs(structure), with running out of memory returned as ErrorCode::out_of_memory
/// (naming the method, the box count and the pairs found so far) instead of thrown.
Result<std::vector<Pair>> find_sorted_pairs(const Structure& structure);

/// Builds `method` over `boxes` and returns its canonical (sorted) pairs; running out of
/// memory is an out_of_memory error, never an exception.
Result<std::vector<Pair>> find_pairs_cpu(std::string_view method, std::span<const Box> boxes);

/// The indices of `boxes` in the order of their centres' 30-bit Morton codes (those of the
/// LBVH's leaves; ties by index): neighbours come near each other, so that objects registered
/// in this order keep their data, and a structure's ids, near their neighbours' in memory.
std::vector<std::uint32_t> morton_order(std::span<const Box> boxes);

}  // namespace broadphase
