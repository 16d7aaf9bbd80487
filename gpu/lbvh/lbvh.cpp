// GPU LBVH: scene bounds -> Morton codes -> radix sort -> hierarchy and bounds in one
// bottom-up pass (Apetrei 2014, Karras 2012 numbering) -> all-pairs traversal
// (shaders/*.comp, one kernel per step), recordable
// into the caller's command buffer, plus host-array helpers that grow the pair buffer until
// every pair fits.
#include <algorithm>
#include <array>
#include <bit>

#include "broadphase/scene.hpp"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "lbvh/traversal.hpp"
#include "shaders.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

static_assert(static_cast<std::uint32_t>(CodeKind::morton30) == kCodeMorton30 &&
                  static_cast<std::uint32_t>(CodeKind::morton63) == kCodeMorton63 &&
                  static_cast<std::uint32_t>(CodeKind::hilbert30) == kCodeHilbert30,
              "CodeKind's values are the shaders' code kinds");

namespace {

constexpr std::uint32_t kQueries = kBuildQueries + 1;

std::uint32_t key_words(CodeKind code) {
    return code == CodeKind::morton63 ? 2 : 1;
}
std::uint32_t key_bits(CodeKind code) {
    return code == CodeKind::morton63 ? 63 : 30;
}
// 30-bit codes can be refined into 64-bit keys (lbvh::refine_codes); morton63 cannot.
bool refinable(CodeKind code) {
    return code != CodeKind::morton63;
}
// Key bits of the refined build's second sort: run_start << 30 | second (refine_codes.comp),
// run_start < n.
std::uint32_t refined_sort_bits(std::uint32_t n) {
    return kRefineSecondBits + std::max<std::uint32_t>(std::bit_width(n > 1 ? n - 1 : 1u), 1);
}

// Where each array of a build lives inside the scratch buffer. Refinable kinds take room for
// the second sort's 64-bit keys, in sorted_keys and keys_tmp (the first sort uses the first n
// words of keys_tmp and keys, whose first codes the hierarchy of refined keys reads beside
// them), the run starts (in `flags`, free until the hierarchy), the runs' centroid bounds, the
// refine word and its indirect arguments.
// A tree too large for one descriptor (`soa`: lbvh_build_soa.comp) is built into three more
// arrays of 16 B per node, each bound whole, before lbvh_assemble.comp writes the split tree.
struct ScratchLayout {
    BufferRange bounds, keys, sorted_keys, values, keys_tmp, values_tmp, flags, sort;
    BufferRange run_bounds, refine, refine_args;
    BufferRange node_lo, node_hi, node_link;
    VkDeviceSize size = 0;
};

ScratchLayout scratch_layout(const BufferRange& scratch, std::uint32_t n, CodeKind code,
                             bool refine, bool soa) {
    Arena arena(scratch);
    ScratchLayout s;
    const bool refined = refinable(code) && refine;
    VkDeviceSize key_bytes = VkDeviceSize(n) * 4 * (refined ? 2 : key_words(code));
    s.bounds = arena.take(sizeof(GpuBounds));
    s.keys = arena.take(VkDeviceSize(n) * 4 * key_words(code));
    // Just after keys: the hierarchy binds keys, sorted_keys and keys_tmp as one range.
    if (refined) s.sorted_keys = arena.take(key_bytes);
    s.keys_tmp = arena.take(key_bytes);
    s.values = arena.take(n * 4ull);
    s.values_tmp = arena.take(n * 4ull);
    s.flags = arena.take(std::max<std::uint32_t>(n, 1) * 4ull);
    s.sort = arena.take(RadixSort::scratch_size(n));
    if (refined) {
        s.run_bounds = arena.take(n * 24ull);
        s.refine = arena.take(4);
        s.refine_args = arena.take(kArgsRefineSlots * sizeof(VkDispatchIndirectCommand));
    }
    if (soa) {
        s.node_lo = arena.take(soa_array_bytes(n));
        s.node_hi = arena.take(soa_array_bytes(n));
        s.node_link = arena.take(soa_array_bytes(n));
    }
    s.size = arena.used();
    return s;
}

BufferRange first_words(BufferRange r, std::uint32_t n) {
    r.size = std::max<VkDeviceSize>(n * 4ull, 4);
    return r;
}

// The memory traffic of each stage of a build and all-pairs pass over n boxes
// (gpu/instruments/traffic.hpp), from the kernels' access patterns:
//   scene bounds  scene_bounds reads every box (32 B); each workgroup merges 6 words of
//                 bounds by atomics (24 B read and written).
//   codes         morton_codes reads every box and, once per workgroup, the bounds (32 B);
//                 writes a key (4 B per key word) and a value (4 B) per box.
//   sort          RadixSort::traffic of the keys and values (on the Context's SortPath);
//                 with adaptive codes (30-bit kinds with refine on) the first sort is of one
//                 key word, then code_runs reads the keys (4 B per position: its neighbours'
//                 are the same lines; the seeds of long runs' heads, 36 B read and 24 B
//                 written each, at most n / kRefineBoundsRun of them and only when the keys are
//                 refined, are not counted). Only when refined: run_bounds reads each key, id
//                 and box (4 + 36 B) and writes a run start (4 B); refine_codes reads the run
//                 start, key, id, box and run bounds (4 + 4 + 36 + 24 B; a short run's boxes
//                 are read by each of its few members, counted once) and writes the 64-bit key
//                 (8 B) and, when the second sort's passes are odd, a copy of the id (4 B); the
//                 second sort (64-bit keys of refined_sort_bits(n) bits, no copy back). Else
//                 the second sort is launched empty
//                 (RadixSort::empty_traffic) and the refinement's other steps launch nothing;
//                 a build that did not record them (`recorded` false: the host helpers'
//                 refinement on demand, LbvhOptions::refine_on_demand) has neither.
//   hierarchy + bounds  lbvh_build reads each sorted key (when the codes were refined, the
//                 sorted key's low word and the first code: 8 B), id and box; each internal node,
//                 completed once by its second child's invocation, takes its split's flag
//                 and reads the first child's bounds (4 + 32 B; the second child's are in
//                 registers), and writes its flag (4 B); all 2n - 1 nodes are written once
//                 (48 B: link, bounds); each internal node's LbvhWideNode is written once
//                 (64 B), after reading the sorted id at its sibling's far end (4 B: a leaf
//                 sibling's box id). The two-kernel build it replaced also read every leaf's link,
//                 each internal node's link and its other child's bounds (16 n + 48 (n - 1) B more)
//                 and wrote as much.
//                 A tree too large for one descriptor: lbvh_build_soa reads as much but the
//                 sibling's id and writes the 48 B of each node into three arrays, no wide
//                 record; lbvh_assemble then reads each node's 48 B and, per internal node, its
//                 children's (96 B), and writes every node (48 B) and wide record (64 B).
//   all pairs     lbvh_pairs reads each leaf once as a member of its group (48 B), and per
//                 expanded node its LbvhWideNode (64 B: before the wide records, its link and
//                 both children's nodes, 16 + 96 B; before the groups, one walk per leaf
//                 expanded 2.2 times as many at uniform:100000); each queued item a later round
//                 resumes loads its group's kPairGroup leaves again (48 B each; the last,
//                 shorter group counted whole); writes 8 B per stored pair (find_pairs: its
//                 64-bit sort key i << b | j). The work queue's items themselves (8 B each way,
//                 only past an invocation's budget) are not counted.
//                 find_pairs counts every attempt (a pass that overflowed its pair
//                 buffer, work queue or rounds runs again): 48 B per query leaf each time,
//                 the attempts' expanded nodes and stored pairs summed.
//   pair sort     find_pairs only: RadixSort::traffic of the stored keys (2 words, 2b key
//                 bits, keys only).
std::array<Traffic, kQueries - 1> stage_traffic(std::uint32_t n, CodeKind code, bool refine,
                                                bool recorded, bool refined, bool soa,
                                                SortPath sort_path, std::uint64_t visits,
                                                std::uint64_t resumed, std::uint64_t stored_pairs,
                                                std::array<std::uint32_t, kQueries - 1>& passes) {
    std::array<Traffic, kQueries - 1> t{};
    passes.fill(0);
    if (n == 0) return t;
    const std::uint64_t m = n, groups = div_up(n, kWorkgroupSize);
    const std::uint32_t words = key_words(code);
    t[0] = {32 * m + 24 * groups, 24 * groups};
    t[1] = {32 * m + 32 * groups, (4ull * words + 4) * m};
    std::uint32_t sort_passes = 0;
    std::uint32_t hierarchy_words = words;
    if (!refinable(code) || !refine) {
        t[2] = RadixSort::traffic(n, words, key_bits(code), false, sort_path, &sort_passes);
    } else {
        t[2] = RadixSort::traffic(n, 1, key_bits(code), false, sort_path, &sort_passes);
        t[2] += {4 * m, 0};  // code_runs
        const std::uint32_t bits = refined_sort_bits(n);
        if (refined) {
            const bool odd = (RadixSort::passes(bits) & 1) != 0;
            t[2] += {(4 + 36) * m, 4 * m};                        // run_bounds
            t[2] += {(4 + 4 + 36 + 24) * m, (odd ? 12 : 8) * m};  // refine_codes
            std::uint32_t second = 0;
            t[2] += RadixSort::traffic(n, 2, bits, false, sort_path, &second, false);
            sort_passes += second;
            hierarchy_words = 2;
        } else if (recorded) {
            t[2] += RadixSort::empty_traffic(n, bits, sort_path);
        }
    }
    passes[2] = sort_passes;
    if (!soa) {
        t[3] = {(4ull * hierarchy_words + 4 + 32) * m + (36 + 4) * (m - 1),
                48 * (2 * m - 1) + (4 + 64) * (m - 1)};
    } else {  // lbvh_build_soa, then lbvh_assemble
        t[3] = {(4ull * hierarchy_words + 4 + 32) * m + 36 * (m - 1),
                48 * (2 * m - 1) + 4 * (m - 1)};
        t[3] += {48 * (2 * m - 1) + 96 * (m - 1), 48 * (2 * m - 1) + 64 * (m - 1)};
    }
    t[4] = pairs_traffic(m, visits, resumed, stored_pairs);
    return t;
}

}  // namespace

