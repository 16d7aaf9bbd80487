// PairTracker (broadphase/pair_tracker.hpp): the pairs of a changing world from its changed
// bodies alone, after Box2D v3's broadphase (E. Catto: fat boxes, a move buffer whose bodies
// query the tree, contacts that live while their fat boxes overlap) and btDbvtBroadphase's
// collideTV (a leaf that left its volume is collided with the tree at once).
//
// An update runs in three phases, so that each body's work is done once however many of its
// neighbours changed too:
// 1. apply: each changed body takes its new box and filter; a body that left its fat box (or
//    is new, or changed its filter) gets a new fat box, which the structure takes;
// 2. requery: each body with a new fat box queries the structure with it; its candidates
//    become exactly the bodies found there whose filters allow the pair (new ones are made,
//    the others dropped, ending their pair);
// 3. test: each candidate of a changed body is tested once on the tight boxes.
// Candidates live in a pool, each linked from both bodies' lists by position (removal is a
// swap with the list's last); the current pairs are a dense array, each candidate knowing its
// slot there, so that pairs() is a span and a pair begins or ends in O(1).
#include "broadphase/pair_tracker.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "broadphase/structure.hpp"
#include "dynamic_aabb_tree.hpp"

namespace broadphase {
namespace {

constexpr std::uint32_t kNoBody = 0xFFFFFFFFu;
constexpr std::size_t kTrackerSample = 1024;
/// The smallest batch that fills an empty tracker by one build of the structure.
constexpr std::size_t kBulkFill = 64;

/// One body by id. `filter` is that of its last update (its box is in Impl::boxes, apart, for
/// the candidate tests' locality), `next_*` the pending ones.
struct TrackedBody {
    Box next_box, fat;
    Filter filter, next_filter;
    bool present = false;       // inserted and not removed (pending or not)
    bool in_structure = false;  // applied: the structure holds its fat box
    bool is_static = false, next_static = false;
    bool changed = false;  // in the pending list
    bool reborn = false;   // removed and inserted again since the last update
    bool filter_changed = false;
};

/// A pair of bodies whose fat boxes overlap: what the test of every candidate reads (12 bytes;
/// their positions in the bodies' lists, which only a candidate made or dropped reads, are
/// apart, in CandidateLinks under the same index).
struct TrackedCandidate {
    std::uint32_t a = kNoBody, b = kNoBody;  // a < b
    std::uint32_t pair = kNoBody;            // slot in the pair array while the boxes touch
};

/// Where a candidate is in its bodies' candidate lists.
struct CandidateLinks {
    std::uint32_t pos_a = 0, pos_b = 0;
};

/// One entry of a body's candidate list: the other body and the candidate, whose top bit
/// mirrors whether the pair is current, so that testing a candidate whose state does not
/// change reads the list and the other body's box alone. The test of every candidate leaves
/// the mirror behind (Impl::stale_marks) for the next test through the lists to bring up to
/// date: writing it there cost two lists' reads per pair that began or ended, 3 of the 11 ms
/// of that test in FCL's 100,000-object world.
struct TrackedLink {
    std::uint32_t other;
    std::uint32_t cand;  // kCurrentPair | index while the pair is current
};
constexpr std::uint32_t kCurrentPair = 0x80000000u;

/// A link's `cand` field for candidate c, its pair current or not.
constexpr std::uint32_t link_value(std::uint32_t c, bool current) {
    return current ? (c | kCurrentPair) : c;
}

Box clamp_fat_box(double lo[3], double hi[3]) {
    Box b;
    for (int axis = 0; axis < 3; ++axis) {
        b.min[axis] = float(std::clamp(lo[axis], -double(FLT_MAX), double(FLT_MAX)));
        b.max[axis] = float(std::clamp(hi[axis], -double(FLT_MAX), double(FLT_MAX)));
    }
    return b;
}

/// overlaps(a, b) with all six comparisons made: a candidate's test, whose answer a branch
/// would mispredict about as often as pairs begin and end among the candidates.
inline bool overlaps_flat(const Box& a, const Box& b) {
    return (a.min.x <= b.max.x) & (b.min.x <= a.max.x) & (a.min.y <= b.max.y) &
           (b.min.y <= a.max.y) & (a.min.z <= b.max.z) & (b.min.z <= a.max.z);
}

/// overlaps(a, b) for the bulk test of every candidate: on x86-64 two four-lane compares
/// (each box read as its min with max.x, and its max with min.z, rotated into line), else
/// overlaps_flat. Boxes are finite here (the tracker takes no other).
inline bool overlaps_packed(const Box& a, const Box& b) {
#if defined(__SSE2__)
    static_assert(sizeof(Box) == 24);
    const float* pa = &a.min.x;
    const float* pb = &b.min.x;
    const __m128 a_min = _mm_loadu_ps(pa);  // min.x min.y min.z max.x
    const __m128 b_min = _mm_loadu_ps(pb);
    // min.z max.x max.y max.z, rotated to max.x max.y max.z min.z
    const __m128 a_max = _mm_shuffle_ps(_mm_loadu_ps(pa + 2), _mm_loadu_ps(pa + 2), 0x39);
    const __m128 b_max = _mm_shuffle_ps(_mm_loadu_ps(pb + 2), _mm_loadu_ps(pb + 2), 0x39);
    const __m128 ok = _mm_and_ps(_mm_cmple_ps(a_min, b_max), _mm_cmple_ps(b_min, a_max));
    return (_mm_movemask_ps(ok) & 7) == 7;
#else
    return overlaps_flat(a, b);
#endif
}

bool valid_tracked_box(const Box& b) {
    for (int axis = 0; axis < 3; ++axis)
        if (!std::isfinite(b.min[axis]) || !std::isfinite(b.max[axis]) ||
            !(b.min[axis] <= b.max[axis]))
            return false;
    return true;
}

}  // namespace

struct PairTracker::Impl {
    Config config;
    std::unique_ptr<Structure> structure;
    DynamicAabbTree* tree = nullptr;  // the structure, when it is the dynamic tree
    bool dynamic = true;

