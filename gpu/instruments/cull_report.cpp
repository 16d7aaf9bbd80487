// Culler's instruments (last_report(Culler&), Culler::last_visits): the stages of the host
// helper's last cull with the dispatches recorded between its timestamps, the memory traffic of
// each stage by the kernels' access patterns (gpu/instruments/traffic.hpp), and the GPU time.
#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "cull/culler_impl.hpp"
#include "device/impl_access.hpp"
#include "instruments/traffic.hpp"
#include "lbvh/lbvh_build.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace {

// The memory traffic of each stage of one view's cull over n boxes (gpu/instruments/traffic.hpp),
// from the kernels' access patterns; `visible` boxes seen, `stored` of them written out, `visits`
// the internal nodes the traversal expanded (its GPU count, lbvh_cull.glsl), chunks = n / 32
// rounded up, CullParams (128 B) counted once per kernel that reads it:
//   cull      lbvh_cull reads the params, per invocation the root's bounds (32 B) and per
//             expanded node its LbvhWideNode (64 B); writes each seen position's slot (4 B)
//             and, approx, its rank (4 B), each chunk's count and the scan's total slot (4 B
//             each), and adds its expanded nodes to the visit count (one atomic per
//             invocation: 4 B read and written; the rare carry not counted). Occlusion adds
//             its CullOcclusionParams (80 B); the pyramid texels and visibility stamps each
//             occlusion test reads are not counted (the tests are not).
//   compact   the exclusive scan of the chunk + 1 counts (RadixSort::scan_traffic);
//             lbvh_cull_compact reads the scanned counts (4 B per chunk + 1) and per visible
//             position its slot and leaf's id (4 + 4 B), exact: the leaf's bounds (32 B) and
//             the params, approx: its rank (4 B); writes per visible box, exact, its key alone
//             (8 B, the id in its low bits), approx, its value and key (4 + 4 B).
//   order sort  the copy of the visible total (4, 4 B), count_args (4, 24 B: two dispatch
//             slots) and RadixSort::count_traffic of the visible keys in a sort of capacity n
//             (exact: 2-word keys of 32 + id_bits(n) bits, the distance key above the id;
//             keys only; approx: id_bits(n)-bit ranks with the ids as values; an odd number of
//             passes ends in the compaction's arrays, swapped, with no copy back).
//   emit      lbvh_cull_emit reads the params, the total (4 B) and each stored value (approx,
//             4 B) or key (exact: only its low word, the id, is read, but the 8 B lie in the
//             same sectors, so 8 B are counted); writes each stored id (4 B) and draw command
//             (20 B) and the draw count (8 B).
//   emit (LODs), flat: lbvh_cull_emit_lods reads the params, the total, per stored draw its
//             element (exact: the sorted 64-bit key, 8 B; approx: its sorted position and
//             leaf's id and bounds, 4 + 4 + 32 B), its mesh id (4 B) and its mesh's CullMesh
//             (144 B, counted whole); writes the id, command and LOD (4 + 20 + 4 B per stored
//             draw) and the draw count (8 B). Grouped, before the emit: lbvh_cull_group reads
//             the total and per visible box its element (exact: its sorted key, whose low
//             bits are the id, 8 B; approx: position and leaf id, 4 + 4 B) and mesh id (4 B),
//             writes its mesh key and value (4 + 4 B); RadixSort::count_traffic of the keys on
//             bit_width(M) bits; lbvh_cull_group_bounds reads the total and each key (4 B; its
//             neighbours cached), writes (first, end) of each run present (8 B); then the emit
//             reads per visible box its key and run start (4 + 4 B) and per stored draw what the
//             flat emit reads except the mesh id, and per mesh its run bounds and record (8 + 16
//             B); writes per stored draw as the flat emit, 2M + 1 group counts (4 B each), the
//             visible total (4 B) and the stored count by one atomic per mesh (4, 4 B).
std::array<Traffic, 4> view_traffic(const LastCull& c, std::uint32_t visible, std::uint64_t visits,
                                    SortPath path, std::uint32_t* sort_passes) {
    std::array<Traffic, 4> t{};
    *sort_passes = 0;
    const std::uint64_t n = c.n;
    if (n == 0) {
        t[3] = {0, 8};  // the emit's one workgroup writes the draw count of no boxes
        return t;
    }
    const std::uint64_t chunks = chunk_count(c.n), seen = visible;
    const std::uint64_t stored = std::min<std::uint64_t>(visible, c.capacity);
    const bool exact = c.exact;
    const std::uint64_t params = sizeof(CullParams);
    t[0] = {params + 32 * chunks + 64 * visits + 4 * chunks,
            4 * seen + (exact ? 0 : 4 * seen) + 4 * (chunks + 1) + 4 * chunks};
    if (c.kind == LastCull::Kind::occluded) t[0].read += sizeof(CullOcclusionParams);
    t[1] = RadixSort::scan_traffic(static_cast<std::uint32_t>(chunks + 1));
    t[1] += {4 * (chunks + 1) + seen * (8 + (exact ? 32 : 4)) + (exact ? params : 0), seen * 8};
    t[2] = {4 + 4, 4 + 4 + 24};
    t[2] += RadixSort::count_traffic(c.n, visible, exact ? 2 : 1, order_key_bits(c.n, exact), exact,
                                     path, sort_passes, false);
    if (c.kind != LastCull::Kind::lods) {
        t[3] = {params + 4 + (exact ? 8 : 4) * stored, 24 * stored + 8};
        return t;
    }
    const std::uint64_t element = exact ? 8 : 4 + 4 + 32;
    const std::uint64_t draws = c.stored;
    if (!c.grouped) {
        t[3] = {params + 4 + draws * (element + 4 + sizeof(CullMesh)), 28 * draws + 8};
        return t;
    }
    const std::uint64_t meshes = c.mesh_count;
    t[3] = {4 + seen * (8 + 4), 8 * seen};  // lbvh_cull_group
    t[3] += RadixSort::count_traffic(
        c.n, visible, 1, std::max<std::uint32_t>(1, std::bit_width(c.mesh_count)), false, path);
    t[3] += {4 + 4 * seen, 8ull * c.runs};  // lbvh_cull_group_bounds
    t[3] += {params + 4 + 8 * seen + draws * (element + sizeof(CullMesh)) + 24 * meshes,
             28 * draws + 4 * (2 * meshes + 1) + 4 + 4 * meshes};
    t[3].read += 4 * meshes;  // the atomics' reads
    return t;
}