Traffic pairs_traffic(std::uint64_t n, std::uint64_t visits, std::uint64_t resumed,
                      std::uint64_t stored) {
    return {48 * n + 64 * visits + 48ull * kPairGroup * resumed, 8 * stored};
}

LbvhRequirements lbvh_requirements(std::uint32_t n, CodeKind code, bool refine, bool soa) {
    return {n * VkDeviceSize(sizeof(GpuBox)), lbvh_tree_bytes(n),
            scratch_layout({}, n, code, refine, soa).size};
}

std::vector<BindingSize> lbvh_bindings(std::uint32_t n, CodeKind code, bool refine) {
    const ScratchLayout s = scratch_layout({}, n, code, refine, false);
    const bool refined = refinable(code) && refine;
    // Per box: boxes 32 B, nodes 96 B (2n - 1 of 48), wide nodes 64 B (n - 1 of 64), keys 4 or
    // 20 B (refinable: the first codes and two 8-byte arrays), run bounds 24 B, the sort's state
    // about 2 B (RadixSort::scratch_size: one-sweep look-back rows of 8 passes), and a split tree's
    // link, lo and hi arrays 32 B (2n - 1 of 16).
    return {
        {"the box buffer", n * VkDeviceSize(sizeof(GpuBox))},
        {"the node buffer", lbvh_nodes_bytes(n), sizeof(LbvhNode)},
        {"the wide node buffer", lbvh_wide_bytes(n), sizeof(LbvhWideNode)},
        // Refined, the hierarchy binds the three key arrays as one range.
        {"the sort-key buffer",
         refined ? s.keys_tmp.offset + s.keys_tmp.size - s.keys.offset : s.keys.size},
        {"the run bounds buffer", refined ? s.run_bounds.size : 0},
        {"the sort scratch", s.sort.size},
        {"the node bounds the build writes before assembling a split tree", soa_array_bytes(n)}};
}

namespace {
// What record_build_stages records: every step; the check of the codes without the
// refinement's later steps (the host helpers' refinement on demand); or a continuation of such
// a build whose check found a long run: the refinement's steps and the hierarchy alone, over
// the first sort's keys and ids, code_runs' refine word, arguments and run heads, which the
// scratch still holds.
enum class BuildSteps { all, check, refinement };
Status record_build_stages(LbvhImpl& im, VkCommandBuffer cmd, const LbvhBuildBuffers& buffers,
                           std::uint32_t n, VkQueryPool pool, std::uint32_t first_query,
                           DispatchGate* gate, BuildSteps steps = BuildSteps::all);
}  // namespace

struct Lbvh::Impl {
    Context* context = nullptr;
    LbvhOptions options;
    RadixSort sort;
    TraversalRounds rounds;
    // build writes a tree bound whole; build_soa and assemble a tree too large for one
    // descriptor (shaders/lbvh/lbvh_build.glsl).
    Kernel bounds, codes, code_runs, run_bounds, refine_codes, build, build_soa, assemble, pairs;
    Timestamps stamps;  // kQueries: the stage boundaries of the host helpers' recordings
    StageTimes times;
    // Context::Impl::dispatches_recorded at each timestamp of the last timed recording
    // (stage k's dispatches are marks[k + 1] - marks[k]), and the last find_pairs' expanded
    // nodes and pairs, from which last_report() models the traffic.
    std::array<std::uint64_t, kQueries> marks{};
    std::uint64_t last_visits = 0, last_resumed = 0, last_pairs = 0;
    // Every attempt of the last find_pairs' pairs pass counts in its report (a pass that
    // overflowed its buffers or rounds runs again): the attempts, their expanded nodes and
    // stored pairs summed, and the dispatches of the attempts after the first (timed into
    // times.pairs with sort_stamps).
    std::uint32_t pair_attempts = 0;
    std::uint64_t stored_pairs = 0, rerun_dispatches = 0;
    // find_pairs' sort of the pair keys: its two timestamps and dispatch marks.
    Timestamps sort_stamps;
    std::array<std::uint64_t, 2> sort_marks{};
    bool has_report = false;
    // Refinement on demand (LbvhOptions::refine_on_demand): whether the host helpers' next
    // build records the refinement's steps (a build of this Lbvh found a run of kRefineRun
    // equal codes, and none since has found none), and whether the last timed build did.
    bool refine_expected = false;
    bool built_refinement = true;
    // A helper build that left out the refinement's steps and whose check found a long run is
    // continued, not done again: the next helper build records the refinement's steps and the
    // hierarchy alone (BuildSteps::refinement), and its times and report add the check's
    // stages (scene bounds, codes, the first sort and code_runs), carried here.
    bool continue_refinement = false;
    struct Carried {
        double bounds = 0, codes = 0, sort = 0;
        std::array<std::uint64_t, 3> dispatches{};
    } carried;
    HeldBackPasses held_back;  // find_pairs' passes over a tree about to be continued
    // Working buffers of the host-array helpers, grown on demand.
    Buffer boxes, nodes, scratch, pair_buffer, status, work, keys_tmp, sort_scratch;
    std::uint32_t pair_capacity = 0;
    std::uint32_t work_capacity = 0;
    std::uint32_t last_n = 0;  ///< boxes of the last host-array build

