// peers_bench: times two peer CUDA codes on the project's "uniform" scene, so that the
// project's GPU figures (docs/performance.md) can be set beside them on the same device.
//
//   1. ToruNiina/lbvh (github.com/ToruNiina/lbvh), a header-only Karras-2012 LBVH on Thrust:
//      - "build": lbvh::bvh::construct() on objects already on the device;
//      - "build_incl_upload": lbvh::bvh::assign(), i.e. the host copy, the host->device
//        upload of the objects and construct();
//      - "all_pairs": one kernel, one thread per box, each thread calling
//        lbvh::query_device(tree, lbvh::overlaps(box), local_buffer, 64) and appending its
//        pairs (i, j), i < j, to a preallocated output buffer through one atomic counter.
//        Threads take the boxes in input (object) order, as lbvh's README does;
//        "all_pairs_leaf_order" is the same with thread t taking the t-th leaf in Morton
//        order (the traversal order of the project's own pairs pass).
//   2. CUB (NVIDIA/cccl, the copy shipped with the CUDA toolkit):
//      cub::DeviceRadixSort::SortPairs on N random uint32 keys with uint32 values 0..N-1,
//      over bits [0, 32) and over bits [0, 30) (the project's Morton codes are 30-bit).
//
// Every measurement: one untimed warm-up, then `repeat` timed runs bracketed by cudaEvents
// on the legacy default stream (the stream Thrust and the kernels here use); the median
// (mean of the two middle runs when `repeat` is even) and the minimum are printed in ms.
// Output lines start with "peer " and are key=value, for grep.
//
// Usage: peers_bench N [repeat=10] [nocheck]
//   nocheck skips the host-side checks (a CPU grid count of the pairs, a check of every pair
//   written, a check of the sorted output); they cost a few seconds of host time at 10M.
//
// Build: scripts/bench_peers.sh (nvcc, sm_90; lbvh's headers come from .peers/lbvh and its
// commit is passed in as PEERS_LBVH_REV). See bench/peers/README.md.

#include "lbvh.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>
#include <thrust/system_error.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#ifndef PEERS_LBVH_REV
#define PEERS_LBVH_REV "unknown"
#endif

// Every CUDA runtime call goes through this: on failure, print where and why, and exit 1.
#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        const cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%s:%d: CUDA error %s: %s\n  in %s\n", __FILE__, __LINE__, \
                         cudaGetErrorName(err_), cudaGetErrorString(err_), #call);          \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

