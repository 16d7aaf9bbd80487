// broadphase._broadphase: the Python bindings (pybind11) of the CPU structures, the GPU LBVH
// (pairs, queries, frustum culling, moving scenes), the scene generators and file formats.
// Boxes are (n, 6) float32 rows `minx miny minz maxx maxy maxz` read in place; results are
// NumPy arrays that own the library's output vectors. Long calls release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "broadphase/frustum.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "broadphase/version.hpp"
#include "errors.hpp"
// The sphere BVH's front-to-back cull is not on the Structure interface (as in the tool).
#include "sphere_bvh.hpp"
#ifdef BROADPHASE_PYTHON_HAS_GPU
#include "broadphase/gpu/moving_scene.hpp"
#include "gpu_state.hpp"
#endif

namespace broadphase::python {

namespace {

constexpr const char* kBoxRows = "minx miny minz maxx maxy maxz";
constexpr const char* kPointRows = "x y z";
constexpr const char* kRayRows = "ox oy oz dx dy dz tmax";
constexpr const char* kGpuMethod = "gpu_lbvh";
constexpr const char* kDefaultMethod = "sweep_and_prune";

#ifdef BROADPHASE_PYTHON_HAS_GPU
constexpr bool kHasGpu = true;
#else
constexpr bool kHasGpu = false;
#endif
constexpr const char* kDefaultCullMethod = kHasGpu ? kGpuMethod : "sphere_bvh";
constexpr const char* kDefaultMovingMethod = kHasGpu ? kGpuMethod : kDefaultMethod;

FloatArray box_rows(const py::object& boxes, const char* what = "boxes") {
    return as_rows(boxes, 6, what, kBoxRows);
}

// The library's name lists (cpu_method_names(), generator_names()) as Python strings.
std::vector<std::string> strings(const std::vector<std::string_view>& views) {
    return {views.begin(), views.end()};
}

std::vector<std::string> method_names() {
    std::vector<std::string> names = strings(cpu_method_names());
    if (kHasGpu) names.emplace_back(kGpuMethod);
    return names;
}

// Raises for a method the module does not know (NotImplementedError for gpu_lbvh in a build
// without the GPU).
void check_method(const std::string& method) {
    const std::vector<std::string> names = method_names();
    if (std::find(names.begin(), names.end(), method) != names.end()) return;
    if (method == kGpuMethod)
        raise(ErrorCode::unsupported, "this build of the module has no GPU support (gpu_lbvh)");
    std::string known;
    for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
    raise(ErrorCode::invalid_argument, "unknown method '" + method + "' (known: " + known + ")");
}

void check_cpu_device(const std::string& method, const py::object& device) {
    if (!device.is_none())
        raise(ErrorCode::invalid_argument, "device= applies to gpu_lbvh only, not " + method);
}

Error query_error(std::size_t q, const std::string& what) {
    return Error{ErrorCode::invalid_argument, "query " + std::to_string(q) + ": " + what, q, {}};
}

// The library's rules for query inputs, with the GPU helpers' messages, for every method.
void check_regions(std::span<const Box> regions) {
    for (std::size_t q = 0; q < regions.size(); ++q) {
        if (Status s = validate_box(regions[q], q); !s) {
            Error e = s.error();
            e.message = "query " + e.message;  // "query box 3: min.x is NaN"
            raise(std::move(e));
        }
    }
}

void check_points(std::span<const Vec3> points) {
    for (std::size_t q = 0; q < points.size(); ++q) {
        const Vec3& p = points[q];
        if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z))
            raise(query_error(q, "point is not finite"));
    }
}

void check_rays(std::span<const Ray> rays) {
    for (std::size_t q = 0; q < rays.size(); ++q) {
        const Ray& ray = rays[q];
        for (int axis = 0; axis < 3; ++axis) {
            if (!std::isfinite(ray.origin[axis]) || !std::isfinite(ray.dir[axis]))
                raise(query_error(q, "ray origin and direction must be finite"));
        }
        if (std::isnan(ray.tmax)) raise(query_error(q, "ray tmax is NaN"));
    }
}

// Hits in CSR form: (offsets int64 (Q+1,), ids uint32), ids of query q at offsets[q]..[q+1].
py::tuple csr(std::vector<std::int64_t>&& offsets, std::vector<std::uint32_t>&& ids) {
    const auto q = static_cast<py::ssize_t>(offsets.size());
    const auto m = static_cast<py::ssize_t>(ids.size());
    return py::make_tuple(take<std::int64_t>(std::move(offsets), {q}),
                          take<std::uint32_t>(std::move(ids), {m}));
}