    std::vector<TrackedBody> bodies;
    std::vector<Box> boxes;  // by id: the box of the body's last update
    std::size_t present = 0;
    std::vector<std::uint32_t> pending;  // ids with `changed` set (stale entries skipped)
    std::size_t pending_count = 0;       // ids with `changed` set

    std::vector<TrackedCandidate> cands;
    std::vector<CandidateLinks> cand_links;  // by candidate
    std::vector<std::uint32_t> free_cands;
    std::vector<std::vector<TrackedLink>> adj;  // by id: its candidates
    std::vector<Pair> pairs;
    std::vector<std::uint32_t> pair_cand;  // by pair slot: its candidate
    // Candidates whose pair began or ended while marks were deferred (test_all): their links'
    // top bits may be stale until flush_marks().
    std::vector<std::uint32_t> stale_marks;
    bool defer_marks = false;

    // Requery marks, by id: 2e = a partner of the body being requeried, 2e + 1 = found again.
    std::vector<std::uint32_t> mark;
    std::vector<std::uint32_t> changed_in;  // by id: the last update of all that changed it
    std::uint32_t update_epoch = 0;
    std::uint32_t epoch = 0;
    std::vector<std::uint32_t> found, requery, scratch;
    std::vector<Box> requery_boxes;  // the fat boxes of `requery`, queried together
    std::vector<std::pair<std::uint32_t, std::uint32_t>> found_ranges;

    // Static structures: built over the boxes (not fat ones) at each update with changes,
    // their pairs found whole and compared with the last ones; structure id -> body id.
    std::vector<std::uint32_t> id_of_built;
    std::vector<Pair> found_pairs, next_pairs, diff_began, diff_ended;

    // The typical extent: the lower median of the first kTrackerSample boxes' mean extents.
    std::vector<float> sample;
    float typical = 0;

    PairTrackerStats stats;

    Error invalid(const std::string& what, std::optional<std::size_t> id = std::nullopt) const {
        return Error{ErrorCode::invalid_argument, "pair tracker: " + what, id};
    }

    void grow(std::uint32_t id) {
        if (id < bodies.size()) return;
        const std::size_t n = std::max<std::size_t>(id + 1, bodies.size() * 3 / 2);
        bodies.resize(n);
        boxes.resize(n);
        adj.resize(n);
        mark.resize(n, 0);
        changed_in.resize(n, 0);
    }

    void note_change(std::uint32_t id) {
        TrackedBody& b = bodies[id];
        if (b.changed) return;
        b.changed = true;
        ++pending_count;
        pending.push_back(id);
    }

    void sample_extent(const Box& box) {
        if (sample.size() >= kTrackerSample) return;
        sample.push_back(
            ((box.max.x - box.min.x) + (box.max.y - box.min.y) + (box.max.z - box.min.z)) / 3);
        const std::size_t n = sample.size();
        if ((n & (n - 1)) != 0 && n != kTrackerSample) return;  // re-estimated at 1, 2, 4, ...
        std::vector<float> sorted = sample;
        std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t((n - 1) / 2),
                         sorted.end());
        typical = sorted[(n - 1) / 2];
    }

    /// The fat box of `box` after a displacement `d` (centre to centre).
    Box fatten(const Box& box, const double d[3]) const {
        double lo[3], hi[3];
        const double reach = 4.0 * typical;
        const double speed = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        // One margin on every axis, from the box's largest extent: a body moves as far across
        // its thin axis as along its long ones, and a margin cut to a plank's thickness there
        // let it out every few steps (FCL's log-normal boxes under a random walk: 1,932
        // requeries per step at 100,000 with the margin per axis, 716 with one per body, for
        // a third more candidate tests). Between a quarter and all of the typical extent: a
        // small box moving as fast as the others does not leave its fat box at every step,
        // and one world-sized box does not make its fat box huge.
        const double largest =
            std::max({double(box.max.x) - double(box.min.x), double(box.max.y) - double(box.min.y),
                      double(box.max.z) - double(box.min.z)});
        const double size = std::clamp(largest, 0.25 * double(typical), double(typical));
        double m = config.margin * size;
        m = std::max(m, 0.5 * double(config.hysteresis));
        // The speed margin reaches half that size at most: small boxes packed densely (the
        // multiscale scene) grown by several times their size would each meet dozens of
        // candidates, costing more tests than the requeries it saves.
        m = std::max(m, std::min(double(config.speed_margin) * speed, 0.5 * size));
        for (int axis = 0; axis < 3; ++axis) {
            lo[axis] = double(box.min[axis]) - m;
            hi[axis] = double(box.max[axis]) + m;
            const double s = std::clamp(config.prediction * d[axis], -reach, reach);
            if (s < 0) lo[axis] += s;
            if (s > 0) hi[axis] += s;
        }
        return clamp_fat_box(lo, hi);
    }

    bool allowed(std::uint32_t i, std::uint32_t j) const {
        const TrackedBody& a = bodies[i];
        const TrackedBody& b = bodies[j];
        if (a.is_static && b.is_static) return false;
        return should_collide(a.filter, b.filter);
    }

    /// Whether bodies i and j are a pair now: their boxes overlap, or, with hysteresis and a
    /// pair already (`current`), are at most h apart on every axis.
    bool touching(std::uint32_t i, std::uint32_t j, bool current) const {
        const Box& a = boxes[i];
        const Box& b = boxes[j];
        if (!current || config.hysteresis <= 0) return overlaps_packed(a, b);
        const float h = config.hysteresis;
        for (int axis = 0; axis < 3; ++axis)
            if (b.min[axis] - a.max[axis] > h || a.min[axis] - b.max[axis] > h) return false;
        return true;
    }

