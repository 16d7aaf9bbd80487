// A particle simulation over MPI ranks on broadphase::mpi (docs/mpi.md): the domain [0, 1)^3 is
// cut into slabs along x, one per rank; each rank moves its own particles, hands their boxes to
// a DistributedScene every step and gets back the contact pairs it is responsible for, then
// asks a region query (a probe box in its own slab) and casts a ray along x through every slab.
//
//     mpirun -np 4 broadphase_mpi_example [method] [particles per rank] [steps]
//
// Defaults: sweep_and_prune, 2000, 5. Rank 0 also gathers every box and checks each step's pair
// count against one process (find_pairs_cpu over the whole scene). Exits 0 when they agree, 1
// when not or on an error (printed by every rank with the same words).
#include <broadphase/mpi.hpp>
#include <broadphase/structure.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct Particle {
    broadphase::Vec3 position, velocity;
};

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string method = argc > 1 ? argv[1] : "sweep_and_prune";
    const int per_rank = argc > 2 ? std::atoi(argv[2]) : 2000;
    const int steps = argc > 3 ? std::atoi(argv[3]) : 5;
    const float radius = 0.4f * std::cbrt(1.0f / float(per_rank * size));

    // This rank's particles start in its slab [rank / size, (rank + 1) / size) of x.
    std::mt19937 rng(1234u + unsigned(rank));
    std::uniform_real_distribution<float> unit(0, 1), speed(-0.01f, 0.01f);
    std::vector<Particle> particles(std::size_t(per_rank > 0 ? per_rank : 0));
    for (Particle& p : particles) {
        p.position = {(float(rank) + unit(rng)) / float(size), unit(rng), unit(rng)};
        p.velocity = {speed(rng), speed(rng), speed(rng)};
    }

    int status = 0;
    {
        auto created = broadphase::mpi::DistributedScene::create(MPI_COMM_WORLD, method);
        if (!created) {
            std::fprintf(stderr, "broadphase_mpi_example: %s\n", created.error().message.c_str());
            MPI_Finalize();
            return 1;
        }
        auto& scene = *created.value();
        std::vector<broadphase::Box> boxes(particles.size());
        for (int step = 0; step < steps && status == 0; ++step) {
            // The simulation's own step: move, bounce off the domain's walls.
            for (std::size_t i = 0; i < particles.size(); ++i) {
                Particle& p = particles[i];
                for (int axis = 0; axis < 3; ++axis) {
                    p.position[axis] += p.velocity[axis];
                    if (p.position[axis] < 0 || p.position[axis] > 1) p.velocity[axis] *= -1;
                }
                const broadphase::Vec3 r{radius, radius, radius};
                boxes[i] = {{p.position.x - r.x, p.position.y - r.y, p.position.z - r.z},
                            {p.position.x + r.x, p.position.y + r.y, p.position.z + r.z}};
            }
            // The hand-over: this rank's boxes, then the pairs it is responsible for.
            if (auto s = scene.set_boxes(boxes); !s) {
                std::fprintf(stderr, "broadphase_mpi_example: %s\n", s.error().message.c_str());
                status = 1;
                break;
            }
            auto pairs = scene.find_pairs();
            if (!pairs) {
                std::fprintf(stderr, "broadphase_mpi_example: %s\n", pairs.error().message.c_str());
                status = 1;
                break;
            }
            const auto ghosts = scene.last_exchange().items_sent;
            // A probe in this rank's slab, and a ray along x through every slab.
            const float x = (float(rank) + 0.5f) / float(size);
            const broadphase::Box probe{{x - 0.05f, 0.45f, 0.45f}, {x + 0.05f, 0.55f, 0.55f}};
            const broadphase::Ray ray{{-1, 0.5f + 0.01f * float(rank), 0.5f}, {1, 0, 0}, 3};
            auto probed = scene.query_boxes({&probe, 1});
            auto hit = scene.ray_casts({&ray, 1});
            if (!probed || !hit) {
                std::fprintf(stderr, "broadphase_mpi_example: %s\n",
                             (!probed ? probed.error() : hit.error()).message.c_str());
                status = 1;
                break;
            }

            // Rank 0: the totals, and the pair count of one process over every rank's boxes.
            std::uint64_t counts[2] = {pairs->size(), ghosts};
            std::uint64_t totals[2] = {0, 0};
            MPI_Reduce(counts, totals, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
            std::vector<broadphase::Box> whole(std::size_t(per_rank) * std::size_t(size));
            MPI_Gather(boxes.data(), int(boxes.size() * sizeof(broadphase::Box)), MPI_BYTE,
                       whole.data(), int(boxes.size() * sizeof(broadphase::Box)), MPI_BYTE, 0,
                       MPI_COMM_WORLD);
            if (rank == 0) {
                const auto expected = broadphase::find_pairs_cpu("brute_force", whole);
                const bool agree = expected && expected->size() == totals[0];
                std::printf(
                    "step %d: %llu pairs over %d ranks (%llu ghosts sent); one process: "
                    "%zu pairs, %s; probe of rank 0: %zu particles; ray of rank 0: %s\n",
                    step, static_cast<unsigned long long>(totals[0]), size,
                    static_cast<unsigned long long>(totals[1]),
                    expected ? expected->size() : std::size_t(0), agree ? "the same" : "DIFFERENT",
                    probed->hits(0).size(),
                    (*hit)[0] ? ("rank " + std::to_string((*hit)[0]->id.rank) + " box " +
                                 std::to_string((*hit)[0]->id.index))
                                    .c_str()
                              : "no hit");
                if (!agree) status = 1;
            }
            MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }  // the scene is destroyed before MPI_Finalize
    MPI_Finalize();
    return status;
}