// Closest hits as (ids int64, -1 on a miss; t float32, inf on a miss).
py::tuple ray_hits(const std::vector<std::optional<RayHit>>& hits) {
    std::vector<std::int64_t> ids(hits.size(), -1);
    std::vector<float> t(hits.size(), std::numeric_limits<float>::infinity());
    for (std::size_t r = 0; r < hits.size(); ++r) {
        if (!hits[r]) continue;
        ids[r] = hits[r]->id;
        t[r] = hits[r]->t;
    }
    const auto n = static_cast<py::ssize_t>(hits.size());
    return py::make_tuple(take<std::int64_t>(std::move(ids), {n}), take<float>(std::move(t), {n}));
}

// ---------------------------------------------------------------------------------------------
// Index: a structure built once over a set of boxes, queried many times.

class Index {
public:
    Index(const py::object& boxes, std::string method, const py::object& device)
        : method_(std::move(method)) {
        check_method(method_);
        FloatArray rows = box_rows(boxes);
        std::span<const Box> input = rows_as<Box>(rows);
        size_ = input.size();
        if (method_ == kGpuMethod) {
#ifdef BROADPHASE_PYTHON_HAS_GPU
            gpu_ = gpu_state(device);
            boxes_.assign(input.begin(), input.end());
            with_gpu(*gpu_, [&](GpuState& s) { return &tree(s); });
#endif
            return;
        }
        check_cpu_device(method_, device);
        auto made = make_structure(method_);
        py::gil_scoped_release release;
        structure_ = unwrap(std::move(made));
        check(build_structure(*structure_, input));
    }

    const std::string& method() const {
        return method_;
    }
    std::size_t size() const {
        return size_;
    }

    py::array_t<std::uint32_t> pairs() {
        std::vector<Pair> pairs;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (gpu_) {
            pairs = with_gpu(*gpu_,
                             [&](GpuState& s) { return unwrap(s.get_lbvh().find_pairs(boxes_)); });
            return pairs_array(std::move(pairs));
        }
#endif
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            pairs = unwrap(find_sorted_pairs(*structure_));
        }
        return pairs_array(std::move(pairs));
    }

    py::tuple query_boxes(const py::object& regions_object) {
        FloatArray rows = box_rows(regions_object, "regions");
        std::span<const Box> regions = rows_as<Box>(rows);
        check_regions(regions);
        return query_hits(regions);
    }

    py::tuple query_points(const py::object& points_object) {
        FloatArray rows = as_rows(points_object, 3, "points", kPointRows);
        std::span<const Vec3> points = rows_as<Vec3>(rows);
        check_points(points);
        return query_hits(points);
    }

    py::tuple ray_cast(const py::object& rays_object) {
        FloatArray rows = as_rows(rays_object, 7, "rays", kRayRows);
        std::span<const Ray> rays = rows_as<Ray>(rows);
        check_rays(rays);
        std::vector<std::optional<RayHit>> hits;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (gpu_) {
            hits = with_gpu(*gpu_, [&](GpuState& s) { return unwrap(tree(s).ray_cast(rays)); });
            return ray_hits(hits);
        }
#endif
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            hits.reserve(rays.size());
            for (const Ray& ray : rays) hits.push_back(structure_->ray_cast(ray));
        }
        return ray_hits(hits);
    }

    py::tuple nearest(const py::object& points_object, std::size_t k) {
        FloatArray rows = as_rows(points_object, 3, "points", kPointRows);
        std::span<const Vec3> points = rows_as<Vec3>(rows);
        check_points(points);
        if (!structure_) raise(ErrorCode::unsupported, method_ + " does not support nearest");
        std::vector<std::int64_t> ids(points.size() * k, -1);
        std::vector<float> distances(points.size() * k, std::numeric_limits<float>::infinity());
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            std::vector<Neighbor> found;
            for (std::size_t q = 0; q < points.size(); ++q) {
                check(structure_->nearest(points[q], k, found));
                for (std::size_t r = 0; r < found.size() && r < k; ++r) {
                    ids[q * k + r] = found[r].id;
                    distances[q * k + r] = found[r].distance;
                }
            }
        }
        const auto p = static_cast<py::ssize_t>(points.size());
        const auto kk = static_cast<py::ssize_t>(k);
        return py::make_tuple(take<std::int64_t>(std::move(ids), {p, kk}),
                              take<float>(std::move(distances), {p, kk}));
    }

    // Every overlapping (a, b): a a row of `others`, b a box of this index; sorted.
    py::array_t<std::uint32_t> pairs_against(const py::object& others_object) {
        FloatArray rows = box_rows(others_object);
        std::span<const Box> others = rows_as<Box>(rows);
        check_regions(others);
        std::vector<Pair> pairs;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (gpu_) {
            pairs =
                with_gpu(*gpu_, [&](GpuState& s) { return unwrap(tree(s).pairs_against(others)); });
            return pairs_array(std::move(pairs));
        }
#endif
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            std::vector<std::uint32_t> hits;
            for (std::size_t a = 0; a < others.size(); ++a) {
                hits.clear();
                structure_->query_box(others[a], hits);
                std::sort(hits.begin(), hits.end());
                for (std::uint32_t b : hits) pairs.push_back({static_cast<std::uint32_t>(a), b});
            }
        }
        return pairs_array(std::move(pairs));
    }