    // ---- candidates and pairs ----

    /// Sets the pair bit of candidate c in both its links (or notes it for flush_marks()).
    void mark_links(std::uint32_t c, bool current) {
        if (defer_marks) {
            stale_marks.push_back(c);
            return;
        }
        write_marks(c, current);
    }

    void write_marks(std::uint32_t c, bool current) {
        const TrackedCandidate& cand = cands[c];
        const CandidateLinks& at = cand_links[c];
        const std::uint32_t value = link_value(c, current);
        adj[cand.a][at.pos_a].cand = value;
        adj[cand.b][at.pos_b].cand = value;
    }

    void begin_pair(std::uint32_t c, std::vector<Pair>& began) {
        TrackedCandidate& cand = cands[c];
        cand.pair = static_cast<std::uint32_t>(pairs.size());
        pairs.push_back({cand.a, cand.b});
        pair_cand.push_back(c);
        mark_links(c, true);
        began.push_back({cand.a, cand.b});
    }

    void end_pair(std::uint32_t c, std::vector<Pair>& ended) {
        TrackedCandidate& cand = cands[c];
        const std::uint32_t slot = cand.pair;
        const std::uint32_t last = static_cast<std::uint32_t>(pairs.size() - 1);
        if (slot != last) {
            pairs[slot] = pairs[last];
            pair_cand[slot] = pair_cand[last];
            cands[pair_cand[slot]].pair = slot;
        }
        pairs.pop_back();
        pair_cand.pop_back();
        cand.pair = kNoBody;
        mark_links(c, false);
        ended.push_back({cand.a, cand.b});
    }

    /// Candidate c of bodies i and j, its pair `current` or not: the pair begins or ends where
    /// the boxes now say otherwise.
    void retest(std::uint32_t c, std::uint32_t i, std::uint32_t j, bool current,
                std::vector<Pair>& began, std::vector<Pair>& ended) {
        if (touching(i, j, current) == current) return;
        if (current) {
            end_pair(c, ended);
        } else {
            begin_pair(c, began);
        }
    }

    void make_candidate(std::uint32_t i, std::uint32_t j) {
        std::uint32_t c;
        if (!free_cands.empty()) {
            c = free_cands.back();
            free_cands.pop_back();
        } else {
            c = static_cast<std::uint32_t>(cands.size());
            if (c >= kCurrentPair) throw std::length_error("pair tracker: too many candidates");
            cand_links.emplace_back();
            cands.emplace_back();
        }
        TrackedCandidate& cand = cands[c];
        CandidateLinks& at = cand_links[c];
        cand.a = std::min(i, j);
        cand.b = std::max(i, j);
        cand.pair = kNoBody;
        at.pos_a = static_cast<std::uint32_t>(adj[cand.a].size());
        adj[cand.a].push_back({cand.b, c});
        at.pos_b = static_cast<std::uint32_t>(adj[cand.b].size());
        adj[cand.b].push_back({cand.a, c});
    }

    void unlink(std::uint32_t id, std::uint32_t pos) {
        std::vector<TrackedLink>& list = adj[id];
        const TrackedLink moved = list.back();
        list[pos] = moved;
        list.pop_back();
        if (pos < list.size()) {
            const std::uint32_t c = moved.cand & ~kCurrentPair;
            CandidateLinks& at = cand_links[c];
            (cands[c].a == id ? at.pos_a : at.pos_b) = pos;
        }
    }

    void drop_candidate(std::uint32_t c, std::vector<Pair>& ended) {
        if (cands[c].pair != kNoBody) end_pair(c, ended);
        const TrackedCandidate cand = cands[c];
        const CandidateLinks at = cand_links[c];
        unlink(cand.a, at.pos_a);
        unlink(cand.b, at.pos_b);
        cands[c].a = cands[c].b = kNoBody;
        free_cands.push_back(c);
    }

    void drop_all(std::uint32_t id, std::vector<Pair>& ended) {
        while (!adj[id].empty()) drop_candidate(adj[id].back().cand & ~kCurrentPair, ended);
    }

    // ---- the structure ----

    /// The structure takes body id's (new) fat box.
    Status put(std::uint32_t id, bool was_in) {
        const TrackedBody& b = bodies[id];
        return was_in ? structure->move(id, b.fat) : structure->insert(id, b.fat);
    }

    // ---- static structures: rebuilt, their pairs found whole ----

    /// Applies every change, builds the structure over the boxes and compares its pairs with
    /// the last ones.
    Status update_rebuild(std::vector<Pair>& began, std::vector<Pair>& ended) {
        ++stats.updates;
        for (const std::uint32_t id : pending) {
            TrackedBody& b = bodies[id];
            if (!b.changed) continue;
            b.changed = false;
            ++stats.changed;
            b.reborn = false;
            b.filter_changed = false;
            b.in_structure = b.present;
            if (!b.present) continue;
            boxes[id] = b.next_box;
            b.filter = b.next_filter;
            b.is_static = b.next_static;
        }
        pending.clear();
        pending_count = 0;
        std::vector<Box> built;
        id_of_built.clear();
        bool filtered = false;
        for (std::uint32_t id = 0; id < bodies.size(); ++id) {
            if (!bodies[id].in_structure) continue;
            id_of_built.push_back(id);
            built.push_back(boxes[id]);
            filtered |= !(bodies[id].filter == Filter{});
        }
        ++stats.rebuilds;
        if (Status s = build_structure(*structure, built); !s) return s;
        if (!config.pairs) return Status::success();  // a query index
        structure->clear_filters();
        if (filtered)
            for (std::uint32_t k = 0; k < id_of_built.size(); ++k)
                structure->set_filter(k, bodies[id_of_built[k]].filter);
        found_pairs.clear();
        structure->self_pairs(found_pairs);
        next_pairs.clear();
        for (const Pair& p : found_pairs) {
            const std::uint32_t i = id_of_built[p.i], j = id_of_built[p.j];
            if (bodies[i].is_static && bodies[j].is_static) continue;
            next_pairs.push_back(i < j ? Pair{i, j} : Pair{j, i});
        }
        std::sort(next_pairs.begin(), next_pairs.end());
        stats.candidate_tests += next_pairs.size();
        diff_sorted(pairs, next_pairs, began, ended);
        pairs.swap(next_pairs);
        return Status::success();
    }

