// The tool's batched query commands over the public API: `query` (boxes against a scene),
// `raycast` (closest hits) and `pairs --against` (set versus set), each by any CPU structure
// (make_structure) or by the GPU LBVH (gpu::LbvhQueries).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "commands.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/lbvh_queries.hpp"
#endif

namespace broadphase::tool {

namespace {

// One query backend: a CPU structure or the GPU LBVH, built over `boxes`.
struct Backend {
    std::unique_ptr<Structure> cpu;
#ifdef BROADPHASE_HAS_GPU
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::LbvhQueries> gpu;
#endif

    static Result<Backend> open(const std::string& method, std::span<const Box> boxes,
                                const Args& args) {
        Backend b;
        if (Status s = check_gpu_options(args, method); !s) return s.error();
        if (method == "gpu_lbvh") {
#ifdef BROADPHASE_HAS_GPU
            auto context = open_context(args);
            if (!context) return context.error();
            b.context = std::move(context.value());
            auto q = gpu::LbvhQueries::create(*b.context, {args.code});
            if (!q) return q.error();
            b.gpu = std::move(q.value());
            if (Status s = b.gpu->build(boxes); !s) return s.error();
            return b;
#else
            (void)args;
            return Error{ErrorCode::unsupported, "this build has no GPU support"};
#endif
        }
        auto s = make_structure(method);
        if (!s) return s.error();
        b.cpu = std::move(s.value());
        if (Status st = build_structure(*b.cpu, boxes); !st) return st.error();
        return b;
    }

    // Ascending hits of each region.
    Result<std::vector<std::vector<std::uint32_t>>> query(std::span<const Box> regions) {
        std::vector<std::vector<std::uint32_t>> out(regions.size());
        if (cpu) {
            std::size_t q = 0, hits = 0;
            try {
                for (; q < regions.size(); hits += out[q].size(), ++q) {
                    cpu->query_box(regions[q], out[q]);
                    std::sort(out[q].begin(), out[q].end());
                }
                return out;
            } catch (const std::bad_alloc&) {
            } catch (const std::length_error&) {
            }
            out = {};
            return Error{ErrorCode::out_of_memory,
                         "out of memory querying " + std::string(cpu->name()) + " over " +
                             std::to_string(cpu->size()) + " boxes: query " + std::to_string(q) +
                             " of " + std::to_string(regions.size()) + ", " + std::to_string(hits) +
                             " hits so far"};
        }
#ifdef BROADPHASE_HAS_GPU
        auto hits = gpu->query_boxes(regions);
        if (!hits) return hits.error();
        if (Status s = check_validation(); !s) return s.error();
        for (std::size_t q = 0; q < regions.size(); ++q)
            out[q].assign(hits->hits(q).begin(), hits->hits(q).end());
#endif
        return out;
    }

    Result<std::vector<std::optional<RayHit>>> cast(std::span<const Ray> rays) {
        if (cpu) {
            std::vector<std::optional<RayHit>> out;
            out.reserve(rays.size());
            for (const Ray& r : rays) out.push_back(cpu->ray_cast(r));
            return out;
        }
#ifdef BROADPHASE_HAS_GPU
        auto hits = gpu->ray_cast(rays);
        if (hits) {
            if (Status s = check_validation(); !s) return s.error();
        }
        return hits;
#else
        return std::vector<std::optional<RayHit>>{};
#endif
    }

    Status check_validation() const {
#ifdef BROADPHASE_HAS_GPU
        if (context && context->validation_errors() > 0)
            return Error{ErrorCode::vulkan_error, std::to_string(context->validation_errors()) +
                                                      " Vulkan validation errors (printed above)"};
#endif
        return {};
    }
};

// Loads --scene, then `other` (the option `option`); indexes one of them with --method (the
// scene when `index_scene`) and returns the ascending hits of each box of the other: `query`'s
// regions of --boxes in the scene, or `pairs --against`'s scene boxes in B.
Result<std::vector<std::vector<std::uint32_t>>> cross_query(const Args& args,
                                                            const std::string& other,
                                                            const char* option, bool index_scene) {
    auto scene = load_input_scene(args.scene);
    if (!scene) return scene.error();
    auto second = load_input_scene(other, option);
    if (!second) return second.error();
    const Scene& indexed = index_scene ? *scene : *second;
    const Scene& queries = index_scene ? *second : *scene;
    auto backend = Backend::open(args.method, indexed.boxes, args);
    if (!backend) return backend.error();
    return backend->query(queries.boxes);
}

int write_text(const Args& args, const std::string& text) {
    Output out(args);
    out.write(text);
    if (Status s = out.finish(); !s) return fail(s.error());
    return 0;
}

}  // namespace

int run_query(const Args& args) {
    auto hits = cross_query(args, args.boxes, "--boxes", true);
    if (!hits) return fail(hits.error());
    std::string text;
    for (std::size_t q = 0; q < hits->size(); ++q) {
        text.append(std::to_string(q)).push_back(':');
        for (std::uint32_t id : (*hits)[q]) text.append(1, ' ').append(std::to_string(id));
        text.push_back('\n');
    }
    return write_text(args, text);
}

int run_raycast(const Args& args) {
    auto scene = load_input_scene(args.scene);
    if (!scene) return fail(scene.error());
    auto rays = read_rays_file(args.rays);
    if (!rays) return fail(rays.error());
    auto backend = Backend::open(args.method, scene->boxes, args);
    if (!backend) return fail(backend.error());
    auto hits = backend->cast(rays.value());
    if (!hits) return fail(hits.error());
    std::string text;
    char buf[64];
    for (std::size_t r = 0; r < hits->size(); ++r) {
        const auto& h = (*hits)[r];
        if (h)
            std::snprintf(buf, sizeof(buf), "%zu: %u %.9g\n", r, h->id, double(h->t));
        else
            std::snprintf(buf, sizeof(buf), "%zu: -\n", r);
        text += buf;
    }
    return write_text(args, text);
}

int run_pairs_against(const Args& args) {
    auto hits = cross_query(args, args.against, "--against", false);
    if (!hits) return fail(hits.error());
    std::vector<Pair> pairs;
    for (std::size_t q = 0; q < hits->size(); ++q)
        for (std::uint32_t id : (*hits)[q]) pairs.push_back({static_cast<std::uint32_t>(q), id});
    return write_text(args, format_pairs(pairs));
}

}  // namespace broadphase::tool