private:
    // The boxes overlapping each query (a Box region or a Vec3 point) in CSR form, ids
    // ascending.
    template <class Query>
    py::tuple query_hits(std::span<const Query> queries) {
        constexpr bool regions = std::is_same_v<Query, Box>;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (gpu_) {
            gpu::QueryHits hits = with_gpu(*gpu_, [&](GpuState& s) {
                if constexpr (regions)
                    return unwrap(tree(s).query_boxes(queries));
                else
                    return unwrap(tree(s).query_points(queries));
            });
            return csr_from(std::move(hits));
        }
#endif
        std::vector<std::int64_t> offsets{0};
        std::vector<std::uint32_t> ids;
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            std::vector<std::uint32_t> hits;
            for (const Query& query : queries) {
                hits.clear();
                if constexpr (regions)
                    structure_->query_box(query, hits);
                else
                    structure_->query_point(query, hits);
                std::sort(hits.begin(), hits.end());
                ids.insert(ids.end(), hits.begin(), hits.end());
                offsets.push_back(static_cast<std::int64_t>(ids.size()));
            }
        }
        return csr(std::move(offsets), std::move(ids));
    }

#ifdef BROADPHASE_PYTHON_HAS_GPU
    // The shared queries object of the context, holding this index's tree (state locked).
    gpu::LbvhQueries& tree(GpuState& s) {
        gpu::LbvhQueries& queries = s.get_queries();
        if (s.queries_owner != id_) {
            s.queries_owner = 0;
            check(queries.build(boxes_));
            s.queries_owner = id_;
        }
        return queries;
    }

    static py::tuple csr_from(gpu::QueryHits&& hits) {
        std::vector<std::int64_t> offsets(hits.offsets.begin(), hits.offsets.end());
        return csr(std::move(offsets), std::move(hits.ids));
    }

    static std::uint64_t next_id() {
        static std::atomic<std::uint64_t> counter{0};
        return ++counter;
    }

    std::shared_ptr<GpuState> gpu_;
    // A copy of the boxes: the context's one queries object is shared by every GPU index, and
    // an index rebuilds its tree from them when another one has used it since.
    std::vector<Box> boxes_;
    std::uint64_t id_ = next_id();
#endif
    std::string method_;
    std::size_t size_ = 0;
    std::unique_ptr<Structure> structure_;
    std::mutex mutex_;  // one query at a time on a CPU structure (its stats are shared)
};

// ---------------------------------------------------------------------------------------------
// Moving scenes: pairs that began and ended from frame to frame.

struct Frame {
    py::object began, ended, pairs;
    std::uint64_t pair_count = 0;
    std::string path;
    double ratio = 1;
    double work_ratio = 1;
    bool regrown = false;
};