namespace {

using Box = lbvh::aabb<float>;  // float4 upper, float4 lower (w unused, 0)

// ---------------------------------------------------------------------------------------
// The scene: core/scene_generators.cpp's `uniform` (count, seed 42, the project's default),
// reproduced draw for draw: N cubes of side float(0.8 * N^(-1/3)) whose min corners are
// uniform in [0,1)^3, drawn x, y, z from one std::mt19937(seed) through
// std::uniform_real_distribution<float>(0, 1); max = min + side in float. With the same
// standard library (libstdc++ here and in the project) the boxes are the project's boxes
// bit for bit, so the pair count should equal the project's (~2.0M at 1M, ~20.4M at 10M).
// (The minimum corner is uniform, so the centres are uniform in [side/2, 1 + side/2)^3.)
std::vector<Box> uniform_scene(std::size_t count, std::uint32_t seed, float& side_out) {
    const float side = static_cast<float>(0.8 * std::pow(static_cast<double>(count), -1.0 / 3.0));
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<Box> boxes(count);
    for (Box& b : boxes) {
        const float x = unit(engine);  // separate statements: the draw order is x, y, z
        const float y = unit(engine);
        const float z = unit(engine);
        b.lower = make_float4(x, y, z, 0.0f);
        b.upper = make_float4(x + side, y + side, z + side, 0.0f);
    }
    side_out = side;
    return boxes;
}

// Closed-box overlap, as the project's broadphase::overlaps and lbvh::intersects.
bool overlaps_host(const Box& a, const Box& b) {
    return a.lower.x <= b.upper.x && b.lower.x <= a.upper.x && a.lower.y <= b.upper.y &&
           b.lower.y <= a.upper.y && a.lower.z <= b.upper.z && b.lower.z <= a.upper.z;
}

// Reference pair count on the CPU, independent of lbvh: a uniform grid of G^3 cells with an
// edge of at least 1.01 * side, each box binned by its min corner. Two boxes of side `side`
// that overlap have min corners less than an edge apart on each axis, so they lie in the same
// or adjacent cells; each box tests the 27 cells around its own against higher indices.
std::uint64_t cpu_pair_count(const std::vector<Box>& boxes, float side) {
    const std::size_t n = boxes.size();
    const int g = std::max(1, static_cast<int>(std::floor(1.0 / (static_cast<double>(side) * 1.01))));
    auto axis_cell = [g](float v) {
        return std::clamp(static_cast<int>(static_cast<double>(v) * g), 0, g - 1);
    };
    auto cell_of = [&](const Box& b) {
        return (static_cast<std::size_t>(axis_cell(b.lower.z)) * g + axis_cell(b.lower.y)) * g +
               axis_cell(b.lower.x);
    };
    const std::size_t cells = static_cast<std::size_t>(g) * g * g;
    std::vector<std::uint32_t> start(cells + 1, 0), order(n);
    for (const Box& b : boxes) ++start[cell_of(b) + 1];
    for (std::size_t c = 0; c < cells; ++c) start[c + 1] += start[c];
    {
        std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
        for (std::size_t i = 0; i < n; ++i) order[fill[cell_of(boxes[i])]++] = static_cast<std::uint32_t>(i);
    }
    std::atomic<std::uint64_t> total{0};
    const unsigned workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) {
        pool.emplace_back([&, w] {
            std::uint64_t count = 0;
            for (std::size_t i = w; i < n; i += workers) {
                const Box& a = boxes[i];
                const int cx = axis_cell(a.lower.x), cy = axis_cell(a.lower.y), cz = axis_cell(a.lower.z);
                for (int z = std::max(cz - 1, 0); z <= std::min(cz + 1, g - 1); ++z)
                    for (int y = std::max(cy - 1, 0); y <= std::min(cy + 1, g - 1); ++y)
                        for (int x = std::max(cx - 1, 0); x <= std::min(cx + 1, g - 1); ++x) {
                            const std::size_t c = (static_cast<std::size_t>(z) * g + y) * g + x;
                            for (std::uint32_t k = start[c]; k < start[c + 1]; ++k) {
                                const std::uint32_t j = order[k];
                                if (j > i && overlaps_host(a, boxes[j])) ++count;
                            }
                        }
            }
            total += count;
        });
    }
    for (std::thread& t : pool) t.join();
    return total.load();
}

// ---------------------------------------------------------------------------------------
// Timing.

struct Stats {
    double median_ms = 0, min_ms = 0;
};

Stats summarize(std::vector<double> ms) {
    Stats s;
    if (ms.empty()) return s;
    std::sort(ms.begin(), ms.end());
    const std::size_t m = ms.size();
    s.median_ms = m % 2 ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);
    s.min_ms = ms.front();
    return s;
}

struct Timing {
    Stats gpu;   // cudaEvent elapsed time
    Stats wall;  // host steady_clock around the same region, up to the end event's completion
};

// Runs setup() then body() once untimed (the warm-up), then `repeat` times: setup() (not
// timed), cudaEventRecord(start), body(), cudaEventRecord(stop), wait for stop. body() must
// enqueue its work on the legacy default stream (stream 0), or finish it before returning.
template <class Setup, class Body>
Timing time_it(int repeat, Setup&& setup, Body&& body) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    setup();
    body();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<double> gpu_ms, wall_ms;
    for (int r = 0; r < repeat; ++r) {
        setup();
        CUDA_CHECK(cudaDeviceSynchronize());  // nothing of setup() leaks into the region
        const auto t0 = std::chrono::steady_clock::now();
        CUDA_CHECK(cudaEventRecord(start, 0));
        body();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        const auto t1 = std::chrono::steady_clock::now();
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        gpu_ms.push_back(ms);
        wall_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return {summarize(gpu_ms), summarize(wall_ms)};
}