    // Whether a tree of n boxes is too large for one descriptor on this device: built by
    // build_soa into scratch arrays, then written by assemble's split variant.
    bool soa(std::uint64_t n) const { return assemble.needs_split(n); }

    // The build's kernels for this code kind and refine option (the refinement's only when it
    // runs; run_bounds and refine_codes only when recorded: `refinement`), compiled on the
    // first build; for a tree of n boxes too large for one descriptor, build_soa and
    // assemble's split variant instead of build.
    Status ready_build(std::uint64_t n, bool refinement = true) const {
        if (Status s = ready({&bounds, &codes}); !s) return s;
        if (Status s = soa(n) ? ready_for_tree(n, {&build_soa, &assemble}) : build.ready(); !s)
            return s;
        if (Status s = sort.ready_sort(); !s) return s;
        if (!refinable(options.code) || !options.refine) return {};
        if (!refinement) return code_runs.ready();
        return ready({&code_runs, &run_bounds, &refine_codes});
    }

    // The all-pairs traversal's kernels, compiled on the first pairs pass (the split variant
    // for trees of up to n boxes that need it).
    Status ready_pairs(std::uint64_t n) const {
        if (Status s = pairs.ready_for_tree(n); !s) return s;
        return rounds.ready();
    }

    Status ensure(Buffer& buffer, VkDeviceSize size) { return grow_buffer(*context, buffer, size); }

    Status prepare(std::span<const Box> input) {
        if (Status s = validate_boxes(input); !s) return s;
        if (input.size() >= (1ull << 31))
            return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 boxes per LBVH"};
        auto n = static_cast<std::uint32_t>(input.size());
        last_n = n;
        has_report = false;  // until find_pairs finishes over these boxes
        if (Status s = check_bindings(device_limits(context->info()),
                                      "an LBVH of " + std::to_string(n) + " boxes",
                                      lbvh_bindings(n, options.code, options.refine));
            !s)
            return s;
        const LbvhRequirements req = requirements(n);
        if (Status s = ensure(boxes, req.boxes); !s) return s;
        if (Status s = ensure(nodes, req.nodes); !s) return s;
        if (Status s = ensure(scratch, req.scratch); !s) return s;
        // The status, and after it the build's refine word (find_pairs copies it there).
        if (Status s = ensure(status, sizeof(TraversalStatus) + 4); !s) return s;
        if (work_capacity == 0) {
            work_capacity = default_traversal_capacity(n, context->info().max_storage_buffer_range);
            if (Status s = ensure(work, traversal_work_bytes(work_capacity)); !s) return s;
        }
        return upload_boxes(*context, boxes, input);
    }

    LbvhRequirements requirements(std::uint32_t n) const {
        return lbvh_requirements(n, options.code, options.refine, soa(n));
    }

    LbvhBuildBuffers build_buffers() const { return {whole(boxes), whole(nodes), whole(scratch)}; }

    // The report of the last find_pairs (times, dispatches between the marks, traffic), given
    // whether its build refined the codes.
    std::vector<StageReport> make_report(bool refined) const {
        std::array<std::uint32_t, kQueries - 1> passes{};
        auto traffic = stage_traffic(last_n, options.code, options.refine, built_refinement,
                                     refined, soa(last_n), sort.path(), last_visits, last_resumed,
                                     stored_pairs, passes);
        if (pair_attempts > 1) traffic[4].read += 48ull * last_n * (pair_attempts - 1);
        const double ms[kQueries - 1] = {times.bounds, times.codes, times.sort, times.hierarchy,
                                         times.pairs};
        static constexpr const char* kNames[kQueries - 1] = {"scene bounds", "codes", "sort",
                                                             "hierarchy + bounds", "all pairs"};
        std::vector<StageReport> report;
        for (std::uint32_t k = 0; k + 1 < kQueries; ++k) {
            StageReport r;
            r.name = kNames[k];
            r.dispatches = static_cast<std::uint32_t>(marks[k + 1] - marks[k] +
                                                      (k < 3 ? carried.dispatches[k] : 0));
            if (k == 4) r.dispatches += static_cast<std::uint32_t>(rerun_dispatches);
            r.bytes_read = traffic[k].read;
            r.bytes_written = traffic[k].written;
            r.ms = ms[k];
            r.passes = passes[k];
            report.push_back(r);
        }
        StageReport sorted;
        sorted.name = "pair sort";
        sorted.dispatches = static_cast<std::uint32_t>(sort_marks[1] - sort_marks[0]);
        if (last_pairs >= 2 && options.sorted_pairs) {
            const Traffic t =
                RadixSort::traffic(static_cast<std::uint32_t>(last_pairs), 2,
                                   2 * pair_key_bits(last_n), true, sort.path(), &sorted.passes);
            sorted.bytes_read = t.read;
            sorted.bytes_written = t.written;
        }
        sorted.ms = times.pair_sort;
        report.push_back(sorted);
        return report;
    }

    // Whether the host helpers may build without recording the refinement's steps
    // (LbvhOptions::refine_on_demand), and whether the next build records them.
    bool on_demand() const {
        return refinable(options.code) && options.refine && options.refine_on_demand;
    }
    bool refinement_next() const { return !on_demand() || refine_expected; }

    // The host helpers' build into the helper buffers, timed with `stamps`, recording the
    // refinement's steps or not (refinement_next()), or continuing a build that left them out
    // (continue_refinement); with refinement on demand, the build's refine word then goes to
    // the status buffer after the TraversalStatus.
    Status record_helper_build(VkCommandBuffer cmd, std::uint32_t n) {
        const bool continuation = continue_refinement;
        continue_refinement = false;
        if (!continuation) carried = {};
        built_refinement = continuation || refinement_next();
        const BuildSteps steps = continuation       ? BuildSteps::refinement
                                 : built_refinement ? BuildSteps::all
                                                    : BuildSteps::check;
        if (Status s = record_build_stages(*this, cmd, build_buffers(), n, stamps.handle(), 0,
                                           nullptr, steps);
            !s)
            return s;
        if (on_demand() && n > 0) {
            compute_barrier(cmd);
            const ScratchLayout s = scratch_layout({}, n, options.code, options.refine, soa(n));
            const VkBufferCopy word{s.refine.offset, sizeof(TraversalStatus), 4};
            vkCmdCopyBuffer(cmd, scratch.handle(), status.handle(), 1, &word);
        }
        return {};
    }