std::vector<Pair> difference(const std::vector<Pair>& a, const std::vector<Pair>& b) {
    std::vector<Pair> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

class MovingScene {
public:
    MovingScene(std::string method, const std::string& policy, double rebuild_ratio,
                double rebuild_work_ratio, bool return_pairs, const py::object& device)
        : method_(std::move(method)), return_pairs_(return_pairs) {
        check_method(method_);
        // Checked for every method; only gpu_lbvh uses them.
        if (policy != "ratio" && policy != "refit" && policy != "rebuild") {
            raise(ErrorCode::invalid_argument,
                  "unknown policy '" + policy + "' (ratio, refit, rebuild)");
        }
        if (!(rebuild_ratio > 0)) {
            raise(ErrorCode::invalid_argument,
                  "rebuild_ratio must be > 0 (got " + std::to_string(rebuild_ratio) + ")");
        }
        if (!(rebuild_work_ratio >= 0)) {
            raise(ErrorCode::invalid_argument, "rebuild_work_ratio must be >= 0 (got " +
                                                   std::to_string(rebuild_work_ratio) + ")");
        }
        if (method_ == kGpuMethod) {
#ifdef BROADPHASE_PYTHON_HAS_GPU
            gpu::MovingSceneOptions options;
            options.policy = policy == "refit"     ? gpu::RefitPolicy::always_refit
                             : policy == "rebuild" ? gpu::RefitPolicy::always_rebuild
                                                   : gpu::RefitPolicy::by_ratio;
            options.rebuild_ratio = rebuild_ratio;
            options.rebuild_work_ratio = rebuild_work_ratio;
            options.return_pairs = return_pairs;
            gpu_ = gpu_state(device);
            scene_ = with_gpu(*gpu_, [&](GpuState& s) {
                return unwrap(gpu::MovingScene::create(*s.context, options));
            });
#endif
            return;
        }
        check_cpu_device(method_, device);
        structure_ = unwrap(make_structure(method_));
    }

    ~MovingScene() {
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (scene_) {
            py::gil_scoped_release release;
            std::lock_guard lock(gpu_->mutex);
            scene_.reset();
        }
#endif
    }
    MovingScene(const MovingScene&) = delete;
    MovingScene& operator=(const MovingScene&) = delete;

    const std::string& method() const {
        return method_;
    }
    std::size_t size() const {
        return size_;
    }

    void reset(const py::object& boxes) {
        FloatArray rows = box_rows(boxes);
        std::span<const Box> input = rows_as<Box>(rows);
        started_ = false;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (scene_) {
            with_gpu(*gpu_, [&](GpuState&) {
                check(scene_->reset(input));
                return 0;
            });
            size_ = input.size();
            started_ = true;
            return;
        }
#endif
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            check(build_structure(*structure_, input));
            previous_ = unwrap(find_sorted_pairs(*structure_));
        }
        size_ = input.size();
        started_ = true;
    }

    Frame step(const py::object& boxes) {
        FloatArray rows = box_rows(boxes);
        std::span<const Box> input = rows_as<Box>(rows);
        if (!started_) raise(ErrorCode::invalid_argument, "step before reset(boxes)");
        if (input.size() != size_) {
            raise(ErrorCode::invalid_argument,
                  "step got " + std::to_string(input.size()) + " boxes; the scene has " +
                      std::to_string(size_) + " (reset(boxes) changes the count)");
        }
        Frame frame;
#ifdef BROADPHASE_PYTHON_HAS_GPU
        if (scene_) {
            gpu::FrameResult r = with_gpu(*gpu_, [&](GpuState&) {
                check(validate_boxes(input));
                return unwrap(scene_->step(input));
            });
            frame.began = pairs_array(std::move(r.began));
            frame.ended = pairs_array(std::move(r.ended));
            frame.pairs = return_pairs_ ? py::object(pairs_array(std::move(r.pairs))) : py::none();
            frame.pair_count = r.pair_count;
            frame.path = r.path == gpu::FramePath::refit ? "refit" : "rebuild";
            frame.ratio = r.ratio;
            frame.work_ratio = r.work_ratio;
            frame.regrown = r.regrown;
            return frame;
        }
#endif
        std::vector<Pair> began, ended, now;
        {
            py::gil_scoped_release release;
            std::lock_guard lock(mutex_);
            check(validate_boxes(input));
            if (structure_->is_dynamic()) {
                for (std::size_t id = 0; id < input.size(); ++id)
                    check(structure_->move(static_cast<std::uint32_t>(id), input[id]));
                frame.path = "update";
            } else {
                check(build_structure(*structure_, input));
                frame.path = "rebuild";
            }
            now = unwrap(find_sorted_pairs(*structure_));
            began = difference(now, previous_);
            ended = difference(previous_, now);
            previous_ = now;
        }
        frame.began = pairs_array(std::move(began));
        frame.ended = pairs_array(std::move(ended));
        frame.pair_count = now.size();
        frame.pairs = return_pairs_ ? py::object(pairs_array(std::move(now))) : py::none();
        return frame;
    }

private:
    std::string method_;
    bool return_pairs_ = true;
    bool started_ = false;
    std::size_t size_ = 0;
    // CPU: the structure, updated in place when dynamic, and the previous frame's pairs.
    std::unique_ptr<Structure> structure_;
    std::vector<Pair> previous_;
    std::mutex mutex_;
#ifdef BROADPHASE_PYTHON_HAS_GPU
    std::shared_ptr<GpuState> gpu_;
    std::unique_ptr<gpu::MovingScene> scene_;
#endif
};

// ---------------------------------------------------------------------------------------------
// Cameras and culling.

Vec3 to_vec3(const py::object& object, const char* what) {
    std::array<float, 3> v{};
    try {
        v = object.cast<std::array<float, 3>>();
    } catch (const py::cast_error&) {
        throw py::type_error(std::string(what) + " must be a sequence of 3 numbers");
    }
    return {v[0], v[1], v[2]};
}

py::tuple vec3_tuple(const Vec3& v) {
    return py::make_tuple(v.x, v.y, v.z);
}