// Bytes the depth pyramid's levels above 0 take: depth_pyramid reads each texel of a level
// once for the next level (4 B; an odd edge's clamped re-read is the same texel) and writes
// every texel above level 0 (4 B).
Traffic pyramid_traffic(std::uint32_t width, std::uint32_t height) {
    const std::vector<DepthLevel> levels = depth_pyramid_levels(width, height);
    if (levels.size() < 2) return {};
    const std::uint64_t texels = levels.back().offset + 1ull;
    const std::uint64_t level0 = std::uint64_t(width) * height;
    return {4 * (texels - 1), 4 * (texels - level0)};
}

}  // namespace

Result<std::uint64_t> Culler::last_visits() {
    Impl& im = *impl_;
    const LastCull& c = im.last;
    // None yet, or the last cull failed (no visible count was read).
    if (c.kind == LastCull::Kind::none || c.visible.empty() || c.n == 0) return std::uint64_t{0};
    // The Counts array of the layout the last traversal wrote: several views of the exact
    // order share one traversal (view 0's array); the approximate order's views add their
    // traversals' counts in the one-view array (record_cull).
    const bool joint = c.kind == LastCull::Kind::views && c.views > 1 && c.exact;
    const std::uint32_t mesh_count = c.kind == LastCull::Kind::lods && c.grouped ? c.mesh_count : 0;
    const CullScratch s = cull_scratch_layout({}, c.n, mesh_count, joint ? c.views : 1);
    std::uint32_t words[2] = {0, 0};
    if (Status d = im.context->download(im.scratch, words, 8,
                                        s.offsets.offset + visits_offset(chunk_count(c.n)));
        !d)
        return d.error();
    return std::uint64_t(words[1]) << 32 | words[0];
}