    // After a host helper's build (its times read), given its refine word: whether it must be
    // built again with the refinement's steps (refinement on demand guessed wrong: the codes
    // needed refining; the tree built from the first codes is exact but not the twin's, and
    // slow to walk): then the next helper build continues this one (continue_refinement).
    // Notes for the next build whether the codes needed refining.
    bool rebuild_refined(std::uint32_t refine_word) {
        if (!on_demand()) return false;
        refine_expected = refine_word != 0;
        const bool again = refine_expected && !built_refinement;
        if (again) {
            continue_refinement = true;
            carried = {times.bounds,
                       times.codes,
                       times.sort,
                       {marks[1] - marks[0], marks[2] - marks[1], marks[3] - marks[2]}};
        }
        return again;
    }
    Result<std::uint32_t> read_helper_refine_word() {
        std::uint32_t word = 0;
        if (!on_demand()) return word;
        if (Status d = context->download(status, &word, 4, sizeof(TraversalStatus)); !d)
            return d.error();
        return word;
    }

    // One attempt of find_pairs' pairs pass, recorded into cmd: the first also builds the tree
    // and is timed with it; a rerun (after growing) is timed on its own and added to the pairs.
    Status record_attempt(Lbvh& self, VkCommandBuffer cmd, std::uint32_t n,
                          const LbvhPairBuffers& out, const ProxyPairs& keyed, bool first) {
        compute_barrier(cmd);  // make the staged upload visible to the shaders
        ProxyPairs pass = keyed;
        if (first) {
            stamps.reset(cmd, 0, kQueries);
            if (Status s = record_helper_build(cmd, n); !s) return s;
            // Built without the refinement's steps: the first round launches from the gate
            // code_runs empties when the codes need refining (the tree is then built again,
            // and no pass walks this one: on a run of 100k equal codes that walk took seconds).
            if (!built_refinement && on_demand() && n > 0) {
                const ScratchLayout s =
                    scratch_layout(whole(scratch), n, options.code, options.refine, soa(n));
                pass.first_args = {
                    s.refine_args.buffer,
                    s.refine_args.offset + kArgsPairsGate * sizeof(VkDispatchIndirectCommand),
                    sizeof(VkDispatchIndirectCommand)};
                indirect_barrier(cmd);
            }
        }
        compute_barrier(cmd);
        if (!first) {
            sort_stamps.reset(cmd, 0, 2);
            sort_stamps.write(cmd, 0);
            sort_marks[0] = impl_of(*context).dispatches_recorded;
        }
        if (Status s = record_proxy_pairs(self, cmd, {whole(nodes), n}, out, pass); !s) return s;
        if (first) {
            stamps.write(cmd, kBuildQueries);
            marks[kBuildQueries] = impl_of(*context).dispatches_recorded;
        } else {
            sort_stamps.write(cmd, 1);
            sort_marks[1] = impl_of(*context).dispatches_recorded;
        }
        return Status::success();
    }

    // After an attempt that found `found` pairs with status st: grows what overflowed (the work
    // queue or the pass's rounds, as grow_traversal does for every host helper; then the pair
    // buffer, with headroom for the next frame) and says whether to run the pass again; an
    // error when the limit is reached.
    Result<bool> grow_for_rerun(const TraversalStatus& st, std::uint64_t found,
                                std::uint32_t& pass_rounds) {
        auto grown =
            grow_traversal(*context, work, work_capacity, pass_rounds, {&st, 1}, "all pairs");
        if (!grown) return grown.error();
        if (grown.value()) return true;
        if (found <= pair_capacity) return false;
        // Past 2^32 pairs too: the total is exact in 64 bits (the count saturates).
        if (Status e = check_pair_total(device_limits(context->info()), "Lbvh::find_pairs", found);
            !e)
            return e.error();
        pair_capacity = static_cast<std::uint32_t>(std::min<VkDeviceSize>(
            found + found / 4, context->info().max_storage_buffer_range / 8));
        pair_buffer = Buffer();
        if (Status e = ensure(pair_buffer, pair_capacity * 8ull); !e) return e.error();
        return true;
    }

    // Sorts the first `count` pair keys of pair_buffer (2 * key_bits bits) on the GPU, timed as
    // the "pair sort" stage. count <= pair_capacity, so the keys fit one binding.
    Status sort_pair_keys(std::uint32_t count, std::uint32_t key_bits) {
        if (Status e = ensure(keys_tmp, count * 8ull); !e) return e;
        if (Status e = ensure(sort_scratch, RadixSort::scratch_size(count)); !e) return e;
        SortBuffers sb{};
        sb.keys = first_bytes(whole(pair_buffer), count * 8ull);
        sb.keys_tmp = first_bytes(whole(keys_tmp), count * 8ull);
        sb.scratch = first_bytes(whole(sort_scratch), RadixSort::scratch_size(count));
        Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
            sort_stamps.reset(cmd, 0, 2);
            sort_stamps.write(cmd, 0);
            sort_marks[0] = impl_of(*context).dispatches_recorded;
            sort.record(cmd, sb, count, 2, 2 * key_bits);
            sort_marks[1] = impl_of(*context).dispatches_recorded;
            compute_barrier(cmd);
            sort_stamps.write(cmd, 1);
        });
        if (!s) return s;
        times.pair_sort = sort_stamps.ms(0, 1);
        return Status::success();
    }

    void read_times(bool with_pairs) {
        times = {};
        double span[kQueries - 1] = {};
        if (!stamps.spans(0, (with_pairs ? kQueries : kBuildQueries) - 1, span)) return;
        // A continuation's scene bounds and codes are empty, its sort the refinement alone.
        times.bounds = span[0] + carried.bounds;
        times.codes = span[1] + carried.codes;
        times.sort = span[2] + carried.sort;
        times.hierarchy = span[3];
        if (with_pairs) times.pairs = span[4];
    }
};