    /// Appends now \ before to `began` and before \ now to `ended` (both lists sorted).
    static void diff_sorted(const std::vector<Pair>& before, const std::vector<Pair>& now,
                            std::vector<Pair>& began, std::vector<Pair>& ended) {
        std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                            std::back_inserter(began));
        std::set_difference(before.begin(), before.end(), now.begin(), now.end(),
                            std::back_inserter(ended));
    }

    /// Appends the bodies whose fat box overlaps `region` (dynamic structures).
    void query_fat(const Box& region, std::vector<std::uint32_t>& out) {
        structure->query_box(region, out);
    }

    // ---- the three phases ----

    /// Phase 1 for one changed body. Returns whether it needs a requery.
    Result<bool> apply(std::uint32_t id, std::vector<Pair>& ended) {
        TrackedBody& b = bodies[id];
        b.changed = false;
        --pending_count;
        if (!b.present || b.reborn) {
            if (b.in_structure) {
                drop_all(id, ended);
                if (Status s = structure->remove(id); !s) return s.error();
                b.in_structure = false;
            }
            b.reborn = false;
            if (!b.present) return false;
        }
        const bool was_in = b.in_structure;
        const bool escaped = !was_in || b.filter_changed || b.is_static != b.next_static ||
                             !contains_box(b.fat, b.next_box);
        double d[3] = {0, 0, 0};
        if (was_in) {
            const Vec3 from = centroid(boxes[id]), to = centroid(b.next_box);
            for (int axis = 0; axis < 3; ++axis) d[axis] = double(to[axis]) - double(from[axis]);
        }
        boxes[id] = b.next_box;
        b.filter = b.next_filter;
        b.is_static = b.next_static;
        b.filter_changed = false;
        if (!escaped) return false;
        b.fat = fatten(boxes[id], d);
        if (Status s = put(id, was_in); !s) return s.error();
        b.in_structure = true;
        return true;
    }

    /// Phase 2 for every body of `requery`: the dynamic tree answers their queries together
    /// (DynamicAabbTree::query_boxes: the walks hide each other's memory latency), then each
    /// body's candidates follow its answer.
    void requery_all(std::vector<Pair>& ended) {
        if (tree == nullptr || requery.size() < 2) {
            for (const std::uint32_t id : requery) requery_one(id, ended);
            return;
        }
        requery_boxes.clear();
        for (const std::uint32_t id : requery) requery_boxes.push_back(bodies[id].fat);
        tree->query_boxes(requery_boxes, found, found_ranges);
        for (std::size_t k = 0; k < requery.size(); ++k) {
            const auto [first, count] = found_ranges[k];
            requery_found(requery[k], std::span(found).subspan(first, count), ended);
        }
    }

    /// Phase 2 for one body with a new fat box.
    void requery_one(std::uint32_t id, std::vector<Pair>& ended) {
        found.clear();
        query_fat(bodies[id].fat, found);
        requery_found(id, found, ended);
    }

    /// Phase 2 for body `id`, the structure having found `hits` at its fat box: its candidates
    /// become exactly these (those its filter allows).
    void requery_found(std::uint32_t id, std::span<const std::uint32_t> hits,
                       std::vector<Pair>& ended) {
        ++stats.requeries;
        if (++epoch >= 0x7FFFFFFFu) {  // the marks wrapped: start them again
            std::fill(mark.begin(), mark.end(), 0u);
            epoch = 1;
        }
        const std::uint32_t partner_mark = 2 * epoch, seen_mark = 2 * epoch + 1;
        for (const TrackedLink& link : adj[id]) mark[link.other] = partner_mark;
        mark[id] = seen_mark;  // never its own candidate
        for (const std::uint32_t t : hits) {
            if (mark[t] == seen_mark) continue;
            if (mark[t] == partner_mark) {
                mark[t] = seen_mark;
                continue;
            }
            if (!allowed(id, t)) continue;
            mark[t] = seen_mark;
            make_candidate(id, t);
        }
        std::vector<TrackedLink>& list = adj[id];
        for (std::size_t k = list.size(); k-- > 0;) {
            const TrackedLink link = list[k];
            if (mark[link.other] != seen_mark || !allowed(id, link.other))
                drop_candidate(link.cand & ~kCurrentPair, ended);
        }
    }

    /// Phase 3 for one changed body: each of its candidates tested on the boxes (a pair of
    /// two changed bodies is tested from both; the second finds nothing to do).
    /// With `skip_epoch`, a candidate whose other body changed in the same update (changed_in)
    /// and has the smaller id was tested from that body already.
    void test_one(std::uint32_t id, std::vector<Pair>& began, std::vector<Pair>& ended,
                  std::uint32_t skip_epoch = 0) {
        std::vector<TrackedLink>& list = adj[id];
        std::uint64_t tests = 0;
        for (std::size_t k = 0; k < list.size(); ++k) {
            const TrackedLink link = list[k];
            if (skip_epoch != 0 && link.other < id && changed_in[link.other] == skip_epoch)
                continue;
            ++tests;
            const bool current = (link.cand & kCurrentPair) != 0;
            retest(link.cand & ~kCurrentPair, id, link.other, current, began, ended);
        }
        stats.candidate_tests += tests;
    }

    /// Phase 3 when most bodies changed: every candidate tested on the boxes (retest), in the
    /// order the candidates lie in memory, read through a local pointer (a pair that begins or
    /// ends writes other arrays alone).
    void test_all(std::vector<Pair>& began, std::vector<Pair>& ended) {
        std::uint64_t tests = 0;
        constexpr std::uint32_t kAhead = 8;  // the boxes of the candidate this far on, asked for
        const std::uint32_t count = static_cast<std::uint32_t>(cands.size());
        const TrackedCandidate* const pool = cands.data();
        const Box* const box = boxes.data();
        defer_marks = true;
        for (std::uint32_t c = 0; c < count; ++c) {
            if (c + kAhead < count && pool[c + kAhead].a != kNoBody) {
                __builtin_prefetch(&box[pool[c + kAhead].a]);
                __builtin_prefetch(&box[pool[c + kAhead].b]);
            }
            const TrackedCandidate& cand = pool[c];
            if (cand.a == kNoBody) continue;  // free
            ++tests;
            retest(c, cand.a, cand.b, cand.pair != kNoBody, began, ended);
        }
        defer_marks = false;
        stats.candidate_tests += tests;
    }

    /// Brings the links' pair bits up to date with the candidates (a candidate since dropped
    /// is skipped, one made again in its slot written as it is now); past one stale mark per
    /// candidate, every list is rewritten in one pass instead.
    void flush_marks() {
        if (stale_marks.empty()) return;
        if (stale_marks.size() < cands.size()) {
            for (const std::uint32_t c : stale_marks)
                if (cands[c].a != kNoBody) write_marks(c, cands[c].pair != kNoBody);
        } else {
            for (std::vector<TrackedLink>& list : adj)
                for (TrackedLink& link : list) {
                    const std::uint32_t c = link.cand & ~kCurrentPair;
                    link.cand = link_value(c, cands[c].pair != kNoBody);
                }
        }
        stale_marks.clear();
    }

    /// A pair that ended and began within one update (a body removed and inserted again under
    /// its id) is reported in neither list.
    static void cancel_repeats(std::size_t began_from, std::size_t ended_from,
                               std::vector<Pair>& began, std::vector<Pair>& ended) {
        std::sort(began.begin() + std::ptrdiff_t(began_from), began.end());
        std::sort(ended.begin() + std::ptrdiff_t(ended_from), ended.end());
        std::vector<Pair> b2, e2;
        std::set_difference(began.begin() + std::ptrdiff_t(began_from), began.end(),
                            ended.begin() + std::ptrdiff_t(ended_from), ended.end(),
                            std::back_inserter(b2));
        std::set_difference(ended.begin() + std::ptrdiff_t(ended_from), ended.end(),
                            began.begin() + std::ptrdiff_t(began_from), began.end(),
                            std::back_inserter(e2));
        began.resize(began_from);
        began.insert(began.end(), b2.begin(), b2.end());
        ended.resize(ended_from);
        ended.insert(ended.end(), e2.begin(), e2.end());
    }

    /// Flags, for the bulk fill's tree, the largest set of bodies 0 .. k-1 no two of which
    /// ever pair: the static bodies, or the bodies of one filter that rejects itself (Bullet's
    /// static and kinematic objects: category StaticFilter, mask without it), whichever holds
    /// more.
    std::vector<std::uint8_t> kept_apart(std::uint32_t k) const {
        struct Class {
            Filter filter;
            std::uint32_t count = 0;
        };
        constexpr std::size_t kClasses = 8;  // distinct self-rejecting filters looked at
        std::vector<Class> classes;
        std::uint32_t statics = 0;
        std::size_t last = 0;
        for (std::uint32_t id = 0; id < k; ++id) {
            const TrackedBody& b = bodies[id];
            statics += b.is_static;
            if (last < classes.size() && classes[last].filter == b.filter) {
                ++classes[last].count;
                continue;
            }
            if (should_collide(b.filter, b.filter)) continue;
            last = 0;
            while (last < classes.size() && !(classes[last].filter == b.filter)) ++last;
            if (last < classes.size()) {
                ++classes[last].count;
            } else if (classes.size() < kClasses) {
                classes.push_back({b.filter, 1});
            }
        }
        const Class* best = nullptr;
        for (const Class& c : classes)
            if (best == nullptr || c.count > best->count) best = &c;
        std::vector<std::uint8_t> apart(k, 0);
        if (best != nullptr && best->count > statics) {
            for (std::uint32_t id = 0; id < k; ++id) apart[id] = bodies[id].filter == best->filter;
        } else {
            for (std::uint32_t id = 0; id < k; ++id) apart[id] = bodies[id].is_static;
        }
        return apart;
    }

    /// A batch of bodies entering an empty tracker under the ids 0 .. k-1: the structure is
    /// built over their fat boxes at once and its self pairs are the candidates, where k
    /// inserts and k queries would cost several times more (and a built tree answers the
    /// later queries faster than one grown by inserts). Returns false, having changed
    /// nothing, when the batch is not such.
    Result<bool> bulk_fill(std::vector<Pair>& began, std::vector<Pair>& ended) {
        if (pending_count < kBulkFill || structure->size() != 0) return false;
        std::size_t k = 0;
        std::uint32_t top = 0;
        for (const std::uint32_t id : pending) {
            const TrackedBody& b = bodies[id];
            if (!b.changed || !b.present) continue;
            if (b.in_structure) return false;
            ++k;
            top = std::max(top, id);
        }
        if (k < kBulkFill || std::size_t(top) + 1 != k) return false;
        std::vector<Box> fat(k);
        const double still[3] = {0, 0, 0};
        for (const std::uint32_t id : pending) {
            TrackedBody& b = bodies[id];
            if (!b.changed) continue;
            b.changed = false;
            b.reborn = false;
            b.filter_changed = false;
            ++stats.changed;
            if (!b.present) continue;
            boxes[id] = b.next_box;
            b.filter = b.next_filter;
            b.is_static = b.next_static;
            b.fat = fatten(boxes[id], still);
            b.in_structure = true;
            fat[id] = b.fat;
        }
        pending.clear();
        pending_count = 0;
        ++stats.rebuilds;
        found_pairs.clear();
        if (tree != nullptr && config.pairs) {
            // The bodies that never pair with each other (kept_apart: the static ones, or one
            // self-rejecting filter's) under one child of the root: their pairs with each
            // other, never candidates, are not walked (a level's slabs touch by the hundred
            // thousand).
            const std::vector<std::uint8_t> apart = kept_apart(std::uint32_t(k));
            if (Status s = tree->build_apart(fat, apart, found_pairs); !s) return s.error();
        } else {
            if (Status s = build_structure(*structure, fat); !s) return s.error();
            if (!config.pairs) return true;  // a query index
            structure->self_pairs(found_pairs);
        }
        // The lists and the pool sized once (a million candidates grown by push_back cost
        // half a million reallocations).
        std::vector<std::uint32_t> degree(k, 0);
        std::size_t count = 0;
        for (const Pair& p : found_pairs) {
            if (!allowed(p.i, p.j)) continue;
            ++degree[p.i];
            ++degree[p.j];
            ++count;
        }
        for (std::uint32_t id = 0; id < k; ++id) adj[id].reserve(degree[id]);
        cands.reserve(count);
        cand_links.reserve(count);
        for (const Pair& p : found_pairs)
            if (allowed(p.i, p.j)) make_candidate(p.i, p.j);
        test_all(began, ended);
        return true;
    }

    Status update_all(std::vector<Pair>& began, std::vector<Pair>& ended) {
        if (!dynamic) return update_rebuild(began, ended);
        ++stats.updates;
        if (auto bulk = bulk_fill(began, ended); !bulk) {
            return bulk.error();
        } else if (bulk.value()) {
            return Status::success();
        }
        const std::size_t began_from = began.size(), ended_from = ended.size();
        bool reborn = false;
        requery.clear();
        std::size_t live = 0;
        for (std::size_t k = 0; k < pending.size(); ++k) {
            const std::uint32_t id = pending[k];
            if (!bodies[id].changed) continue;
            reborn |= bodies[id].reborn;
            auto needs = apply(id, ended);
            if (!needs) return needs.error();
            if (needs.value()) requery.push_back(id);
            pending[live++] = id;  // kept for the test phase
        }
        pending.resize(live);
        stats.changed += live;
        if (!config.pairs) {  // a query index: the structure is up to date
            pending.clear();
            return Status::success();
        }
        requery_all(ended);
        if (++update_epoch == 0) {  // wrapped: start the marks again
            std::fill(changed_in.begin(), changed_in.end(), 0u);
            update_epoch = 1;
        }
        if (live * 2 >= present && cands.size() >= 64) {
            // Most bodies changed: every candidate tested once, in the order they lie in
            // memory, rather than each changed body's list (the lists and the epochs are the
            // costly reads when every body moves; a candidate of two unchanged bodies finds
            // its state unchanged).
            test_all(began, ended);
        } else {
            flush_marks();
            for (const std::uint32_t id : pending) changed_in[id] = update_epoch;
            for (const std::uint32_t id : pending)
                if (bodies[id].present) test_one(id, began, ended, update_epoch);
        }
        pending.clear();
        if (reborn) cancel_repeats(began_from, ended_from, began, ended);
        return Status::success();
    }

    Status update_one(std::uint32_t id, std::vector<Pair>& began, std::vector<Pair>& ended) {
        if (id >= bodies.size() || !bodies[id].changed) return Status::success();
        if (!dynamic) return update_rebuild(began, ended);  // the others' changes with it
        ++stats.updates;
        ++stats.changed;
        const std::size_t began_from = began.size(), ended_from = ended.size();
        const bool reborn = bodies[id].reborn;
        auto needs = apply(id, ended);
        if (!needs) return needs.error();
        // Its entry in `pending` is stale now: dropped at once when last (a change applied
        // right after it was made), else skipped and dropped by the next update of all.
        if (pending.back() == id) pending.pop_back();
        if (pending_count == 0) pending.clear();
        if (!config.pairs) return Status::success();  // a query index
        if (needs.value()) requery_one(id, ended);
        flush_marks();
        if (bodies[id].present) test_one(id, began, ended);
        if (reborn) cancel_repeats(began_from, ended_from, began, ended);
        return Status::success();
    }
};

