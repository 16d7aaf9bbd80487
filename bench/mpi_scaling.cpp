// Strong and weak scaling of broadphase::mpi's find_pairs (docs/performance.md, "MPI ranks"),
// run under mpirun on any number of ranks; rank 0 prints one Markdown table row per run.
//
//     mpirun -np P mpi_scaling [--method M] [--boxes N] [--mode strong|weak]
//                              [--placement slabs|random] [--repeat R] [--header yes]
//
// strong: N boxes in all (uniform's cubes of side 0.8 N^(-1/3), min corners uniform in
//   [0, 1)^3), rank r holding those of the slab [r/P, (r+1)/P) of x (placement slabs) or every
//   P-th one (placement random: each rank's boxes span the whole scene). Against one process
//   over all N boxes.
// weak: N boxes per rank, rank r's in [r, r + 1) x [0, 1)^2 at uniform's density for N (the
//   scene grows with P). Against one process over rank 0's N boxes.
// Each rank generates its own boxes from the seed (rank-independent draws: the same scene on any
// P). A run is set_boxes then find_pairs, R times; the times are the slowest rank's, the best
// of R. "one process" is the same calls on a DistributedScene over MPI_COMM_SELF on rank 0.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "broadphase/mpi.hpp"

using namespace broadphase;

namespace {

struct Args {
    std::string method = "sweep_and_prune";
    std::size_t boxes = 1000000;
    std::string mode = "strong";
    std::string placement = "slabs";
    int repeat = 3;
    bool header = false;  ///< print the table's header first
};

// This process's CPU time in seconds: on a machine shared with other work (or with more ranks
// than cores) the wall time measures the contention; the busiest rank's CPU time is what it
// would take with a core of its own (Open MPI's polling while a rank waits adds to it).
double cpu_now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Box k of a uniform scene of `n` boxes whose min corners are uniform in [x0, x0 + 1) x [0, 1)^2:
// each box from its own generator state, so that any rank draws any box.
Box box_at(std::size_t k, std::size_t n, float x0, std::uint32_t seed) {
    std::mt19937 rng(seed ^ static_cast<std::uint32_t>(k * 2654435761u));
    std::uniform_real_distribution<float> u(0, 1);
    const float side = 0.8f * std::cbrt(1.0f / float(n));
    const Vec3 lo{x0 + u(rng), u(rng), u(rng)};
    return {lo, {lo.x + side, lo.y + side, lo.z + side}};
}

struct Timing {
    double set = 0, pairs = 0;
    double cpu = 1e30;  // the busiest rank's CPU time of set_boxes + find_pairs, best run
    std::uint64_t found = 0;
    mpi::ExchangeStats exchange;
};

// The best of `repeat` runs of set_boxes + find_pairs (each time the slowest rank's), and the
// totals over the ranks of the pairs and of what was exchanged.
Timing run(MPI_Comm comm, const Args& args, const std::vector<Box>& boxes) {
    auto scene = mpi::DistributedScene::create(comm, args.method).value();
    Timing best;
    best.set = best.pairs = 1e30;
    for (int k = 0; k < args.repeat; ++k) {
        MPI_Barrier(comm);
        const double c0 = cpu_now(), t0 = now();
        if (!scene->set_boxes(boxes)) MPI_Abort(comm, 1);
        const double t1 = now();
        auto pairs = scene->find_pairs();
        const double t2 = now(), c1 = cpu_now();
        if (!pairs) MPI_Abort(comm, 1);
        double times[3] = {t1 - t0, t2 - t1, c1 - c0};
        MPI_Allreduce(MPI_IN_PLACE, times, 3, MPI_DOUBLE, MPI_MAX, comm);
        best.cpu = std::min(best.cpu, times[2]);
        if (times[0] + times[1] < best.set + best.pairs) {
            best.set = times[0];
            best.pairs = times[1];
            const auto& e = scene->last_exchange();
            std::uint64_t sums[5] = {pairs->size(), e.items_sent, e.items_received, e.bytes_sent,
                                     e.bytes_received};
            MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_UINT64_T, MPI_SUM, comm);
            best.found = sums[0];
            best.exchange = {sums[1], sums[2], sums[3], sums[4]};
        }
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    Args args;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--method")
            args.method = value;
        else if (key == "--boxes")
            args.boxes = std::size_t(std::atoll(value.c_str()));
        else if (key == "--mode")
            args.mode = value;
        else if (key == "--placement")
            args.placement = value;
        else if (key == "--repeat")
            args.repeat = std::max(1, std::atoi(value.c_str()));
        else if (key == "--header")
            args.header = value == "yes";
        else {
            std::fprintf(stderr, "mpi_scaling: unknown option %s\n", key.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool strong = args.mode == "strong";
    const bool slabs = args.placement == "slabs";

    // This rank's boxes, and (rank 0) the single process's.
    std::vector<Box> mine, single;
    if (strong) {
        for (std::size_t k = 0; k < args.boxes; ++k) {
            const bool here = slabs ? false : k % std::size_t(size) == std::size_t(rank);
            Box b = box_at(k, args.boxes, 0, 42);
            const int slab = std::min(size - 1, int(b.min.x * float(size)));
            if (here || (slabs && slab == rank)) mine.push_back(b);
            if (rank == 0) single.push_back(b);
        }
    } else {
        for (std::size_t k = 0; k < args.boxes; ++k) {
            const auto g = std::size_t(rank) * args.boxes + k;
            mine.push_back(box_at(g, args.boxes, slabs ? float(rank) : 0, 42));
        }
        if (rank == 0) single = mine;
    }

    const Timing many = run(MPI_COMM_WORLD, args, mine);
    Timing one;
    if (rank == 0) one = run(MPI_COMM_SELF, args, single);
    int status = 0;
    if (rank == 0) {
        if (args.header) {
            std::printf(
                "| mode | placement | method | ranks | boxes | pairs | ghosts sent | MB sent "
                "| set_boxes ms | find_pairs ms | total ms | one process ms | speed-up "
                "| efficiency | cpu ms | one process cpu ms | cpu efficiency |\n");
            std::printf(
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
                "| --- | --- | --- | --- | --- |\n");
        }
        if (strong && one.found != many.found) {
            std::fprintf(stderr, "mpi_scaling: %llu pairs over the ranks, %llu in one process\n",
                         static_cast<unsigned long long>(many.found),
                         static_cast<unsigned long long>(one.found));
            status = 1;
        }
        const double t_many = many.set + many.pairs, t_one = one.set + one.pairs;
        const double efficiency = strong ? t_one / (double(size) * t_many) : t_one / t_many;
        const double cpu_efficiency =
            strong ? one.cpu / (double(size) * many.cpu) : one.cpu / many.cpu;
        const std::size_t total = strong ? args.boxes : args.boxes * std::size_t(size);
        std::printf(
            "| %s | %s | %s | %d | %zu | %llu | %llu | %.2f | %.1f | %.1f | %.1f | %.1f "
            "| %.2f | %.0f%% | %.1f | %.1f | %.0f%% |\n",
            args.mode.c_str(), args.placement.c_str(), args.method.c_str(), size, total,
            static_cast<unsigned long long>(many.found),
            static_cast<unsigned long long>(many.exchange.items_sent),
            double(many.exchange.bytes_sent) / 1e6, many.set * 1e3, many.pairs * 1e3, t_many * 1e3,
            t_one * 1e3, t_one / t_many, 100 * efficiency, many.cpu * 1e3, one.cpu * 1e3,
            100 * cpu_efficiency);
    }
    MPI_Finalize();
    return status;
}
