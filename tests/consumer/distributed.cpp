// The consumer project's MPI program (CONSUMER_MPI): a uniform scene dealt over the ranks,
// its pairs found by broadphase::mpi, their total against one process's. Run under mpirun on
// two ranks; exits 0 only when the totals agree on every rank.
#include <broadphase/mpi.hpp>
#include <broadphase/scene.hpp>
#include <broadphase/structure.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    using namespace broadphase;
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1, status = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    {
        const auto scene = generate_scene("uniform", 3000).value();
        std::vector<Box> mine;
        for (std::size_t i = std::size_t(rank); i < scene.boxes.size(); i += std::size_t(size))
            mine.push_back(scene.boxes[i]);
        auto distributed = mpi::DistributedScene::create(MPI_COMM_WORLD, "sweep_and_prune");
        if (distributed && (*distributed)->set_boxes(mine)) {
            auto pairs = (*distributed)->find_pairs();
            if (pairs) {
                std::uint64_t total = pairs->size();
                MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
                const auto expected = find_pairs_cpu("sweep_and_prune", scene.boxes).value();
                status = total == expected.size() ? 0 : 1;
                if (rank == 0)
                    std::printf("broadphase::mpi: %llu pairs over %d ranks, %zu in one process\n",
                                static_cast<unsigned long long>(total), size, expected.size());
            }
        }
    }
    MPI_Finalize();
    return status;
}
