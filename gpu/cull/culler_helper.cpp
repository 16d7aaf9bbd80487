// Culler's host helper (Culler::cull, cull_views, cull_occluded, cull_lods): validates and
// uploads the boxes, builds the tree in the first submission, records the cull (culler.cpp and
// its features) into buffers of its own, reads the counts back and, when the visible total
// overflowed the output, grows it and culls again; reads per-stage GPU timestamps.
#include <algorithm>
#include <array>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/scene.hpp"
#include "cull/culler_impl.hpp"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/impl_access.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"

namespace broadphase::gpu {

// Reads the timestamps of one submission: the build's (when `build`), the pyramid's (when
// `with_pyramid`) and the cull's.
void Culler::Impl::read_times(bool build, bool with_pyramid) {
    double b[kBuildQueries - 1] = {}, c[kCullQueries - 1] = {};
    if (build && stamps.spans(0, kBuildQueries - 1, b)) times.build = {b[0], b[1], b[2], b[3], 0};
    if (build) times.pyramid = with_pyramid ? stamps.ms(kBuildQueries - 1, kPyramidQuery) : 0;
    if (!stamps.spans(kBuildQueries, kCullQueries - 1, c)) return;
    times.cull = c[0];
    times.compact = c[1];
    times.sort = c[2];
    times.emit = c[3];
}

// The host helpers' common start: validates the boxes, sizes the working buffers (the
// scratch for mesh_count grouped meshes) and uploads the boxes. Returns n.
Result<std::uint32_t> Culler::Impl::prepare(std::span<const Box> input, std::uint32_t mesh_count) {
    if (Status s = validate_boxes(input); !s) return s.error();
    if (input.size() >= (1ull << 31))
        return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 boxes per cull"};
    const auto n = static_cast<std::uint32_t>(input.size());
    const VkDeviceSize scratch_bytes = cull_scratch_layout({}, n, mesh_count).size;
    // The build's bindings, then the cull's own (its 64-bit order keys the largest).
    std::vector<BindingSize> bindings = build_bindings(*lbvh, n);
    bindings.push_back({"the order-key buffer", n * 8ull});
    if (Status s = check_bindings(device_limits(context->info()),
                                  "a cull of " + std::to_string(n) + " boxes", bindings);
        !s)
        return s.error();
    const LbvhRequirements req = lbvh->requirements(n);
    if (Status s = ensure(boxes, std::max<VkDeviceSize>(req.boxes, 4)); !s) return s.error();
    if (Status s = ensure(nodes, req.nodes); !s) return s.error();
    if (Status s = ensure(build_scratch, req.scratch); !s) return s.error();
    if (Status s = ensure(scratch, scratch_bytes); !s) return s.error();
    if (Status s = ensure_output(std::max(capacity, std::min<std::uint32_t>(n, 1024))); !s)
        return s.error();
    if (Status s = upload_boxes(*context, boxes, input); !s) return s.error();
    return n;
}

// One submission of a host helper: the first (`first` true, then cleared) also builds the
// tree over the uploaded boxes and records `first_extra` (when given) after the build;
// every one records `cull` between barriers and reads the stage timestamps.
Status Culler::Impl::submit_cull(std::uint32_t n, bool& first,
                                 const std::function<Status(VkCommandBuffer)>& first_extra,
                                 const std::function<Status(VkCommandBuffer)>& cull) {
    const LbvhBuildBuffers build{whole(boxes), whole(nodes), whole(build_scratch)};
    Status recorded;
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        compute_barrier(cmd);  // make the staged uploads visible to the shaders
        stamps.reset(cmd, 0, kHelperQueries);
        if (first) {
            const std::uint64_t before = dispatches();
            if (!(recorded = lbvh->record_build(cmd, build, n, stamps.handle(), 0))) return;
            build_dispatches = dispatches() - before;
            pyramid_dispatches = 0;
            if (first_extra) {
                const std::uint64_t built = dispatches();
                if (!(recorded = first_extra(cmd))) return;
                pyramid_dispatches = dispatches() - built;
                stamps.write(cmd, kPyramidQuery);
            }
            compute_barrier(cmd);
        }
        marking = true;
        recorded = cull(cmd);
        marking = false;
        compute_barrier(cmd);
    });
    marking = false;
    if (!s) return s;
    if (!recorded) return recorded;
    read_times(first, first && first_extra);
    first = false;
    return {};
}