PairTracker::PairTracker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PairTracker::~PairTracker() = default;

Result<std::unique_ptr<PairTracker>> PairTracker::create(const Config& config) {
    try {
        auto impl = std::make_unique<Impl>();
        impl->config = config;
        if (!(config.margin >= 0) || !std::isfinite(config.margin))
            return impl->invalid("margin must be finite and >= 0");
        if (!(config.prediction >= 0) || !std::isfinite(config.prediction))
            return impl->invalid("prediction must be finite and >= 0");
        if (!(config.speed_margin >= 0) || !std::isfinite(config.speed_margin))
            return impl->invalid("speed_margin must be finite and >= 0");
        if (!(config.hysteresis >= 0) || !std::isfinite(config.hysteresis))
            return impl->invalid("hysteresis must be finite and >= 0");
        if (config.method == "dynamic_aabb_tree") {
            // The tracker's fat boxes are the tree's boxes: no second margin.
            DynamicAabbTree::Config tree;
            tree.margin = 0;
            auto made = std::make_unique<DynamicAabbTree>(tree);
            impl->tree = made.get();
            impl->structure = std::move(made);
        } else {
            auto made = make_structure(config.method);
            if (!made) return made.error();
            impl->structure = std::move(made.value());
        }
        impl->dynamic = impl->structure->is_dynamic();
        if (!impl->dynamic) (void)impl->structure->build({});
        if (!impl->dynamic && config.hysteresis > 0)
            return impl->invalid("hysteresis needs a dynamic method; " + config.method +
                                 " is rebuilt and its pairs found whole at each update");
        return std::unique_ptr<PairTracker>(new PairTracker(std::move(impl)));
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory,
                     "pair tracker: out of memory creating " + config.method};
    }
}