// ---------------------------------------------------------------------------------------
// ToruNiina/lbvh.

// The objects are the boxes themselves, so the AABB getter is the identity.
struct BoxAabb {
    __device__ Box operator()(const Box& b) const noexcept { return b; }
};
using Bvh = lbvh::bvh<float, Box, BoxAabb>;  // default Morton code calculator (30-bit)
using BvhView = lbvh::cbvh_device<float, Box>;

constexpr unsigned kLocalBuffer = 64;  // indices a query may return; more counts as overflow
constexpr int kBlock = 256;

// One thread per box. lbvh's tree: nodes [0, n-1) are internal (0 the root), nodes
// [n-1, 2n-1) are the leaves in Morton order; nodes[leaf].object_idx is the object index and
// aabbs[leaf] its box. The query returns every object whose box overlaps `box` (itself
// included), exactly, since leaf boxes are the objects' boxes. Only j > i is kept, so every
// unordered pair is written once.
template <bool LeafOrder>
__global__ void all_pairs_kernel(BvhView tree, uint2* pairs, unsigned long long capacity,
                                 unsigned long long* pair_count, unsigned int* overflow_count) {
    const unsigned int n = tree.num_objects;
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned int i;
    Box box;
    if constexpr (LeafOrder) {
        const unsigned int leaf = (n - 1) + t;
        i = tree.nodes[leaf].object_idx;
        box = tree.aabbs[leaf];
    } else {
        i = t;
        box = tree.objects[t];
    }
    unsigned int found[kLocalBuffer];
    unsigned int total = lbvh::query_device(tree, lbvh::overlaps(box), found, kLocalBuffer);
    if (total > kLocalBuffer) {  // the query found more than the buffer holds: pairs lost
        atomicAdd(overflow_count, 1u);
        total = kLocalBuffer;
    }
    unsigned int mine = 0;
    for (unsigned int k = 0; k < total; ++k) mine += found[k] > i ? 1u : 0u;
    if (mine == 0) return;
    unsigned long long slot = atomicAdd(pair_count, static_cast<unsigned long long>(mine));
    for (unsigned int k = 0; k < total; ++k) {
        if (found[k] > i) {
            if (slot < capacity) pairs[slot] = make_uint2(i, found[k]);
            ++slot;
        }
    }
}

void print_line(const char* peer, const char* what, std::size_t n, const char* extra,
                const Timing& t, bool with_wall) {
    std::printf("peer %s %s N=%zu %smedian_ms=%.3f min_ms=%.3f", peer, what, n, extra,
                t.gpu.median_ms, t.gpu.min_ms);
    if (with_wall) std::printf(" wall_median_ms=%.3f wall_min_ms=%.3f", t.wall.median_ms, t.wall.min_ms);
    std::printf("\n");
    std::fflush(stdout);
}