// cull_views of several views: one submission builds the tree and records every view
// (Culler::record_views) into per-view ranges of `view_out`, each with room for
// `capacity` ids; grown to the largest view's count, and all views culled again, when
// a view overflows.
Result<std::vector<std::vector<std::uint32_t>>> Culler::Impl::cull_views_together(
    Culler& culler, std::uint32_t n, std::span<const Frustum> frusta, CullOrder order) {
    const auto views = static_cast<std::uint32_t>(frusta.size());
    if (Status s = ensure(scratch, culler.views_scratch_size(n, views)); !s) return s.error();
    bool first = true;
    std::vector<std::array<std::uint32_t, 2>> counts(views);
    while (true) {
        const VkDeviceSize ids_bytes = align_up(capacity * 4ull + 4, Arena::kAlignment);
        const VkDeviceSize commands_bytes =
            align_up(capacity * 4ull * kDrawCommandWords + 4, Arena::kAlignment);
        const VkDeviceSize view_bytes = ids_bytes + commands_bytes + Arena::kAlignment;
        if (Status s = ensure(view_out, view_bytes * views); !s) return s.error();
        std::vector<CullOutput> outs;
        for (std::uint32_t v = 0; v < views; ++v) {
            const VkDeviceSize base = v * view_bytes;
            const VkBuffer b = view_out.handle();
            outs.push_back({{b, base, ids_bytes},
                            {b, base + ids_bytes, commands_bytes},
                            {b, base + ids_bytes + commands_bytes, 8},
                            capacity});
        }
        if (Status s = submit_cull(n, first, nullptr,
                                   [&](VkCommandBuffer cmd) {
                                       return culler.record_views(cmd, {whole(nodes), n}, frusta,
                                                                  order, whole(scratch), outs,
                                                                  stamps.handle(), kBuildQueries);
                                   });
            !s)
            return s.error();
        std::uint32_t most = 0;
        for (std::uint32_t v = 0; v < views; ++v) {
            if (Status d =
                    context->download(view_out, counts[v].data(), 8, outs[v].draw_count.offset);
                !d)
                return d.error();
            most = std::max(most, counts[v][1]);
        }
        if (most <= capacity) {
            last = {};
            last.kind = LastCull::Kind::views;
            last.n = n;
            last.views = views;
            last.exact = order == CullOrder::exact;
            last.capacity = capacity;
            for (std::uint32_t v = 0; v < views; ++v) last.visible.push_back(counts[v][1]);
            std::vector<std::vector<std::uint32_t>> result(views);
            for (std::uint32_t v = 0; v < views; ++v) {
                result[v].resize(counts[v][1]);
                if (counts[v][1] == 0) continue;
                if (Status d = context->download(view_out, result[v].data(), counts[v][1] * 4ull,
                                                 outs[v].visible_ids.offset);
                    !d)
                    return d.error();
            }
            return result;
        }
        if (Status e = ensure_output(most + most / 4 > n ? n : most + most / 4); !e)
            return e.error();
    }
}