// A column-major 4x4 matrix as a (4, 4) float32 array indexed [row, column].
py::array_t<float> matrix_array(const std::array<float, 16>& m) {
    std::vector<float> rows(16);
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) rows[static_cast<std::size_t>(r * 4 + c)] = m[c * 4 + r];
    return take<float>(std::move(rows), {4, 4});
}

Camera to_camera(const py::object& object) {
    if (py::isinstance<Camera>(object)) return object.cast<Camera>();
    if (py::isinstance<py::str>(object)) return unwrap(parse_camera(object.cast<std::string>()));
    std::vector<float> v;
    try {
        v = object.cast<std::vector<float>>();
    } catch (const py::cast_error&) {
        throw py::type_error(
            "camera must be a broadphase.Camera, a string 'ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy,"
            "aspect,near,far' or a sequence of those 13 numbers");
    }
    if (v.size() != 13) {
        raise(ErrorCode::invalid_argument,
              "a camera sequence needs 13 numbers (eye, target, up, fovy_deg, aspect, near, "
              "far); got " +
                  std::to_string(v.size()));
    }
    return camera_from_numbers(std::span<const float, 13>(v.data(), 13));
}

CullOrder to_order(const std::string& order) {
    if (order == "exact") return CullOrder::exact;
    if (order == "approx") return CullOrder::approx;
    raise(ErrorCode::invalid_argument, "unknown order '" + order + "' (exact, approx)");
}

py::array_t<std::uint32_t> cull(const py::object& boxes, const py::object& camera,
                                const std::string& order_name, const std::string& method,
                                const py::object& device) {
    const CullOrder order = to_order(order_name);
    const Frustum frustum = unwrap(Frustum::from_camera(to_camera(camera)));
    FloatArray rows = box_rows(boxes);
    std::span<const Box> input = rows_as<Box>(rows);
    std::vector<std::uint32_t> ids;
    if (method == kGpuMethod) {
#ifdef BROADPHASE_PYTHON_HAS_GPU
        std::shared_ptr<GpuState> state = gpu_state(device);
        ids = with_gpu(*state, [&](GpuState& s) {
            return unwrap(s.get_culler().cull(input, frustum, order));
        });
        const auto n = static_cast<py::ssize_t>(ids.size());
        return take<std::uint32_t>(std::move(ids), {n});
#else
        raise(ErrorCode::unsupported, "this build of the module has no GPU support (gpu_lbvh)");
#endif
    }
    check_cpu_device(method, device);
    if (method != "brute_force" && method != "sphere_bvh") {
        raise(ErrorCode::invalid_argument,
              "unknown cull method '" + method + "' (gpu_lbvh, sphere_bvh, brute_force)");
    }
    {
        py::gil_scoped_release release;
        check(validate_boxes(input));
        if (method == "brute_force") {
            ids = cull_brute_force(frustum, input);  // exact order
        } else {
            SphereBvh bvh;
            check(bvh.build(input));
            bvh.cull_front_to_back(frustum, ids);
            if (order == CullOrder::exact) {
                std::vector<std::pair<float, std::uint32_t>> keyed;
                keyed.reserve(ids.size());
                for (std::uint32_t id : ids)
                    keyed.push_back({point_box_distance(frustum.eye, input[id]), id});
                std::sort(keyed.begin(), keyed.end());
                for (std::size_t k = 0; k < keyed.size(); ++k) ids[k] = keyed[k].second;
            }
        }
    }
    const auto n = static_cast<py::ssize_t>(ids.size());
    return take<std::uint32_t>(std::move(ids), {n});
}

// ---------------------------------------------------------------------------------------------
// Module-level functions.

py::array_t<std::uint32_t> find_pairs(const py::object& boxes, const std::string& method,
                                      const py::object& device) {
    check_method(method);
    FloatArray rows = box_rows(boxes);
    std::span<const Box> input = rows_as<Box>(rows);
    std::vector<Pair> pairs;
#ifdef BROADPHASE_PYTHON_HAS_GPU
    if (method == kGpuMethod) {
        std::shared_ptr<GpuState> state = gpu_state(device);
        pairs =
            with_gpu(*state, [&](GpuState& s) { return unwrap(s.get_lbvh().find_pairs(input)); });
        return pairs_array(std::move(pairs));
    }
#endif
    check_cpu_device(method, device);
    {
        py::gil_scoped_release release;
        pairs = unwrap(find_pairs_cpu(method, input));
    }
    return pairs_array(std::move(pairs));
}

py::array_t<float> generate(const std::string& name, std::size_t n, std::uint32_t seed) {
    Result<Scene> scene = [&] {
        py::gil_scoped_release release;
        return generate_scene(name, n, seed);
    }();
    return boxes_array(std::move(unwrap(std::move(scene)).boxes));
}