Result<std::vector<StageReport>> last_report(Culler& culler) {
    CullerImpl& im = impl_of(culler);
    const LastCull& c = im.last;
    if (c.kind == LastCull::Kind::none || c.visible.empty()) return std::vector<StageReport>{};
    auto visits = culler.last_visits();
    if (!visits) return visits.error();
    auto refined = read_build_refined(*im.lbvh, im.build_scratch, c.n);
    if (!refined) return refined.error();
    const CullTimes& t = im.times;
    std::vector<StageReport> out;
    StageReport build;
    build.name = "tree build";
    build.dispatches = static_cast<std::uint32_t>(im.build_dispatches);
    Traffic bt = build_traffic(*im.lbvh, c.n, refined.value(), &build.passes);
    bt += build_fill_traffic(*im.lbvh, c.n);
    build.bytes_read = bt.read;
    build.bytes_written = bt.written;
    build.ms = t.build.total();
    out.push_back(build);
    if (c.kind == LastCull::Kind::occluded) {
        StageReport p;
        p.name = "depth pyramid";
        p.dispatches = static_cast<std::uint32_t>(im.pyramid_dispatches);
        const Traffic pt = pyramid_traffic(c.pyramid_width, c.pyramid_height);
        p.bytes_read = pt.read;
        p.bytes_written = pt.written;
        p.ms = t.pyramid;
        out.push_back(p);
    }
    const SortPath path = im.sort.path();
    std::uint32_t passes = 0;
    auto stage = [&](const char* name, std::uint32_t from, std::uint32_t to, const Traffic& traffic,
                     double ms, std::uint32_t stage_passes) {
        StageReport r;
        r.name = name;
        r.dispatches = static_cast<std::uint32_t>(im.marks[to] - im.marks[from]);
        r.bytes_read = traffic.read;
        r.bytes_written = traffic.written;
        r.ms = ms;
        r.passes = stage_passes;
        out.push_back(r);
    };
    if (c.kind != LastCull::Kind::views || c.views == 1) {
        const auto v = view_traffic(c, c.visible.front(), visits.value(), path, &passes);
        stage(c.kind == LastCull::Kind::occluded ? "cull + occlusion" : "cull", 0, 1, v[0], t.cull,
              0);
        stage("compact", 1, 2, v[1], t.compact, 0);
        stage("order sort", 2, 3, v[2], t.sort, passes);
        stage(c.kind == LastCull::Kind::lods ? "emit (LODs)" : "emit", 3, 4, v[3], t.emit, 0);
        return out;
    }
    // Several views: each view's stages as one view's, the traversal's nodes counted once (all
    // views' expanded nodes); the exact order's shared traversal reads the root and counts its
    // visits once per invocation for all views. Timestamps as record_views writes them.
    std::array<Traffic, 4> sum{};
    for (std::uint32_t v = 0; v < c.views; ++v) {
        const auto per_view = view_traffic(c, c.visible[v], 0, path, &passes);
        for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += per_view[k];
    }
    sum[0].read += 64 * visits.value();
    if (c.exact && c.n > 0) {
        const std::uint64_t chunks = chunk_count(c.n);
        sum[0].read -= (c.views - 1ull) * (32 + 4) * chunks;
        sum[0].written -= (c.views - 1ull) * 4 * chunks;
    }
    Traffic rest = sum[1];
    rest += sum[2];
    rest += sum[3];
    if (c.exact) {
        stage("cull (views together)", 0, 1, sum[0], t.cull, 0);
        stage("compact, sort, emit", 1, 4, rest, t.compact + t.sort + t.emit, passes);
    } else {
        Traffic all = sum[0];
        all += rest;
        stage("cull, compact, sort, emit", 0, 4, all, t.cull_total(), passes);
    }
    return out;
}

}  // namespace broadphase::gpu