Lbvh::Lbvh(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Lbvh::~Lbvh() = default;

// The pairs kernels' tree arrays (lbvh_pairs.glsl): nodes 0 and other nodes 5, wide 7 and
// other wide 8.
constexpr std::uint32_t kPairsNodes = 1u << 0 | 1u << 5;
constexpr std::uint32_t kPairsWide = 1u << 7 | 1u << 8;

Result<std::unique_ptr<Lbvh>> Lbvh::create(Context& context, const LbvhOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    // Nothing is compiled here: each kernel on the first call that records it (Kernel).
    impl->sort = RadixSort(context);
    impl->rounds = TraversalRounds(context);
    impl->bounds = Kernel(context, shaders::scene_bounds, 2, "scene_bounds");
    impl->codes = Kernel(context, shaders::morton_codes, 4, "morton_codes");
    impl->code_runs = Kernel(context, shaders::code_runs, 6, "code_runs");
    impl->run_bounds = Kernel(context, shaders::run_bounds, 6, "run_bounds");
    impl->refine_codes = Kernel(context, shaders::refine_codes, 8, "refine_codes");
    impl->build = Kernel(context, shaders::lbvh_build, 7, "lbvh_build");
    impl->build_soa = Kernel(context, shaders::lbvh_build_soa, 8, "lbvh_build_soa");
    impl->assemble = assemble_kernel(context);
    if (options.pair_budget > kTraversalBudget)
        return Error{
            ErrorCode::invalid_argument,
            "LbvhOptions::pair_budget " + std::to_string(options.pair_budget) +
                " is above gpu_layout::kTraversalBudget = " + std::to_string(kTraversalBudget)};
    if (options.query_budget > kTraversalBudget)
        return Error{
            ErrorCode::invalid_argument,
            "LbvhOptions::query_budget " + std::to_string(options.query_budget) +
                " is above gpu_layout::kTraversalBudget = " + std::to_string(kTraversalBudget)};
    if (options.pair_stack > kPairStack)
        return Error{ErrorCode::invalid_argument,
                     "LbvhOptions::pair_stack " + std::to_string(options.pair_stack) +
                         " is above gpu_layout::kPairStack = " + std::to_string(kPairStack)};
    const bool ballot = context.info().subgroup_ballot;
    if (options.pair_append == PairAppend::subgroup && !ballot)
        return Error{ErrorCode::unsupported,
                     "LbvhOptions::pair_append subgroup: device '" + context.info().name +
                         "' has no subgroup ballot in compute shaders (use automatic or atomic)"};
    // automatic: subgroup on GPUs with ballot. Not on CPU devices: on lavapipe (subgroup
    // size 8) the ballot path measured slower than one atomic per pair (docs/performance.md).
    const bool gpu_type = context.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU;
    const bool subgroup = options.pair_append == PairAppend::subgroup ||
                          (options.pair_append == PairAppend::automatic && ballot && gpu_type);
    impl->pairs = subgroup ? Kernel(context, shaders::lbvh_pairs_subgroup, 9, "lbvh_pairs_subgroup",
                                    {shaders::lbvh_pairs_subgroup_split, kPairsNodes, kPairsWide})
                           : Kernel(context, shaders::lbvh_pairs, 9, "lbvh_pairs",
                                    {shaders::lbvh_pairs_split, kPairsNodes, kPairsWide});
    impl->options.pair_append = subgroup ? PairAppend::subgroup : PairAppend::atomic;
    auto stamps = Timestamps::create(context, kQueries);
    if (!stamps) return stamps.error();
    impl->stamps = std::move(stamps.value());
    auto sort_stamps = Timestamps::create(context, 2);
    if (!sort_stamps) return sort_stamps.error();
    impl->sort_stamps = std::move(sort_stamps.value());
    return std::unique_ptr<Lbvh>(new Lbvh(std::move(impl)));
}

PairAppend Lbvh::pair_append() const {
    return impl_->options.pair_append;
}

LbvhRequirements Lbvh::requirements(std::uint32_t n) const {
    return impl_->requirements(n);
}

namespace {

// Lbvh::record_build, optionally with its dispatches gated (DispatchGate): checks the ranges,
// then records. Without `refinement` (the host helpers' refinement on demand) code_runs still
// writes the refine word but the refinement's later steps are not recorded, and the hierarchy
// reads the first codes.
Status record_build_stages(LbvhImpl& im, VkCommandBuffer cmd, const LbvhBuildBuffers& buffers,
                           std::uint32_t n, VkQueryPool pool, std::uint32_t first_query,
                           DispatchGate* gate, BuildSteps steps) {
    const bool refinement = steps != BuildSteps::check;
    const bool fresh = steps != BuildSteps::refinement;
    if (n >= (1u << 31))
        return Error{ErrorCode::limit_exceeded,
                     "Lbvh::record_build: at most 2^31 - 1 boxes per LBVH; nothing was recorded"};
    const LbvhRequirements req = im.requirements(n);
    if (Status st = check_ranges(impl_of(*im.context), "Lbvh::record_build",
                                 {{"boxes", buffers.boxes, req.boxes},
                                  {"nodes", buffers.nodes, req.nodes, false},
                                  {"scratch", buffers.scratch, req.scratch, false}});
        !st)
        return st;
    // The arrays of the scratch are bound one by one: each within the limit too (never
    // reached while the nodes fit, every one being smaller).
    if (Status st = check_bindings(device_limits(im.context->info()), "Lbvh::record_build",
                                   lbvh_bindings(n, im.options.code, im.options.refine));
        !st)
        return st;
    if (Status st = im.ready_build(n, refinement); !st) return st;
    CodeKind code = im.options.code;
    const bool soa = im.soa(n);
    ScratchLayout s = scratch_layout(buffers.scratch, n, code, im.options.refine, soa);
    const BufferRange boxes = first_bytes(buffers.boxes, req.boxes);
    const TreeBindings tree = tree_bindings(buffers.nodes, n);
    PushConstants pc{};
    pc.count = n;
    pc.key_words = key_words(code);
    // A stage boundary: its timestamp, and the dispatches recorded so far.
    auto mark = [&](std::uint32_t k) {
        write_timestamp(cmd, pool, first_query + k);
        im.marks[k] = impl_of(*im.context).dispatches_recorded;
    };

    mark(0);
    if (fresh && n > 0) {
        fill(cmd, {s.bounds.buffer, s.bounds.offset, 16}, 0xffffffffu);
        fill(cmd, {s.bounds.buffer, s.bounds.offset + 16, 16}, 0u);
        compute_barrier(cmd);
        im.bounds.dispatch(cmd, {boxes, s.bounds}, pc, workgroups(n), gate);
        compute_barrier(cmd);
    }
    mark(1);
    const auto code_kind = static_cast<std::uint32_t>(code);
    pc.key_word = code_kind;
    if (fresh) {
        im.codes.dispatch(cmd, {boxes, s.bounds, s.keys, s.values}, pc, workgroups(n), gate);
        compute_barrier(cmd);
    }
    pc.key_word = 0;
    mark(2);
    // With adaptive codes the hierarchy binds keys and keys_tmp as one range and reads the first
    // codes, or (the refine word says they were made) the refined 64-bit keys in keys_tmp
    // (kBuildRefinable, their first word in pc.offset).
    BufferRange build_keys = s.keys, refine_word = first_bytes(s.keys, 4);
    // With empty slots, one more bit puts the empty code above every real code.
    const std::uint32_t sort_bits = key_bits(code) + (im.options.empty_slots ? 1 : 0);
    if (!fresh) {
        // A continuation: the first sort and code_runs ran in the build it continues.
    } else if (!refinable(code) || !im.options.refine) {
        im.sort.record(cmd, {s.keys, s.values, s.keys_tmp, s.values_tmp, s.sort}, n,
                       key_words(code), sort_bits, gate);
    } else {
        // First codes, then (when a run of equal codes is long) second codes in each run's
        // bounds and a second, stable sort of the 64-bit keys (lbvh::refine_codes). code_runs
        // decides: it writes the refine word and the indirect arguments of the later steps,
        // which launch no workgroup on a scene without a long run (gated, they run and return).
        const BufferRange first_keys = first_words(s.keys, n);
        im.sort.record(cmd,
                       {first_keys, s.values, first_words(s.keys_tmp, n), s.values_tmp, s.sort}, n,
                       1, sort_bits, gate);
        fill(cmd, s.refine, 0u);
        // The refinement's own slots (kArgsSlots); the gate's is written only when it is used.
        fill(cmd, first_bytes(s.refine_args, kArgsSlots * sizeof(VkDispatchIndirectCommand)), 0u);
        if (!refinement) {
            // The all-pairs pass's first round (one invocation per kPairGroup leaves), which
            // code_runs empties when the codes need refining (kArgsPairsGate).
            const GroupCounts g = fold_groups(workgroups(div_up(n, kPairGroup)),
                                              im.context->info().max_workgroup_count_x);
            const VkDispatchIndirectCommand round{g.x, g.y, 1};
            vkCmdUpdateBuffer(cmd, s.refine_args.buffer,
                              s.refine_args.offset + kArgsPairsGate * sizeof(round), sizeof(round),
                              &round);
        }
        compute_barrier(cmd);
        pc.offset = std::max<std::uint32_t>(im.context->info().max_workgroup_count_x, 1);
        im.code_runs.dispatch(cmd,
                              {first_keys, s.values, boxes, s.run_bounds, s.refine, s.refine_args},
                              pc, workgroups(n), gate);
        pc.offset = 0;
        compute_barrier(cmd);
    }
    if (refinable(code) && im.options.refine && refinement) {
        const BufferRange first_keys = first_words(s.keys, n);
        const BufferRange& elements = s.refine_args;  // slot kArgsElements
        auto refine_step = [&](const Kernel& kernel, std::initializer_list<BufferRange> bindings) {
            if (gate)
                kernel.dispatch(cmd, bindings, pc, workgroups(n), gate);
            else
                kernel.dispatch_indirect(cmd, bindings, pc, elements);
            compute_barrier(cmd);
        };
        if (!gate) indirect_barrier(cmd);
        refine_step(im.run_bounds, {first_keys, s.flags, s.values, boxes, s.run_bounds, s.refine});
        // The second sort's keys run_start << 30 | second (refine_codes.comp) take
        // refined_sort_bits(n) bits; an odd number of passes leaves the sorted keys in keys_tmp
        // and, from the ids refine_codes copies to values_tmp, the sorted ids in values (no copy
        // back, which would also run when nothing is refined).
        const std::uint32_t bits = refined_sort_bits(n);
        const bool odd = (RadixSort::passes(bits) & 1) != 0;
        pc.key_word = code_kind;
        pc.flags = odd ? 1u : 0u;
        refine_step(im.refine_codes, {first_keys, s.values, boxes, s.flags, s.run_bounds, s.refine,
                                      s.sorted_keys, s.values_tmp});
        pc.key_word = 0;
        pc.flags = 0;
        // The refine word is n or 0: the sort orders all keys or none.
        SortBuffers second{s.sorted_keys, odd ? s.values_tmp : s.values, s.keys_tmp,
                           odd ? s.values : s.values_tmp, s.sort};
        second.copy_back = false;
        second.count = s.refine;
        if (!gate) {
            second.args = s.refine_args;
            second.all_or_nothing = true;
        }
        im.sort.record(cmd, second, n, 2, bits, gate);
        refine_word = s.refine;
        build_keys.size = s.keys_tmp.offset + s.keys_tmp.size - s.keys.offset;
        const BufferRange& sorted = odd ? s.keys_tmp : s.sorted_keys;
        pc.offset = static_cast<std::uint32_t>((sorted.offset - s.keys.offset) / 4);
        pc.flags = kBuildRefinable;
    }
    mark(3);
    // Hierarchy and bounds in one pass; its split slots start empty (0).
    if (n > 1) fill(cmd, s.flags, 0u);
    compute_barrier(cmd);
    if (!soa) {
        im.build.dispatch(
            cmd, {build_keys, s.values, boxes, tree.nodes, s.flags, tree.wide, refine_word}, pc,
            workgroups(n), gate);
    } else {
        im.build_soa.dispatch(
            cmd,
            {build_keys, s.values, boxes, s.node_lo, s.flags, s.node_hi, s.node_link, refine_word},
            pc, workgroups(n), gate);
        compute_barrier(cmd);
        record_assemble(im.assemble, cmd, {s.node_lo, s.node_hi, s.node_link}, tree, n, false,
                        gate);
    }
    pc.flags = 0;
    pc.offset = 0;
    mark(4);
    return {};
}

}  // namespace

Status Lbvh::record_build(VkCommandBuffer cmd, const LbvhBuildBuffers& buffers, std::uint32_t n,
                          VkQueryPool pool, std::uint32_t first_query) {
    return record_build_stages(*impl_, cmd, buffers, n, pool, first_query, nullptr);
}

Status record_gated_build(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhBuildBuffers& buffers,
                          std::uint32_t n, DispatchGate& gate) {
    return record_build_stages(impl_of(lbvh), cmd, buffers, n, VK_NULL_HANDLE, 0, &gate);
}

Traffic build_traffic(const Lbvh& lbvh, std::uint32_t n, bool refined, std::uint32_t* passes) {
    const LbvhImpl& im = impl_of(lbvh);
    std::array<std::uint32_t, kQueries - 1> stage_passes{};
    const auto t = stage_traffic(n, im.options.code, im.options.refine, true, refined, im.soa(n),
                                 im.sort.path(), 0, 0, 0, stage_passes);
    Traffic sum;
    for (std::size_t k = 0; k + 1 < t.size(); ++k) sum += t[k];
    if (passes) *passes = stage_passes[2];
    return sum;
}

std::vector<BindingSize> build_bindings(const Lbvh& lbvh, std::uint32_t n) {
    const LbvhImpl& im = impl_of(lbvh);
    return lbvh_bindings(n, im.options.code, im.options.refine);
}

Traffic build_fill_traffic(const Lbvh& lbvh, std::uint32_t n) {
    const LbvhImpl& im = impl_of(lbvh);
    if (n == 0) return {};
    const bool refine = refinable(im.options.code) && im.options.refine;
    return {0, 32 + (refine ? 4u : 0u) + (n > 1 ? 4ull * n : 0)};
}

HeldBackPasses held_back_passes(const Lbvh& lbvh) {
    return impl_of(lbvh).held_back;
}

Result<bool> read_build_refined(Lbvh& lbvh, const Buffer& scratch, std::uint32_t n) {
    LbvhImpl& im = impl_of(lbvh);
    if (!refinable(im.options.code) || !im.options.refine || !scratch.handle() || n == 0)
        return false;
    std::uint32_t word = 0;
    const ScratchLayout s = scratch_layout({}, n, im.options.code, im.options.refine, im.soa(n));
    if (Status d = im.context->download(scratch, &word, 4, s.refine.offset); !d) return d.error();
    return word != 0;
}

Kernel assemble_kernel(Context& context) {
    return Kernel(context, shaders::lbvh_assemble, 5, "lbvh_assemble",
                  {shaders::lbvh_assemble_split, 1u << 3, 1u << 4});
}

void record_assemble(const Kernel& assemble, VkCommandBuffer cmd,
                     const std::array<BufferRange, 3>& arrays, const TreeBindings& tree,
                     std::uint32_t n, bool bounds_only, DispatchGate* gate) {
    PushConstants pc{};
    pc.count = n;
    pc.flags = bounds_only ? 1u : 0u;  // lbvh_assemble.comp: the links stay the build's
    assemble.dispatch(cmd, {arrays[0], arrays[1], arrays[2], tree.nodes, tree.wide}, pc,
                      workgroups(2ull * n - 1), gate);
}

std::array<BufferRange, 2> build_soa_bounds(const Lbvh& lbvh, const BufferRange& scratch,
                                            std::uint32_t n) {
    const LbvhImpl& im = impl_of(lbvh);
    if (!im.soa(n)) return {};
    const ScratchLayout s = scratch_layout(scratch, n, im.options.code, im.options.refine, true);
    return {s.node_lo, s.node_hi};
}

Result<std::vector<LbvhWideNode>> download_wide_nodes(Context& context, const Buffer& tree_buffer,
                                                      std::uint32_t n) {
    std::vector<LbvhWideNode> wide(n > 1 ? n - 1 : 0);
    if (wide.empty()) return wide;
    if (Status d = context.download(tree_buffer, wide.data(), wide.size() * sizeof(LbvhWideNode),
                                    lbvh_wide_offset(n));
        !d)
        return d.error();
    return wide;
}

const Buffer& helper_nodes(const Lbvh& lbvh) {
    return impl_of(lbvh).nodes;
}

Status ready_lbvh_kernels(Lbvh& lbvh, std::uint64_t tree_boxes) {
    const LbvhImpl& im = impl_of(lbvh);
    if (Status s = im.ready_build(tree_boxes); !s) return s;
    return im.ready_pairs(tree_boxes);
}

Status Lbvh::record_pairs(VkCommandBuffer cmd, const LbvhTree& tree, const LbvhPairBuffers& out) {
    return record_proxy_pairs(*this, cmd, tree, out, {});
}

Status record_proxy_pairs(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhTree& tree,
                          const LbvhPairBuffers& out, const ProxyPairs& proxy) {
    LbvhImpl& im = impl_of(lbvh);
    const std::uint32_t n = tree.n;
    const bool cross = proxy.cross;
    const std::uint32_t m = proxy.other.n;
    const VkDeviceSize pair_bytes = std::max<VkDeviceSize>(out.capacity * 8ull, 8);
    const VkDeviceSize work_bytes = work_range_bytes(out.traversal);
    const bool slotted = proxy.slots.buffer != VK_NULL_HANDLE;
    const VkDeviceSize slot_bytes = slotted ? std::max<std::uint32_t>(n, 1) * 16ull : 0;
    const VkDeviceSize other_bytes = cross ? lbvh_tree_bytes(m) : 0;
    const VkDeviceSize other_slot_bytes = cross ? std::max<std::uint32_t>(m, 1) * 16ull : 0;
    if (Status st =
            check_ranges(impl_of(*im.context), "Lbvh::record_pairs",
                         {{"nodes", tree.nodes, lbvh_tree_bytes(n), false, tree_binding_sizes(n)},
                          {"pairs", out.pairs, pair_bytes},
                          {"status", out.status, sizeof(TraversalStatus)},
                          {"work", out.traversal.work, work_bytes},
                          {"slots", proxy.slots, slot_bytes},
                          {"other nodes", proxy.other.nodes, other_bytes, false,
                           tree_binding_sizes(m, "the other tree's node buffer",
                                              "the other tree's wide node buffer")},
                          {"other slots", proxy.other_slots, other_slot_bytes}});
        !st)
        return st;
    if (Status st = im.ready_pairs(std::max(n, m)); !st) return st;
    const BufferRange status = first_bytes(out.status, sizeof(TraversalStatus));
    if (proxy.first_round > 0) {
        // A continuation: the status and queue are the pass's, as its first rounds left them.
    } else if (proxy.append) {
        // Continue the counters (pairs, flags, visits) of the passes before; clear the queues,
        // the rounds and the arguments (words 4 to 11).
        fill(cmd, {status.buffer, status.offset + 16, 32}, 0u);
    } else {
        fill(cmd, status, 0u);
    }
    compute_barrier(cmd);
    if (cross && (n == 0 || m == 0)) return {};
    PushConstants pc{};
    pc.count = n;
    pc.capacity = out.capacity;
    pc.tiles = out.traversal.capacity;
    pc.flags = (slotted ? kPairsProxies : 0u) | (cross ? kPairsCross : 0u) |
               (proxy.append ? kPairsAppend : 0u) | (proxy.key_bits > 0 ? kPairsKeys : 0u);
    pc.key_words = proxy.key_bits;
    pc.offset = m;
    pc.key_word = im.options.pair_stack;  // stack entries before queueing (0: kPairStack)
    const TreeBindings self = tree_bindings(tree.nodes, n);
    const BufferRange nodes = self.nodes;
    const BufferRange pairs = first_bytes(out.pairs, pair_bytes);
    const BufferRange work = first_bytes(out.traversal.work, work_bytes);
    // Unused bindings take the first node (never read; a whole split array would be over
    // one descriptor's limit).
    const BufferRange unused = first_bytes(nodes, sizeof(LbvhNode));
    const BufferRange slots = slotted ? first_bytes(proxy.slots, slot_bytes) : unused;
    const TreeBindings other = cross ? tree_bindings(proxy.other.nodes, m) : self;
    const BufferRange other_slots =
        cross ? first_bytes(proxy.other_slots, other_slot_bytes) : unused;
    // Unless the caller set one, the first round's groups walk for kPairGroup leaves each:
    // LbvhOptions::pair_budget, by default kPairGroup times the device's budget (layout/common.h,
    // kPairGroup), at most kTraversalBudget. Later rounds, only for walks that round left
    // unfinished (a box over half the scene, say), take the device's budget: on an H200 a
    // level:1000000 pass took 5.44 ms with 512 steps in every round, 2.16 ms with 64 in every
    // round and 1.93 ms with 512 then 64 (docs/performance.md, run h).
    const auto [traversal, later_budget] =
        im.rounds.with_first_round(out.traversal, im.options.pair_budget, kPairGroup);
    im.rounds.record_kernel(
        cmd, status, traversal, im.pairs,
        {nodes, pairs, status, work, slots, other.nodes, other_slots, self.wide, other.wide}, pc,
        workgroups(div_up(n, kPairGroup)), proxy.first_round,  // one invocation per group
        later_budget, proxy.first_args);
    return {};
}

Result<std::vector<Pair>> Lbvh::find_pairs(std::span<const Box> input) {
    Impl& im = *impl_;
    if (Status s = im.prepare(input); !s) return s.error();
    auto n = static_cast<std::uint32_t>(input.size());
    if (im.pair_capacity == 0) {
        const VkDeviceSize max_pairs = im.context->info().max_storage_buffer_range / 8;
        im.pair_capacity = static_cast<std::uint32_t>(
            std::min<VkDeviceSize>(std::max(4ull * n, 1024ull), max_pairs));
        if (Status s = im.ensure(im.pair_buffer, im.pair_capacity * 8ull); !s) return s.error();
    }
    bool first = true;
    // Each attempt records round 0 and the finish alone, and continuations with later rounds
    // only while its status says items are queued: a pass whose first round finishes costs
    // two dispatches. The continuations reach kTraversalMaxRounds, so for grow_for_rerun work
    // left after them is an error, not a reason to record more rounds.
    std::uint32_t rounds = kTraversalMaxRounds;
    std::uint64_t found = 0;
    // The pairs pass stores each pair as its key i << b | j, which the GPU sorts after it (the
    // keys of a few million pairs sort in well under a millisecond there; std::sort of the
    // pairs on one host core takes 146 ms for 2M pairs and 1.9 s for 20M).
    ProxyPairs keyed;
    keyed.key_bits = pair_key_bits(n);
    im.pair_attempts = 0;
    im.stored_pairs = 0;
    im.rerun_dispatches = 0;
    std::uint64_t visits_all = 0, resumed_all = 0;
    while (true) {
        const std::uint32_t capacity = im.pair_capacity;
        LbvhPairBuffers out{whole(im.pair_buffer),
                            im.pair_capacity,
                            whole(im.status),
                            {whole(im.work), im.work_capacity, 1}};
        // An attempt, then (with first_round) its continuation; a rerun or continuation is
        // timed on its own and added to the pairs stage.
        auto submit = [&](const ProxyPairs& pass) -> Status {
            Status recorded;
            Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
                recorded = im.record_attempt(*this, cmd, n, out, pass, first);
            });
            if (!s) return s;
            if (!recorded) return recorded;
            if (first) {
                im.read_times(true);
            } else {
                im.times.pairs += im.sort_stamps.ms(0, 1);
                im.rerun_dispatches += im.sort_marks[1] - im.sort_marks[0];
            }
            first = false;
            return Status::success();
        };
        // Whether this submission built a tree whose refine word came back (none for no box).
        const bool built = first && n > 0;
        if (Status s = submit(keyed); !s) return s.error();
        // The status, and with refinement on demand the build's refine word after it.
        struct {
            TraversalStatus st;
            std::uint32_t refine_word;
        } read{};
        static_assert(sizeof(read) == sizeof(TraversalStatus) + 4);
        if (Status d = im.context->download(
                im.status, &read, built && im.on_demand() ? sizeof(read) : sizeof(TraversalStatus));
            !d)
            return d.error();
        TraversalStatus st = read.st;
        if (built && im.rebuild_refined(read.refine_word)) {
            ++im.held_back.count;
            im.held_back.last = st;
            // The build left out the refinement and the codes needed it: continued with the
            // refinement's steps, the hierarchy and the pairs (Impl::rebuild_refined; the
            // report adds the check's stages to that run's).
            first = true;
            im.pair_attempts = 0;
            im.stored_pairs = 0;
            im.rerun_dispatches = 0;
            visits_all = resumed_all = 0;
            continue;
        }
        // Nothing lost but items left: go on where the last round stopped, kTraversalRounds
        // rounds at a time, up to kTraversalMaxRounds (which always finish).
        while (st.flags == kTraversalIncomplete && st.rounds < kTraversalMaxRounds) {
            ProxyPairs rest = keyed;
            rest.first_round = st.rounds;
            out.traversal.rounds = std::min(st.rounds + kTraversalRounds, kTraversalMaxRounds);
            if (Status s = submit(rest); !s) return s.error();
            if (Status d = im.context->download(im.status, &st, sizeof(st)); !d) return d.error();
        }
        found = pair_total(st);
        ++im.pair_attempts;
        visits_all += traversal_visits(st);
        resumed_all += st.resumed;
        im.stored_pairs += std::min<std::uint64_t>(found, capacity);
        auto again = im.grow_for_rerun(st, found, rounds);
        if (!again) return again.error();
        if (!again.value()) break;
    }
    im.last_visits = visits_all;
    im.last_resumed = resumed_all;
    im.last_pairs = found;
    im.times.pair_sort = 0;
    im.sort_marks = {};
    std::vector<Pair> pairs;
    if (found == 0) {
        im.has_report = true;
        return pairs;
    }
    const auto count = static_cast<std::uint32_t>(found);
    if (count >= 2 && im.options.sorted_pairs) {
        if (Status e = im.sort_pair_keys(count, keyed.key_bits); !e) return e.error();
    }
    im.has_report = true;
    // The keys are unpacked where the download lands (no copy of them first).
    Status d = download_by(*im.context, im.pair_buffer, found * 8ull, 0, [&](const void* keys) {
        pairs = unpack_pair_keys(keys, found, keyed.key_bits);
    });
    if (!d) return d.error();
    return pairs;
}