// The one-view host helpers' submissions: the first also builds the tree (and records
// `first_extra`, when given, after the build); each records `cull` into the output, reads
// the counts and, when the visible total overflowed the output, grows it (with headroom
// for the next call, never past n or the device limit) and culls again. Returns the
// visible ids in order.
Result<std::vector<std::uint32_t>> Culler::Impl::cull_until_fits(
    std::uint32_t n, const std::function<Status(VkCommandBuffer)>& first_extra,
    const std::function<Status(VkCommandBuffer, const CullOutput&)>& cull) {
    bool first = true;
    std::uint32_t counts[2] = {0, 0};
    while (true) {
        const CullOutput out{whole(ids), whole(commands), whole(count), capacity};
        last.capacity = capacity;
        if (Status s = submit_cull(n, first, first_extra,
                                   [&](VkCommandBuffer cmd) { return cull(cmd, out); });
            !s)
            return s.error();
        if (Status d = context->download(count, counts, 8); !d) return d.error();
        if (counts[1] <= capacity) break;
        const VkDeviceSize max_ids =
            context->info().max_storage_buffer_range / (kDrawCommandWords * 4);
        const auto grown = static_cast<std::uint32_t>(
            std::min<VkDeviceSize>(std::min<VkDeviceSize>(counts[1] + counts[1] / 4ull, n),
                                   std::max<VkDeviceSize>(max_ids, counts[1])));
        if (Status e = ensure_output(grown); !e) return e.error();
    }
    last.visible = {counts[1]};
    std::vector<std::uint32_t> visible(counts[1]);
    if (counts[1] > 0) {
        if (Status d = context->download(ids, visible.data(), counts[1] * 4ull); !d)
            return d.error();
    }
    return visible;
}

Status Culler::Impl::ensure_output(std::uint32_t wanted) {
    const VkDeviceSize max_range = context->info().max_storage_buffer_range;
    const VkDeviceSize max_ids = max_range / (kDrawCommandWords * 4);
    if (wanted > max_ids)
        return Error{ErrorCode::limit_exceeded,
                     std::to_string(wanted) +
                         " visible boxes do not fit one storage buffer of draw commands "
                         "(device limit " +
                         std::to_string(max_ids) + ")"};
    if (wanted <= capacity && ids.handle()) return {};
    capacity = std::max<std::uint32_t>(wanted, 1);
    ids = Buffer();
    commands = Buffer();
    if (Status s = ensure(ids, capacity * 4ull); !s) return s;
    if (Status s = ensure(commands, capacity * 4ull * kDrawCommandWords); !s) return s;
    return ensure(count, 8);
}

Result<std::vector<std::uint32_t>> Culler::cull(std::span<const Box> input, const Frustum& frustum,
                                                CullOrder order) {
    auto views = cull_views(input, std::span<const Frustum>(&frustum, 1), order);
    if (!views) return views.error();
    return std::move(views.value().front());
}