Status PairTracker::insert(std::uint32_t id, const Box& box, const Filter& filter, bool is_static) {
    Impl& m = *impl_;
    if (id == kNoBody) return m.invalid("id 4294967295 is reserved", id);
    if (!valid_tracked_box(box))
        return Error{
            ErrorCode::invalid_box,
            "pair tracker: box " + std::to_string(id) + " has a NaN, an infinity or min > max", id};
    try {
        m.grow(id);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "pair tracker: out of memory adding a body", id};
    }
    TrackedBody& b = m.bodies[id];
    if (b.present) return m.invalid("body " + std::to_string(id) + " is already present", id);
    b.present = true;
    b.reborn = b.in_structure;  // removed and inserted again before an update
    b.next_box = box;
    b.next_filter = filter;
    b.next_static = is_static;
    b.filter_changed = true;
    ++m.present;
    m.sample_extent(box);
    m.note_change(id);
    return Status::success();
}

Status PairTracker::remove(std::uint32_t id) {
    Impl& m = *impl_;
    if (!contains(id)) return m.invalid("body " + std::to_string(id) + " is not present", id);
    m.bodies[id].present = false;
    m.bodies[id].reborn = false;
    --m.present;
    m.note_change(id);
    return Status::success();
}

Status PairTracker::move(std::uint32_t id, const Box& box) {
    Impl& m = *impl_;
    if (!contains(id)) return m.invalid("body " + std::to_string(id) + " is not present", id);
    if (!valid_tracked_box(box))
        return Error{
            ErrorCode::invalid_box,
            "pair tracker: box " + std::to_string(id) + " has a NaN, an infinity or min > max", id};
    TrackedBody& b = m.bodies[id];
    if (b.next_box == box) return Status::success();
    b.next_box = box;
    m.note_change(id);
    return Status::success();
}