bool bench_lbvh(const std::vector<Box>& boxes, float side, int repeat, bool check) {
    const std::size_t n = boxes.size();
    bool ok = true;

    // The constructor copies the boxes into a host_vector, uploads them (objects_d_) and
    // calls construct() once: the tree exists from here on.
    Bvh tree(boxes.begin(), boxes.end());

    // (a) build. construct() does not touch the host objects: it runs on objects_d_, already
    // on the device. Inside the region: the AABB transform, the whole-scene AABB reduce
    // (a device->host read, so a sync), 30-bit Morton codes, thrust::stable_sort_by_key
    // (codes; boxes and indices), the uniqueness check of the codes (thrust::unique_copy, a
    // sync) and, when codes repeat, the 64-bit code+index keys, the leaf nodes, the Karras
    // internal nodes, the bottom-up AABB pass; plus the cudaMalloc/cudaFree of construct()'s
    // temporaries (Morton codes, indices, 64-bit codes, flags, Thrust's sort storage). The
    // tree's own node and AABB arrays keep their size between runs, so are not reallocated.
    const Timing build = time_it(repeat, [] {}, [&] { tree.construct(); });
    print_line("lbvh", "build", n, "", build, true);

    // (a') build including the upload: assign() = host_vector assign (a host memcpy of the
    // N boxes), objects_d_ = objects_h_ (a pageable host->device copy of N * 32 bytes),
    // then construct() as above.
    const Timing build_up =
        time_it(repeat, [] {}, [&] { tree.assign(boxes.begin(), boxes.end()); });
    print_line("lbvh", "build_incl_upload", n, "", build_up, true);

    // (b) all pairs. Output: 8 N pairs (the scene has about 2 N), allocated once.
    const unsigned long long capacity = 8ull * n;
    uint2* d_pairs = nullptr;
    unsigned long long* d_count = nullptr;
    unsigned int* d_overflow = nullptr;
    CUDA_CHECK(cudaMalloc(&d_pairs, capacity * sizeof(uint2)));
    CUDA_CHECK(cudaMalloc(&d_count, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&d_overflow, sizeof(unsigned int)));
    const BvhView view = std::as_const(tree).get_device_repr();
    const unsigned int blocks = static_cast<unsigned int>((n + kBlock - 1) / kBlock);

    const std::uint64_t cpu_pairs = check ? cpu_pair_count(boxes, side) : 0;
    if (check) {
        std::printf("peer check cpu_grid_pairs N=%zu pairs=%llu\n", n, (unsigned long long)cpu_pairs);
        // lbvh's query_device keeps a fixed stack of 64 node indices; it holds at most one
        // entry per level, so a tree deeper than 64 could overflow it. Report the depth.
        std::vector<lbvh::detail::node> nodes(view.num_nodes);
        CUDA_CHECK(cudaMemcpy(nodes.data(), view.nodes, nodes.size() * sizeof(nodes[0]),
                              cudaMemcpyDeviceToHost));
        unsigned int max_depth = 0;
        std::vector<std::pair<unsigned int, unsigned int>> todo{{0u, 0u}};  // (node, depth)
        while (!todo.empty()) {
            const auto [node, depth] = todo.back();
            todo.pop_back();
            max_depth = std::max(max_depth, depth);
            if (nodes[node].object_idx == 0xFFFFFFFFu) {
                todo.push_back({nodes[node].left_idx, depth + 1});
                todo.push_back({nodes[node].right_idx, depth + 1});
            }
        }
        std::printf("peer check lbvh tree N=%zu max_leaf_depth=%u%s\n", n, max_depth,
                    max_depth >= 64 ? " WARNING: lbvh's 64-entry query stack may overflow" : "");
    }

    auto run_pairs = [&](auto leaf_order, const char* name) {
        // The counters are zeroed before each run, outside the timed region; the region is
        // the one kernel launch (its traversal, the pair writes, the atomics).
        auto reset = [&] {
            CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof(unsigned long long), 0));
            CUDA_CHECK(cudaMemsetAsync(d_overflow, 0, sizeof(unsigned int), 0));
        };
        auto launch = [&] {
            all_pairs_kernel<decltype(leaf_order)::value>
                <<<blocks, kBlock, 0, 0>>>(view, d_pairs, capacity, d_count, d_overflow);
        };
        const Timing t = time_it(repeat, reset, launch);
        unsigned long long pairs = 0;
        unsigned int overflow = 0;
        CUDA_CHECK(cudaMemcpy(&pairs, d_count, sizeof pairs, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&overflow, d_overflow, sizeof overflow, cudaMemcpyDeviceToHost));
        const bool out_overflow = pairs > capacity;
        char extra[160];
        std::snprintf(extra, sizeof extra, "pairs=%llu overflow=%u out_overflow=%d ", pairs,
                      overflow, out_overflow ? 1 : 0);
        print_line("lbvh", name, n, extra, t, false);

        if (check) {
            // Every pair written is (i, j), i < j < N, and the two boxes overlap; the count
            // equals the CPU grid's. (A query visits each leaf at most once, so a thread
            // cannot write a pair twice.)
            const std::size_t written = static_cast<std::size_t>(std::min<unsigned long long>(pairs, capacity));
            std::vector<uint2> h(written);
            CUDA_CHECK(cudaMemcpy(h.data(), d_pairs, written * sizeof(uint2), cudaMemcpyDeviceToHost));
            std::size_t bad = 0;
            for (const uint2& p : h)
                if (!(p.x < p.y && p.y < n && overlaps_host(boxes[p.x], boxes[p.y]))) ++bad;
            const bool good = bad == 0 && overflow == 0 && !out_overflow && pairs == cpu_pairs;
            std::printf("peer check lbvh %s N=%zu pairs=%llu cpu_pairs=%llu bad_pairs=%zu %s\n", name,
                        n, pairs, (unsigned long long)cpu_pairs, bad, good ? "OK" : "MISMATCH");
            ok = ok && good;
        }
    };
    run_pairs(std::false_type{}, "all_pairs");
    run_pairs(std::true_type{}, "all_pairs_leaf_order");

    CUDA_CHECK(cudaFree(d_pairs));
    CUDA_CHECK(cudaFree(d_count));
    CUDA_CHECK(cudaFree(d_overflow));
    return ok;
}