py::array_t<float> read_scene(const std::string& path) {
    Result<Scene> scene = [&] {
        py::gil_scoped_release release;
        return read_scene_file(path);
    }();
    return boxes_array(std::move(unwrap(std::move(scene)).boxes));
}

void write_scene(const std::string& path, const py::object& boxes) {
    FloatArray rows = box_rows(boxes);
    std::span<const Box> input = rows_as<Box>(rows);
    py::gil_scoped_release release;
    check(validate_boxes(input));
    check(write_scene_file(path, input));
}

}  // namespace

}  // namespace broadphase::python

namespace py = pybind11;
using namespace broadphase;
using namespace broadphase::python;

namespace {

// The module-level functions: names, find_pairs, scenes, cull.
void bind_functions(py::module_& m) {
    m.def(
        "has_gpu", [] { return kHasGpu; }, "True when the module was built with gpu_lbvh.");
    m.def("method_names", &method_names,
          "Every method find_pairs takes: the CPU structures, then gpu_lbvh when built.");
    m.def(
        "cpu_method_names", [] { return strings(cpu_method_names()); },
        "The CPU structures, brute_force (the oracle) first.");
    m.def(
        "generator_names", [] { return strings(generator_names()); },
        "The scene generators generate_scene knows.");
    m.def(
        "as_boxes", [](const py::object& boxes) { return box_rows(boxes); }, py::arg("boxes"),
        "The (n, 6) float32 C-contiguous array the functions read: `boxes` itself when it "
        "already is one, else one converted copy (convert once to call many times).");

    m.def("find_pairs", &find_pairs, py::arg("boxes"), py::arg("method") = kDefaultMethod,
          py::kw_only(), py::arg("device") = py::none(),
          "Every overlapping pair (i, j), i < j, of the (n, 6) boxes (rows minx miny minz maxx "
          "maxy maxz; closed boxes: touching counts) as a sorted (m, 2) uint32 array. `method` "
          "is any of method_names(); `device` (gpu_lbvh only) an index or a name substring. "
          "Raises ValueError naming the first invalid box (NaN, infinity, min > max).");
    m.def("generate_scene", &generate, py::arg("name"), py::arg("n"), py::arg("seed") = 42,
          "The standard seeded scene `name` (generator_names()) of n boxes, (n, 6) float32.");
    m.def("read_scene", &read_scene, py::arg("path"),
          "Boxes from a scene text file (one box per line) or a Wavefront .obj (a box per face).");
    m.def("write_scene", &write_scene, py::arg("path"), py::arg("boxes"),
          "Writes boxes as scene text that round-trips every float exactly.");
    m.def("cull", &cull, py::arg("boxes"), py::arg("camera"), py::arg("order") = "exact",
          py::arg("method") = kDefaultCullMethod, py::kw_only(), py::arg("device") = py::none(),
          "Ids (uint32) of the boxes the camera's frustum may see (conservative: only boxes "
          "entirely outside one plane are culled), front to back: order 'exact' by distance "
          "from the eye then id, 'approx' in the method's near-to-far order. `camera`: a "
          "Camera, 'ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy,aspect,near,far' or those 13 numbers; "
          "`method`: gpu_lbvh (the default when built), sphere_bvh or brute_force.");
}

// The Vulkan devices (empty stand-ins when built without the GPU).
void bind_devices(py::module_& m) {
#ifdef BROADPHASE_PYTHON_HAS_GPU
    m.def("devices", &list_devices,
          "The Vulkan devices as dicts (index, name, type, api_version); `device=` takes the "
          "index or a name substring.");
    m.def("device_info", &device_info, py::arg("device") = py::none(),
          "What the device of `device` is (its context is created if needed), as a dict.");
    m.def("release_gpu", &release_gpu_states,
          "Drops the module's GPU contexts (made again on next use; objects that use one keep "
          "it alive).");
    m.def("set_tuning", &set_tuning, py::arg("device") = py::none(), py::kw_only(),
          py::arg("sort_path") = "automatic", py::arg("sort_window") = 0,
          py::arg("sort_rank") = "automatic", py::arg("traversal_budget") = 0,
          "How the context of `device` will shape its work (gpu::Tuning), before its first GPU "
          "call: sort_path automatic|onesweep|reduce_then_scan, sort_window 1..8 (0: 8), "
          "sort_rank automatic|shared|subgroup, traversal_budget (0: the device's rule). Every "
          "value gives the same results; device_info() says what was chosen.");
#else
    m.def(
        "devices", [] { return py::list(); }, "No Vulkan devices: built without the GPU.");
    m.def(
        "device_info",
        [](const py::object&) -> py::dict {
            raise(ErrorCode::unsupported, "this build of the module has no GPU support");
        },
        py::arg("device") = py::none());
    m.def("release_gpu", [] {});
    m.def(
        "set_tuning",
        [](const py::object&, const std::string&, std::uint32_t, const std::string&,
           std::uint32_t) {
            raise(ErrorCode::unsupported, "this build of the module has no GPU support");
        },
        py::arg("device") = py::none(), py::kw_only(), py::arg("sort_path") = "automatic",
        py::arg("sort_window") = 0, py::arg("sort_rank") = "automatic",
        py::arg("traversal_budget") = 0);
#endif
}

// Index: a structure built once and queried many times.
void bind_index(py::module_& m) {
    py::class_<Index>(m, "Index",
                      "A structure built once over boxes (copied), queried many times. "
                      "`method`: any of method_names().")
        .def(py::init<const py::object&, std::string, const py::object&>(), py::arg("boxes"),
             py::arg("method") = kDefaultMethod, py::kw_only(), py::arg("device") = py::none())
        .def_property_readonly("method", &Index::method)
        .def("__len__", &Index::size)
        .def("pairs", &Index::pairs,
             "Every overlapping pair, sorted (m, 2) uint32 (as find_pairs).")
        .def("query_boxes", &Index::query_boxes, py::arg("regions"),
             "Boxes overlapping each (q, 6) region: (offsets int64 (q+1,), ids uint32), the ids "
             "of region k ascending in ids[offsets[k]:offsets[k+1]].")
        .def("query_points", &Index::query_points, py::arg("points"),
             "Boxes containing each (q, 3) point, as query_boxes.")
        .def("ray_cast", &Index::ray_cast, py::arg("rays"),
             "Closest hit of each (r, 7) ray `ox oy oz dx dy dz tmax` (t in [0, tmax] in units "
             "of the direction, ties to the smaller id): (ids int64, -1 on a miss; t float32, "
             "inf on a miss).")
        .def("nearest", &Index::nearest, py::arg("points"), py::arg("k"),
             "The k nearest boxes to each (q, 3) point, nearest first (CPU methods): "
             "(ids int64 (q, k), -1 past the last box; distances float32 (q, k), inf there).")
        .def("pairs_against", &Index::pairs_against, py::arg("boxes"),
             "Every overlapping (a, b): a a row of `boxes`, b a box of the index; sorted "
             "(m, 2) uint32.");
}

// MovingScene and the Frame its step returns.
void bind_moving_scene(py::module_& m) {
    py::class_<Frame>(m, "Frame", "One step of a MovingScene; unpacks as (began, ended).")
        .def_readonly("began", &Frame::began, "pairs overlapping now and not before, (k, 2)")
        .def_readonly("ended", &Frame::ended, "pairs overlapping before and not now, (k, 2)")
        .def_readonly("pairs", &Frame::pairs, "every pair now, (m, 2), or None")
        .def_readonly("pair_count", &Frame::pair_count)
        .def_readonly("path", &Frame::path,
                      "gpu_lbvh: 'refit' or 'rebuild'; CPU: 'update' (dynamic structures "
                      "move their boxes) or 'rebuild'")
        .def_readonly("ratio", &Frame::ratio, "gpu_lbvh: the refitted tree's SAH cost ratio")
        .def_readonly("work_ratio", &Frame::work_ratio,
                      "gpu_lbvh: the previous frame's pair traversal work per box and pair over "
                      "that right after the last build")
        .def_readonly("regrown", &Frame::regrown)
        .def("__iter__", [](const Frame& f) { return py::iter(py::make_tuple(f.began, f.ended)); })
        .def("__repr__", [](const Frame& f) {
            return "Frame(began=" + std::to_string(py::len(f.began)) +
                   ", ended=" + std::to_string(py::len(f.ended)) +
                   ", pair_count=" + std::to_string(f.pair_count) + ", path='" + f.path + "')";
        });

    py::class_<MovingScene>(
        m, "MovingScene",
        "Boxes moving from frame to frame (same count, same ids): reset(boxes) "
        "once, then step(boxes) per frame gives the pairs that began and "
        "ended. gpu_lbvh refits its tree (rebuilt when the SAH cost ratio "
        "passes rebuild_ratio or its pair traversal's work per box and pair passes "
        "rebuild_work_ratio times that after the last build, policy 'ratio'; "
        "or always 'refit' or "
        "'rebuild'); a CPU method updates a dynamic structure or rebuilds.")
        .def(py::init<std::string, const std::string&, double, double, bool, const py::object&>(),
             py::arg("method") = kDefaultMovingMethod, py::kw_only(), py::arg("policy") = "ratio",
             py::arg("rebuild_ratio") = 1.5, py::arg("rebuild_work_ratio") = 2.0,
             py::arg("return_pairs") = true, py::arg("device") = py::none())
        .def_property_readonly("method", &MovingScene::method)
        .def("__len__", &MovingScene::size)
        .def("reset", &MovingScene::reset, py::arg("boxes"),
             "Starts over with these boxes; their pairs become the previous frame's.")
        .def("step", &MovingScene::step, py::arg("boxes"),
             "Advances one frame to these positions: a Frame (began, ended, pairs, ...).");
}

// Camera: the pinhole camera cull and frustum_planes take.
void bind_camera(py::module_& m) {
    py::class_<Camera>(m, "Camera",
                       "A right-handed pinhole camera (Vulkan clip conventions); angles in "
                       "degrees, 0 < near < far along the view direction.")
        .def(py::init([](const py::object& eye, const py::object& target, const py::object& up,
                         float fovy_deg, float aspect, float near, float far) {
                 Camera c;
                 c.eye = to_vec3(eye, "eye");
                 c.target = to_vec3(target, "target");
                 c.up = to_vec3(up, "up");
                 c.fovy_deg = fovy_deg;
                 c.aspect = aspect;
                 c.near = near;
                 c.far = far;
                 return c;
             }),
             py::arg("eye"), py::arg("target"), py::arg("up") = py::make_tuple(0, 1, 0),
             py::arg("fovy_deg") = 60.0f, py::arg("aspect") = 1.0f, py::arg("near") = 0.1f,
             py::arg("far") = 100.0f)
        .def_property(
            "eye", [](const Camera& c) { return vec3_tuple(c.eye); },
            [](Camera& c, const py::object& v) { c.eye = to_vec3(v, "eye"); })
        .def_property(
            "target", [](const Camera& c) { return vec3_tuple(c.target); },
            [](Camera& c, const py::object& v) { c.target = to_vec3(v, "target"); })
        .def_property(
            "up", [](const Camera& c) { return vec3_tuple(c.up); },
            [](Camera& c, const py::object& v) { c.up = to_vec3(v, "up"); })
        .def_readwrite("fovy_deg", &Camera::fovy_deg)
        .def_readwrite("aspect", &Camera::aspect)
        .def_readwrite("near", &Camera::near)
        .def_readwrite("far", &Camera::far)
        .def(
            "view", [](const Camera& c) { return matrix_array(c.view()); },
            "The look-at matrix, (4, 4) float32 indexed [row, column].")
        .def(
            "projection", [](const Camera& c) { return matrix_array(c.projection()); },
            "The perspective projection to Vulkan clip space, (4, 4) [row, column].")
        .def(
            "view_projection", [](const Camera& c) { return matrix_array(c.view_projection()); },
            "projection() @ view(), (4, 4) [row, column].")
        .def(
            "frustum_planes",
            [](const Camera& c) {
                const Frustum f = unwrap(Frustum::from_camera(c));
                std::vector<float> planes;
                for (const Plane& p : f.planes)
                    planes.insert(planes.end(), {p.normal.x, p.normal.y, p.normal.z, p.d});
                return take<float>(std::move(planes), {6, 4});
            },
            "The six inward planes (left, right, bottom, top, near, far) as (6, 4) float32 rows "
            "nx ny nz d: p is inside when n . p + d >= 0. ValueError for an invalid camera.")
        .def("__repr__", [](const Camera& c) {
            auto v = [](const Vec3& p) {
                return "(" + py::str(py::float_(p.x)).cast<std::string>() + ", " +
                       py::str(py::float_(p.y)).cast<std::string>() + ", " +
                       py::str(py::float_(p.z)).cast<std::string>() + ")";
            };
            return "Camera(eye=" + v(c.eye) + ", target=" + v(c.target) + ", up=" + v(c.up) +
                   ", fovy_deg=" + py::str(py::float_(c.fovy_deg)).cast<std::string>() +
                   ", aspect=" + py::str(py::float_(c.aspect)).cast<std::string>() +
                   ", near=" + py::str(py::float_(c.near)).cast<std::string>() +
                   ", far=" + py::str(py::float_(c.far)).cast<std::string>() + ")";
        });
}

}  // namespace

PYBIND11_MODULE(_broadphase, m) {
    m.doc() = "broadphase: overlapping axis-aligned boxes on the CPU and on Vulkan GPUs";
    m.attr("__version__") = kVersion;
    register_errors(m);

    bind_functions(m);
    bind_devices(m);
    bind_index(m);
    bind_moving_scene(m);
    bind_camera(m);
}