Status PairTracker::set_filter(std::uint32_t id, const Filter& filter) {
    Impl& m = *impl_;
    if (!contains(id)) return m.invalid("body " + std::to_string(id) + " is not present", id);
    TrackedBody& b = m.bodies[id];
    if (b.next_filter == filter) return Status::success();
    b.next_filter = filter;
    b.filter_changed = true;
    m.note_change(id);
    return Status::success();
}

Status PairTracker::update(std::vector<Pair>& began, std::vector<Pair>& ended) {
    try {
        return impl_->update_all(began, ended);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "pair tracker: out of memory in an update"};
}

Status PairTracker::update(std::uint32_t id, std::vector<Pair>& began, std::vector<Pair>& ended) {
    try {
        return impl_->update_one(id, began, ended);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "pair tracker: out of memory in an update"};
}

std::span<const Pair> PairTracker::pairs() const {
    return impl_->pairs;
}

void PairTracker::partners(std::uint32_t id, std::vector<std::uint32_t>& out) const {
    const Impl& m = *impl_;
    if (!m.dynamic) {  // a static method keeps its pairs alone (sorted): one pass over them
        for (const Pair& p : m.pairs)
            if (p.i == id || p.j == id) out.push_back(p.i == id ? p.j : p.i);
        return;
    }
    if (id >= m.adj.size()) return;
    for (const TrackedLink& link : m.adj[id])  // the candidates' pair slots (marks may be stale)
        if (m.cands[link.cand & ~kCurrentPair].pair != kNoBody) out.push_back(link.other);
}

void PairTracker::overlapping_pairs(std::vector<Pair>& out) const {
    const Impl& m = *impl_;
    if (m.config.pairs) {
        out.insert(out.end(), m.pairs.begin(), m.pairs.end());
        return;
    }
    // A dynamic structure holds the fat boxes under the ids, a static one the boxes under
    // their build indices.
    std::vector<Pair> found;
    m.structure->self_pairs(found);
    for (const Pair& p : found) {
        std::uint32_t i = m.dynamic ? p.i : m.id_of_built[p.i];
        std::uint32_t j = m.dynamic ? p.j : m.id_of_built[p.j];
        if (i > j) std::swap(i, j);
        if (overlaps_packed(m.boxes[i], m.boxes[j]) && m.allowed(i, j)) out.push_back({i, j});
    }
}

void PairTracker::query_box(const Box& region, std::vector<std::uint32_t>& out) const {
    const Impl& m = *impl_;
    std::vector<std::uint32_t> hits;
    if (m.dynamic) {
        m.structure->query_box(region, hits);
    } else {
        std::vector<std::uint32_t> built;
        m.structure->query_box(region, built);
        for (const std::uint32_t k : built) hits.push_back(m.id_of_built[k]);
    }
    for (const std::uint32_t id : hits)
        if (overlaps(m.boxes[id], region)) out.push_back(id);
}