// ---------------------------------------------------------------------------------------
// CUB DeviceRadixSort::SortPairs.

bool bench_cub(std::size_t n, int repeat, bool check) {
    // Keys: N full 32-bit words of a std::mt19937(7); for the 30-bit run, the same keys with
    // the top two bits cleared. Values: 0..N-1.
    std::vector<std::uint32_t> keys32(n), keys30(n), values(n);
    std::mt19937 engine(7);
    for (std::size_t i = 0; i < n; ++i) {
        keys32[i] = static_cast<std::uint32_t>(engine());
        keys30[i] = keys32[i] & 0x3FFFFFFFu;
        values[i] = static_cast<std::uint32_t>(i);
    }
    std::uint32_t *d_keys32, *d_keys30, *d_keys_out, *d_vals_in, *d_vals_out;
    const std::size_t bytes = n * sizeof(std::uint32_t);
    CUDA_CHECK(cudaMalloc(&d_keys32, bytes));
    CUDA_CHECK(cudaMalloc(&d_keys30, bytes));
    CUDA_CHECK(cudaMalloc(&d_keys_out, bytes));
    CUDA_CHECK(cudaMalloc(&d_vals_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_vals_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_keys32, keys32.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_keys30, keys30.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_vals_in, values.data(), bytes, cudaMemcpyHostToDevice));

    // Temporary storage: sized for the larger of the two calls, allocated once, outside
    // every timed region.
    const int items = static_cast<int>(n);
    std::size_t temp_bytes = 0;
    for (int bits : {32, 30}) {
        std::size_t b = 0;
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, b, d_keys32, d_keys_out, d_vals_in,
                                                   d_vals_out, items, 0, bits, 0));
        temp_bytes = std::max(temp_bytes, b);
    }
    void* d_temp = nullptr;
    CUDA_CHECK(cudaMalloc(&d_temp, temp_bytes));

    bool ok = true;
    for (int bits : {32, 30}) {
        const std::uint32_t* d_in = bits == 32 ? d_keys32 : d_keys30;
        // The timed region is the one SortPairs call (out of place: the inputs are never
        // modified, so every run sorts the same data): all of its passes and kernels.
        const Timing t = time_it(repeat, [] {}, [&] {
            std::size_t tb = temp_bytes;
            CUDA_CHECK(cub::DeviceRadixSort::SortPairs(d_temp, tb, d_in, d_keys_out, d_vals_in,
                                                       d_vals_out, items, 0, bits, 0));
        });
        std::printf("peer cub sort_pairs N=%zu bits=%d median_ms=%.3f min_ms=%.3f gpairs_per_s=%.3f\n",
                    n, bits, t.gpu.median_ms, t.gpu.min_ms,
                    t.gpu.median_ms > 0 ? static_cast<double>(n) / t.gpu.median_ms / 1e6 : 0.0);
        std::fflush(stdout);
        if (check) {
            // The keys come out ascending and each value points at the key it came with.
            const std::vector<std::uint32_t>& in = bits == 32 ? keys32 : keys30;
            std::vector<std::uint32_t> k(n), v(n);
            CUDA_CHECK(cudaMemcpy(k.data(), d_keys_out, bytes, cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(v.data(), d_vals_out, bytes, cudaMemcpyDeviceToHost));
            std::size_t bad = 0;
            for (std::size_t i = 0; i < n; ++i) {
                if (i > 0 && k[i - 1] > k[i]) ++bad;
                if (v[i] >= n || in[v[i]] != k[i]) ++bad;
            }
            std::printf("peer check cub sort_pairs N=%zu bits=%d bad=%zu %s\n", n, bits, bad,
                        bad == 0 ? "OK" : "MISMATCH");
            ok = ok && bad == 0;
        }
    }
    CUDA_CHECK(cudaFree(d_temp));
    CUDA_CHECK(cudaFree(d_keys32));
    CUDA_CHECK(cudaFree(d_keys30));
    CUDA_CHECK(cudaFree(d_keys_out));
    CUDA_CHECK(cudaFree(d_vals_in));
    CUDA_CHECK(cudaFree(d_vals_out));
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: %s N [repeat=10] [nocheck]\n", argv[0]);
        return 2;
    }
    const long long n_arg = std::atoll(argv[1]);
    const int repeat = argc > 2 ? std::atoi(argv[2]) : 10;
    const bool check = !(argc > 3 && std::strcmp(argv[3], "nocheck") == 0);
    if (argc > 3 && check) {
        std::fprintf(stderr, "peers_bench: third argument must be 'nocheck'\n");
        return 2;
    }
    // lbvh needs at least 2 objects (with 1, its root is a leaf and the query reads past the
    // nodes) and 32-bit node indices (2N - 1 < 2^32); CUB's item count here is an int.
    if (n_arg < 2 || n_arg > 1000000000LL || repeat < 1) {
        std::fprintf(stderr, "peers_bench: need 2 <= N <= 1e9 and repeat >= 1\n");
        return 2;
    }
    const std::size_t n = static_cast<std::size_t>(n_arg);

    int device = 0, runtime = 0, driver = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    std::printf("peer header device=\"%s\" cc=%d.%d sms=%d runtime=%d driver=%d cub=%d "
                "lbvh_rev=%s N=%zu repeat=%d check=%d\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, runtime, driver,
                CUB_VERSION, PEERS_LBVH_REV, n, repeat, check ? 1 : 0);

    const std::uint32_t seed = 42;
    float side = 0;
    const auto g0 = std::chrono::steady_clock::now();
    const std::vector<Box> boxes = uniform_scene(n, seed, side);
    const double gen_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count();
    std::printf("peer scene uniform N=%zu seed=%u side=%.9g gen_host_ms=%.1f\n", n, seed, side, gen_ms);
    std::fflush(stdout);

    bool ok = true;
    try {
        ok = bench_lbvh(boxes, side, repeat, check) && ok;
    } catch (const std::exception& e) {  // Thrust reports CUDA errors as exceptions
        std::fprintf(stderr, "peers_bench: lbvh failed: %s\n", e.what());
        return 1;
    }
    ok = bench_cub(n, repeat, check) && ok;
    if (!ok) {
        std::printf("peer result FAILED (a check above says MISMATCH)\n");
        return 1;
    }
    std::printf("peer result %s\n", check ? "OK" : "OK (unchecked)");
    return 0;
}