Result<std::vector<std::vector<std::uint32_t>>> Culler::cull_views(std::span<const Box> input,
                                                                   std::span<const Frustum> frusta,
                                                                   CullOrder order) {
    Impl& im = *impl_;
    if (frusta.empty() || frusta.size() > kMaxCullViews)
        return Error{ErrorCode::invalid_argument,
                     "Culler::cull_views takes 1 to " + std::to_string(kMaxCullViews) +
                         " views, got " + std::to_string(frusta.size())};
    auto prepared = im.prepare(input, 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    if (frusta.size() > 1) return im.cull_views_together(*this, n, frusta, order);
    im.last = {};
    im.last.kind = LastCull::Kind::plain;
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    auto visible = im.cull_until_fits(n, nullptr, [&](VkCommandBuffer cmd, const CullOutput& out) {
        return record(cmd, {whole(im.nodes), n}, frusta.front(), order, whole(im.scratch), out,
                      im.stamps.handle(), kBuildQueries);
    });
    if (!visible) return visible.error();
    return std::vector<std::vector<std::uint32_t>>{std::move(visible.value())};
}

Result<std::vector<std::uint32_t>> Culler::cull_occluded(
    std::span<const Box> input, const Frustum& frustum, CullOrder order, const DepthPyramid& depth,
    const std::array<float, 16>& view_projection) {
    Impl& im = *impl_;
    auto prepared = im.prepare(input, 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    const std::uint32_t width = depth.width(), height = depth.height();
    const VkDeviceSize level0 = std::size_t(width) * height * 4ull;
    if (Status s = im.ensure(im.pyramid, depth.texels().size() * 4ull); !s) return s.error();
    if (Status s = im.context->upload(im.pyramid, depth.image().data(), level0); !s)
        return s.error();
    const CullOcclusion occlusion{
        OcclusionPhase::single, whole(im.pyramid), width, height, view_projection, {}, 1};
    im.last = {};
    im.last.kind = LastCull::Kind::occluded;
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    im.last.pyramid_width = width;
    im.last.pyramid_height = height;
    // The first submission also builds the pyramid.
    return im.cull_until_fits(
        n,
        [&](VkCommandBuffer cmd) {
            return record_depth_pyramid(cmd, whole(im.pyramid), width, height);
        },
        [&](VkCommandBuffer cmd, const CullOutput& out) {
            return record(cmd, {whole(im.nodes), n}, frustum, order, whole(im.scratch), out,
                          nullptr, occlusion, im.stamps.handle(), kBuildQueries);
        });
}

namespace {

// The instances of each mesh among `mesh_ids`; an error names the first box whose mesh id is
// not below mesh_count.
Result<std::vector<std::uint32_t>> count_instances(std::span<const std::uint32_t> mesh_ids,
                                                   std::uint32_t mesh_count) {
    std::vector<std::uint32_t> instances(mesh_count, 0);
    for (std::size_t i = 0; i < mesh_ids.size(); ++i) {
        if (mesh_ids[i] >= mesh_count) {
            Error e{ErrorCode::invalid_argument, "Culler::cull_lods: box " + std::to_string(i) +
                                                     " has mesh id " + std::to_string(mesh_ids[i]) +
                                                     ", not below the mesh count " +
                                                     std::to_string(mesh_count)};
            e.box = i;
            return e;
        }
        ++instances[mesh_ids[i]];
    }
    return instances;
}

// cull_lods' buffers besides the cull's own (mesh ids, mesh table, group counts), and the
// mesh ids of the n boxes uploaded.
Status stage_lod_inputs(CullerImpl& im, std::uint32_t n, std::span<const std::uint32_t> mesh_ids,
                        std::uint32_t mesh_count) {
    if (Status s = im.ensure(im.mesh_ids, std::max<VkDeviceSize>(n * 4ull, 4)); !s) return s;
    if (Status s = im.ensure(im.mesh_table, mesh_count * sizeof(CullMesh)); !s) return s;
    if (Status s = im.ensure(im.group_counts, (2ull * mesh_count + 1) * 4); !s) return s;
    if (n > 0) return im.context->upload(im.mesh_ids, mesh_ids.data(), n * 4ull);
    return {};
}

// The draws of the last LOD cull, read back: `stored` of them, flat (in the order emitted) or
// grouped per mesh (group m at firsts[m], group_counts[m] draws).
Result<std::vector<CullDraw>> read_lod_draws(CullerImpl& im,
                                             std::span<const std::uint32_t> mesh_ids,
                                             std::uint32_t stored, bool grouped,
                                             std::span<const std::uint32_t> group_counts,
                                             std::span<const std::uint32_t> firsts,
                                             std::uint32_t mesh_count) {
    std::vector<std::uint32_t> ids, lod;
    if (!grouped || stored > 0) {
        const std::uint32_t span = grouped ? firsts.back() : stored;
        ids.resize(span);
        lod.resize(span);
        if (span > 0) {
            if (Status d = im.context->download(im.ids, ids.data(), span * 4ull); !d)
                return d.error();
            if (Status d = im.context->download(im.draw_lods, lod.data(), span * 4ull); !d)
                return d.error();
        }
    }
    std::vector<CullDraw> draws;
    draws.reserve(stored);
    if (!grouped) {
        for (std::uint32_t i = 0; i < stored; ++i)
            draws.push_back({ids[i], mesh_ids[ids[i]], lod[i]});
        return draws;
    }
    for (std::uint32_t m = 0; m < mesh_count; ++m)
        for (std::uint32_t r = 0; r < group_counts[m]; ++r)
            draws.push_back({ids[firsts[m] + r], m, lod[firsts[m] + r]});
    return draws;
}

}  // namespace

Result<std::vector<CullDraw>> Culler::cull_lods(std::span<const Box> input, const Frustum& frustum,
                                                CullOrder order, std::span<const Mesh> meshes,
                                                std::span<const std::uint32_t> mesh_ids,
                                                bool grouped) {
    Impl& im = *impl_;
    if (mesh_ids.size() != input.size())
        return Error{ErrorCode::invalid_argument,
                     "Culler::cull_lods: " + std::to_string(mesh_ids.size()) + " mesh ids for " +
                         std::to_string(input.size()) + " boxes"};
    auto checked = pack_mesh_table(meshes);
    if (!checked) return checked.error();
    const auto mesh_count = static_cast<std::uint32_t>(meshes.size());
    auto counted = count_instances(mesh_ids, mesh_count);
    if (!counted) return counted.error();
    const std::vector<std::uint32_t>& instances = counted.value();
    auto prepared = im.prepare(input, grouped ? mesh_count : 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    if (Status s = stage_lod_inputs(im, n, mesh_ids, mesh_count); !s) return s.error();
    // Grouped: each group starts with room for at most 256 draws (never more than the mesh's
    // instances) and grows to its visible total and a quarter when it overflows.
    std::vector<std::uint32_t> caps(mesh_count);
    for (std::uint32_t m = 0; m < mesh_count; ++m) caps[m] = std::min(instances[m], 256u);
    bool first = true;  // the first submission builds the tree
    std::uint32_t counts[2] = {0, 0};
    im.last = {};
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    im.last.mesh_count = mesh_count;
    im.last.grouped = grouped;
    std::vector<std::uint32_t> group_counts(2ull * mesh_count + 1, 0), firsts;
    while (true) {
        std::uint32_t capacity = im.capacity;
        if (grouped) {
            firsts = group_first(caps);
            capacity = firsts.back();
            if (Status e = im.ensure_output(capacity); !e) return e.error();
        }
        auto table = pack_mesh_table(meshes, grouped ? std::span<const std::uint32_t>(caps)
                                                     : std::span<const std::uint32_t>());
        if (!table) return table.error();
        if (Status s =
                im.context->upload(im.mesh_table, table->data(), mesh_count * sizeof(CullMesh));
            !s)
            return s.error();
        if (Status s = im.ensure(im.draw_lods, std::max<VkDeviceSize>(im.capacity * 4ull, 4)); !s)
            return s.error();
        const CullOutput out{whole(im.ids), whole(im.commands), whole(im.count), capacity};
        im.last.capacity = capacity;
        const CullLods lods{whole(im.mesh_table),   whole(im.mesh_ids), mesh_count, grouped,
                            whole(im.group_counts), whole(im.draw_lods)};
        if (Status s = im.submit_cull(n, first, nullptr,
                                      [&](VkCommandBuffer cmd) {
                                          return record(cmd, {whole(im.nodes), n}, frustum, order,
                                                        whole(im.scratch), out, lods,
                                                        im.stamps.handle(), kBuildQueries);
                                      });
            !s)
            return s.error();
        if (Status d = im.context->download(im.count, counts, 8); !d) return d.error();
        if (!grouped) {
            if (counts[1] <= im.capacity) break;
            const auto grown = static_cast<std::uint32_t>(counts[1] + counts[1] / 4ull);
            if (Status e = im.ensure_output(std::min(grown, n)); !e) return e.error();
            continue;
        }
        if (Status d =
                im.context->download(im.group_counts, group_counts.data(), group_counts.size() * 4);
            !d)
            return d.error();
        bool grew = false;
        for (std::uint32_t m = 0; m < mesh_count; ++m) {
            const std::uint32_t total = group_counts[mesh_count + m];
            if (total <= caps[m]) continue;
            caps[m] = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(total + total / 4ull, instances[m]));
            grew = true;
        }
        if (!grew) break;
    }
    const std::uint32_t stored = counts[0];
    im.last.kind = LastCull::Kind::lods;
    im.last.visible = {counts[1]};
    im.last.stored = stored;
    im.last.runs = 0;
    if (grouped) {
        for (std::uint32_t m = 0; m <= mesh_count; ++m)
            im.last.runs += group_counts[mesh_count + m] > 0 ? 1 : 0;
    }
    return read_lod_draws(im, mesh_ids, stored, grouped, group_counts, firsts, mesh_count);
}

const CullTimes& Culler::last_times() const {
    return impl_->times;
}

std::uint32_t Culler::capacity() const {
    return impl_->capacity;
}

}  // namespace broadphase::gpu