void PairTracker::query_ray(const Ray& ray, const Vec3& lo, const Vec3& hi,
                            std::vector<RayHit>& out) const {
    const Impl& m = *impl_;
    std::vector<std::uint32_t> found;
    m.structure->query_ray_candidates(ray, lo, hi, found);
    for (std::uint32_t id : found) {
        if (!m.dynamic) id = m.id_of_built[id];
        const Box& b = m.boxes[id];
        const Box grown{{b.min.x + lo.x, b.min.y + lo.y, b.min.z + lo.z},
                        {b.max.x + hi.x, b.max.y + hi.y, b.max.z + hi.z}};
        float t_near = 0, t_far = ray.tmax;
        if (ray_box_slabs(ray, grown, t_near, t_far) && t_near <= t_far)
            out.push_back({id, t_near});
    }
}

bool PairTracker::contains(std::uint32_t id) const {
    return id < impl_->bodies.size() && impl_->bodies[id].present;
}

const Box& PairTracker::box(std::uint32_t id) const {
    return impl_->boxes[id];
}

std::size_t PairTracker::size() const {
    return impl_->present;
}

bool PairTracker::pending() const {
    return impl_->pending_count != 0;
}

void PairTracker::clear() {
    Impl& m = *impl_;
    m.bodies.clear();
    m.boxes.clear();
    m.adj.clear();
    m.mark.clear();
    m.changed_in.clear();
    m.cands.clear();
    m.cand_links.clear();
    m.stale_marks.clear();
    m.free_cands.clear();
    m.pairs.clear();
    m.pair_cand.clear();
    m.pending.clear();
    m.pending_count = 0;
    m.present = 0;
    m.id_of_built.clear();
    m.sample.clear();
    m.typical = 0;
    (void)m.structure->build({});
}

std::string_view PairTracker::method() const {
    return impl_->config.method;
}

bool PairTracker::rebuilds() const {
    return !impl_->dynamic;
}

PairTrackerStats PairTracker::stats() const {
    PairTrackerStats s = impl_->stats;
    s.candidates = impl_->cands.size() - impl_->free_cands.size();
    s.pairs = impl_->pairs.size();
    return s;
}

Status PairTracker::validate() const {
    const Impl& m = *impl_;
    auto broken = [](const std::string& what, std::optional<std::size_t> id = std::nullopt) {
        return Error{ErrorCode::invariant_violated, "pair tracker: " + what, id};
    };
    if (Status s = m.structure->validate(); !s) return s;
    std::size_t held = 0;
    for (std::uint32_t id = 0; id < m.bodies.size(); ++id) {
        const TrackedBody& b = m.bodies[id];
        if (!b.in_structure) {
            if (!m.adj[id].empty()) return broken("a body outside has candidates", id);
            continue;
        }
        ++held;
        if (m.dynamic && !contains_box(b.fat, m.boxes[id]))
            return broken("body " + std::to_string(id) + "'s fat box does not hold its box", id);
        for (std::uint32_t k = 0; k < m.adj[id].size(); ++k) {
            const TrackedLink link = m.adj[id][k];
            const TrackedCandidate& c = m.cands[link.cand & ~kCurrentPair];
            const CandidateLinks& at = m.cand_links[link.cand & ~kCurrentPair];
            if ((c.a == id ? at.pos_a : at.pos_b) != k || (c.a != id && c.b != id) ||
                link.other != (c.a == id ? c.b : c.a) ||
                (m.stale_marks.empty() && ((link.cand & kCurrentPair) != 0) != (c.pair != kNoBody)))
                return broken("candidate links of body " + std::to_string(id) + " disagree", id);
        }
    }
    if (m.dynamic && m.structure->size() != held)
        return broken("the structure holds " + std::to_string(m.structure->size()) +
                      " boxes, the tracker " + std::to_string(held));
    if (!m.config.pairs) {  // a query index: no pairs, and each body found at its box
        if (!m.pairs.empty() || m.cands.size() != m.free_cands.size())
            return broken("a query index holds pairs or candidates");
        std::vector<std::uint32_t> found;
        for (std::uint32_t id = 0; id < m.bodies.size(); ++id) {
            if (!m.bodies[id].in_structure) continue;
            found.clear();
            query_box(m.boxes[id], found);
            if (std::find(found.begin(), found.end(), id) == found.end())
                return broken("body " + std::to_string(id) + " is not found at its box", id);
        }
        return Status::success();
    }
    // The pairs against brute force over the applied bodies (exact without hysteresis;
    // with it, every overlapping pair must be there and none more than h apart).
    std::vector<Pair> expected, got(m.pairs.begin(), m.pairs.end());
    for (std::uint32_t i = 0; i < m.bodies.size(); ++i) {
        if (!m.bodies[i].in_structure) continue;
        for (std::uint32_t j = i + 1; j < m.bodies.size(); ++j) {
            if (!m.bodies[j].in_structure || !m.allowed(i, j)) continue;
            if (overlaps(m.boxes[i], m.boxes[j])) expected.push_back({i, j});
        }
    }
    std::sort(got.begin(), got.end());
    if (std::adjacent_find(got.begin(), got.end()) != got.end())
        return broken("a pair is held twice");
    for (std::uint32_t s = 0; m.dynamic && s < m.pairs.size(); ++s)
        if (m.cands[m.pair_cand[s]].pair != s) return broken("pair slots disagree");
    if (m.config.hysteresis <= 0) {
        if (got != expected)
            return broken("holds " + std::to_string(got.size()) + " pairs, brute force finds " +
                          std::to_string(expected.size()));
    } else if (!std::includes(got.begin(), got.end(), expected.begin(), expected.end())) {
        return broken("an overlapping pair is missing");
    }
    return Status::success();
}

}  // namespace broadphase