Result<std::vector<LbvhNode>> Lbvh::build_nodes(std::span<const Box> input) {
    Impl& im = *impl_;
    if (Status s = im.prepare(input); !s) return s.error();
    auto n = static_cast<std::uint32_t>(input.size());
    if (n == 0) return std::vector<LbvhNode>{};
    // Again with the refinement's steps when refinement on demand left them out and the codes
    // needed them (Impl::rebuild_refined).
    for (;;) {
        Status recorded;
        Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
            compute_barrier(cmd);
            im.stamps.reset(cmd, 0, kQueries);
            recorded = im.record_helper_build(cmd, n);
            compute_barrier(cmd);
        });
        if (!s) return s.error();
        if (!recorded) return recorded.error();
        im.read_times(false);
        auto word = im.read_helper_refine_word();
        if (!word) return word.error();
        if (!im.rebuild_refined(word.value())) break;
    }
    std::vector<LbvhNode> nodes(2 * n - 1);
    if (Status d = im.context->download(im.nodes, nodes.data(), nodes.size() * sizeof(LbvhNode));
        !d)
        return d.error();
    return nodes;
}

const StageTimes& Lbvh::last_times() const {
    return impl_->times;
}

Result<std::vector<StageReport>> last_report(Lbvh& lbvh) {
    if (!impl_of(lbvh).has_report) return std::vector<StageReport>{};
    auto refined = lbvh.read_refined();
    if (!refined) return refined.error();
    return impl_of(lbvh).make_report(refined.value());
}

Result<bool> Lbvh::read_refined() {
    Impl& im = *impl_;
    if (!refinable(im.options.code) || !im.options.refine || !im.scratch.handle()) return false;
    // The scratch was sized for the largest scene so far: find the word of the last one.
    std::uint32_t word = 0;
    const ScratchLayout s =
        scratch_layout({}, im.last_n, im.options.code, im.options.refine, im.soa(im.last_n));
    if (Status d = im.context->download(im.scratch, &word, 4, s.refine.offset); !d)
        return d.error();
    return word != 0;
}

std::vector<GpuBox> to_gpu_boxes(std::span<const Box> boxes) {
    std::vector<GpuBox> out(boxes.size());
    write_gpu_boxes(boxes, out.data());
    return out;
}

}  // namespace broadphase::gpu
