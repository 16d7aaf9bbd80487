// DistributedScene: pairs, region queries and ray casts over a scene split across MPI ranks.
//
// The design follows ArborX's DistributedTree (D. Lebrun-Grandié, A. Prokopenko, B. Turcksin
// and S. R. Slattery, "ArborX: A Performance Portable Geometric Search Library", ACM
// Transactions on Mathematical Software 47(1), 2021; docs/references.md, [Lebrun-Grandié et al.
// 2021]): each rank's bounds, gathered on every rank (MPI_Allgather), form a top tree over the
// ranks, each rank indexes its own boxes in a local structure, and a query is forwarded
// (MPI_Alltoallv) only to the ranks whose bounds it touches, which answer it from their local
// structure and send the results back to the rank that asked.
//
// All pairs: a pair inside one rank is that rank's. A pair between ranks r and s is reported
// by one of them, pair_owner(r, s) (the file comment of broadphase/mpi.hpp: the one to which
// fewer boxes would travel): the other rank sends it, as ghosts, its boxes that overlap the
// owner's bounds, and the owner runs its method's self-pairs over its own boxes and the ghosts
// together, keeping the pairs that have one of its boxes (a ghost-ghost pair is another
// rank's). The method's all-pairs pass, not one query per ghost: some methods (sweep and prune)
// answer a single region query in O(n). If boxes a (of r) and b (of s) overlap, a overlaps s's
// bounds, which contain b, so a reaches s as a ghost and the pair is found there, once. What is
// sent is the boxes near the other ranks' bounds, not every box.
//
// Errors: every check that can fail on one rank alone is followed by agree(), an allreduce of
// which ranks failed before any further exchange; the first failed rank's Error is then
// broadcast, so that every rank returns the same error and no rank waits for a message that
// will not come.
#include "broadphase/mpi.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <new>
#include <utility>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"

#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/lbvh.hpp"
#endif

namespace broadphase::mpi {
namespace {

// A box sent to another rank: its box and its index there (28 bytes).
struct Ghost {
    Box box;
    std::uint32_t index = 0;
};
// A region query forwarded to a rank: the region and the asking rank's query number (28 bytes).
struct RegionQuery {
    Box region;
    std::uint32_t query = 0;
};
// A ray forwarded to a rank (32 bytes).
struct RayQuery {
    Ray ray;
    std::uint32_t query = 0;
};
// A rank's closest hit of a forwarded ray (12 bytes); misses are not sent.
struct RayAnswer {
    std::uint32_t query = 0;
    std::uint32_t index = 0;
    float t = 0;
};
// A rank's bounds as gathered: `empty` is 1 for a rank without boxes (28 bytes).
struct RankBounds {
    Box box;
    std::uint32_t empty = 1;
};
// Sent as bytes between ranks of one build: no padding to leave uninitialised.
static_assert(sizeof(Ghost) == 28 && sizeof(RegionQuery) == 28 && sizeof(RayQuery) == 32 &&
              sizeof(RayAnswer) == 12 && sizeof(RankBounds) == 28);

// The error of the first rank (lowest number) whose `local` failed, on every rank; success when
// none did. Collective. The failing rank's message is prefixed by "rank R: ".
Status agree(MPI_Comm comm, const Status& local) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int first = local ? size : rank;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) return Status::success();
    // The Error's fields as words, then its message.
    std::uint64_t head[4] = {0, 0, 0, 0};  // code, has box, box, message length
    std::string message;
    if (rank == first) {
        const Error& e = local.error();
        message = "rank " + std::to_string(rank) + ": " + e.message;
        head[0] = static_cast<std::uint64_t>(e.code);
        head[1] = e.box.has_value() ? 1 : 0;
        head[2] = e.box.value_or(0);
        head[3] = message.size();
    }
    MPI_Bcast(head, 4, MPI_UINT64_T, first, comm);
    message.resize(head[3]);
    MPI_Bcast(message.data(), static_cast<int>(head[3]), MPI_CHAR, first, comm);
    std::optional<std::size_t> box;
    if (head[1] != 0) box = static_cast<std::size_t>(head[2]);
    return Error{static_cast<ErrorCode>(head[0]), std::move(message), box};
}

// Items of type T, one list per destination rank, sent with one MPI_Alltoallv; what each rank
// received comes back in `received` (rank by rank, in rank order) with `from[s]` the number of
// items from rank s. Collective; counts past what an int of bytes holds on any rank are a
// limit_exceeded error on every rank, before anything is sent. Adds to `stats` what went to and
// came from the other ranks.
template <class T>
Status exchange(MPI_Comm comm, const std::vector<std::vector<T>>& outgoing,
                std::vector<T>& received, std::vector<int>& from, ExchangeStats& stats) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    constexpr std::uint64_t kMaxItems = INT_MAX / sizeof(T);
    std::uint64_t total = 0;
    Status fits;
    for (int s = 0; s < size; ++s) {
        total += outgoing[std::size_t(s)].size();
        if (outgoing[std::size_t(s)].size() > kMaxItems || total > kMaxItems) {
            fits =
                Error{ErrorCode::limit_exceeded,
                      std::to_string(outgoing[std::size_t(s)].size()) + " items for rank " +
                          std::to_string(s) + " (" + std::to_string(total) +
                          " in all) exceed what one MPI_Alltoallv of " + std::to_string(sizeof(T)) +
                          "-byte items holds (" + std::to_string(kMaxItems) + ")"};
            break;
        }
    }
    if (Status s = agree(comm, fits); !s) return s;

    std::vector<int> send_counts(static_cast<std::size_t>(size)),
        send_displs(static_cast<std::size_t>(size));
    std::vector<T> send;
    send.reserve(total);
    for (int s = 0; s < size; ++s) {
        const auto& items = outgoing[std::size_t(s)];
        send_displs[std::size_t(s)] = static_cast<int>(send.size() * sizeof(T));
        send_counts[std::size_t(s)] = static_cast<int>(items.size() * sizeof(T));
        send.insert(send.end(), items.begin(), items.end());
    }
    std::vector<int> recv_counts(static_cast<std::size_t>(size)),
        recv_displs(static_cast<std::size_t>(size));
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
    // What this rank receives in all must fit too; agreed, as the senders' check was.
    std::uint64_t incoming = 0;
    for (int s = 0; s < size; ++s) incoming += std::uint64_t(recv_counts[std::size_t(s)]);
    Status room;
    if (incoming > INT_MAX) {
        room = Error{ErrorCode::limit_exceeded, std::to_string(incoming) +
                                                    " bytes to receive exceed what one "
                                                    "MPI_Alltoallv holds (2^31 - 1)"};
    }
    if (Status s = agree(comm, room); !s) return s;
    int offset = 0;
    for (int s = 0; s < size; ++s) {
        recv_displs[std::size_t(s)] = offset;
        offset += recv_counts[std::size_t(s)];
    }
    received.resize(std::size_t(offset) / sizeof(T));
    MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE, received.data(),
                  recv_counts.data(), recv_displs.data(), MPI_BYTE, comm);
    from.assign(std::size_t(size), 0);
    for (int s = 0; s < size; ++s) {
        from[std::size_t(s)] = recv_counts[std::size_t(s)] / static_cast<int>(sizeof(T));
        if (s == rank) continue;
        stats.items_sent += std::uint64_t(send_counts[std::size_t(s)]) / sizeof(T);
        stats.items_received += std::uint64_t(recv_counts[std::size_t(s)]) / sizeof(T);
        stats.bytes_sent += std::uint64_t(send_counts[std::size_t(s)]) + sizeof(int);
        stats.bytes_received += std::uint64_t(recv_counts[std::size_t(s)]) + sizeof(int);
    }
    return Status::success();
}

// FNV-1a of a method name: every rank must give the same one.
std::uint64_t name_hash(std::string_view name) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : name) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}

Status validate_ray(const Ray& ray, std::size_t q) {
    const auto finite = [](const Vec3& v) {
        return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
    };
    if (!finite(ray.origin) || !finite(ray.dir) || std::isnan(ray.tmax)) {
        return Error{
            ErrorCode::invalid_argument,
            "ray " + std::to_string(q) + ": origin and direction must be finite and tmax not NaN",
            q};
    }
    return Status::success();
}

}  // namespace

struct DistributedScene::Impl {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    std::string method;
    bool on_gpu = false;
    std::vector<Box> boxes;
    // Indexes this rank's boxes for the forwarded queries (and, CPU methods, finds their pairs
    // when no ghost came); built by the first call after set_boxes that needs it.
    std::unique_ptr<Structure> local;
    bool local_built = false;
    // CPU methods: the method over this rank's boxes and the ghosts together.
    std::unique_ptr<Structure> with_ghosts;
    std::vector<RankBounds> bounds;  // by rank
    // sends[r * size + s]: the boxes of rank r that overlap rank s's bounds, as the last
    // find_pairs counted them (the ghosts r would send s).
    std::vector<std::uint64_t> sends;
    ExchangeStats stats;
#ifdef BROADPHASE_HAS_GPU
    std::unique_ptr<gpu::Context> own_context;
    gpu::Context* context = nullptr;
    std::unique_ptr<gpu::Lbvh> lbvh;
#endif

    ~Impl() {
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }

    // The rank that reports the pairs between ranks r and s (DistributedScene::pair_owner).
    int owner(int r, int s) const {
        if (r == s) return r;
        const std::uint64_t r_to_s = sends[std::size_t(r * size + s)];
        const std::uint64_t s_to_r = sends[std::size_t(s * size + r)];
        if (r_to_s != s_to_r) return r_to_s < s_to_r ? s : r;
        return (r + s) % 2 == 0 ? std::min(r, s) : std::max(r, s);
    }

    // A top tree over the bounds of the ranks `ranks` (non-empty ones only); `top_rank[k]` is
    // the rank of the tree's box k.
    Result<std::unique_ptr<Structure>> top_tree(const std::vector<int>& ranks,
                                                std::vector<int>& top_rank) const {
        std::vector<Box> top;
        top_rank.clear();
        for (int r : ranks) {
            if (bounds[std::size_t(r)].empty) continue;
            top.push_back(bounds[std::size_t(r)].box);
            top_rank.push_back(r);
        }
        auto tree = make_structure("lbvh");
        if (!tree) return tree.error();
        if (Status s = build_structure(**tree, top); !s) return s.error();
        return std::move(tree.value());
    }

    // Builds `local` over the rank's boxes unless it is built already.
    Status build_local() {
        if (local_built) return Status::success();
        if (Status s = build_structure(*local, boxes); !s) return s;
        local_built = true;
        return Status::success();
    }

    // The pairs, i < j, of `scene`: this rank's boxes, then (when `ghosts` is true) the ghosts
    // after them, by the rank's method.
    Result<std::vector<Pair>> method_pairs(const std::vector<Box>& scene, bool ghosts) {
#ifdef BROADPHASE_HAS_GPU
        if (on_gpu) {
            if (scene.size() < 2) return std::vector<Pair>{};
            return lbvh->find_pairs(scene);
        }
#endif
        Structure* structure = with_ghosts.get();
        if (!ghosts) {
            if (Status s = build_local(); !s) return s.error();
            structure = local.get();
        } else if (Status s = build_structure(*structure, scene); !s) {
            return s.error();
        }
        try {
            std::vector<Pair> pairs;
            structure->self_pairs(pairs);
            return pairs;
        } catch (const std::bad_alloc&) {
            return Error{ErrorCode::out_of_memory, method +
                                                       ": out of memory finding the pairs of " +
                                                       std::to_string(scene.size()) + " boxes"};
        }
    }
};

DistributedScene::DistributedScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DistributedScene::~DistributedScene() = default;

Result<std::unique_ptr<DistributedScene>> DistributedScene::create(MPI_Comm comm,
                                                                   std::string_view method,
                                                                   const Options& options) {
    if (comm == MPI_COMM_NULL)
        return Error{ErrorCode::invalid_argument, "DistributedScene: the communicator is null"};
    auto impl = std::make_unique<Impl>();
    MPI_Comm_dup(comm, &impl->comm);
    MPI_Comm_rank(impl->comm, &impl->rank);
    MPI_Comm_size(impl->comm, &impl->size);
    impl->method = std::string(method);
    impl->bounds.assign(std::size_t(impl->size), RankBounds{});
    impl->sends.assign(std::size_t(impl->size) * std::size_t(impl->size), 0);

    std::uint64_t hash[2] = {name_hash(method), ~name_hash(method)};
    MPI_Allreduce(MPI_IN_PLACE, hash, 2, MPI_UINT64_T, MPI_MAX, impl->comm);
    Status ready;
    if (hash[0] != ~hash[1]) {
        ready = Error{
            ErrorCode::invalid_argument,
            "DistributedScene: the ranks gave different methods (this one: " + impl->method + ")"};
    } else if (method == "gpu_lbvh") {
#ifdef BROADPHASE_HAS_GPU
        impl->on_gpu = true;
        impl->context = options.context;
        if (!impl->context) {
            gpu::ContextOptions context_options;
            context_options.device = options.device;
            auto context = gpu::Context::create(context_options);
            if (context) {
                impl->own_context = std::move(context.value());
                impl->context = impl->own_context.get();
            } else {
                ready = context.error();
            }
        }
        if (ready) {
            auto lbvh = gpu::Lbvh::create(*impl->context);
            if (lbvh) {
                impl->lbvh = std::move(lbvh.value());
            } else {
                ready = lbvh.error();
            }
        }
        if (ready) {
            auto local = make_structure(options.query_method);
            if (local) {
                impl->local = std::move(local.value());
            } else {
                ready = local.error();
            }
        }
#else
        ready = Error{ErrorCode::unsupported,
                      "DistributedScene: gpu_lbvh needs a build with the GPU part"};
#endif
    } else {
        auto local = make_structure(method);
        auto with_ghosts = make_structure(method);
        if (local && with_ghosts) {
            impl->local = std::move(local.value());
            impl->with_ghosts = std::move(with_ghosts.value());
        } else {
            ready = local ? with_ghosts.error() : local.error();
        }
    }
    (void)options;
    if (Status s = agree(impl->comm, ready); !s) return s.error();
    return std::unique_ptr<DistributedScene>(new DistributedScene(std::move(impl)));
}

int DistributedScene::rank() const {
    return impl_->rank;
}
int DistributedScene::size() const {
    return impl_->size;
}
std::string_view DistributedScene::method() const {
    return impl_->method;
}
std::span<const Box> DistributedScene::boxes() const {
    return impl_->boxes;
}
const ExchangeStats& DistributedScene::last_exchange() const {
    return impl_->stats;
}

int DistributedScene::pair_owner(int r, int s) const {
    return impl_->owner(r, s);
}

std::optional<Box> DistributedScene::bounds(int r) const {
    if (r < 0 || r >= impl_->size || impl_->bounds[std::size_t(r)].empty) return std::nullopt;
    return impl_->bounds[std::size_t(r)].box;
}

Status DistributedScene::set_boxes(std::span<const Box> boxes) {
    Impl& m = *impl_;
    Status local;
    if (boxes.size() >= (std::size_t(1) << 32)) {
        local = Error{ErrorCode::limit_exceeded,
                      std::to_string(boxes.size()) + " boxes on one rank (at most 2^32 - 1)"};
    } else {
        local = validate_boxes(boxes);
    }
    m.local_built = false;
    if (local) {
        try {
            m.boxes.assign(boxes.begin(), boxes.end());
        } catch (const std::bad_alloc&) {
            local = Error{ErrorCode::out_of_memory,
                          "out of memory copying " + std::to_string(boxes.size()) + " boxes"};
        }
    }
    if (Status s = agree(m.comm, local); !s) {
        m.boxes.clear();
        m.bounds.assign(std::size_t(m.size), RankBounds{});
        return s;
    }
    RankBounds mine;
    if (!m.boxes.empty()) mine = RankBounds{bounds_of(m.boxes), 0};
    MPI_Allgather(&mine, sizeof(RankBounds), MPI_BYTE, m.bounds.data(), sizeof(RankBounds),
                  MPI_BYTE, m.comm);
    return Status::success();
}

Result<std::vector<GlobalPair>> DistributedScene::find_pairs() {
    Impl& m = *impl_;
    m.stats = {};
    const auto me = static_cast<std::uint32_t>(m.rank);

    // The boxes that overlap each other rank's bounds, found through a top tree over them; then
    // every rank's counts, gathered, decide which way the ghosts go between each pair of ranks
    // (owner): only to the ranks that report the pairs are they sent.
    std::vector<int> others;
    for (int s = 0; s < m.size; ++s) {
        if (s != m.rank) others.push_back(s);
    }
    std::vector<std::vector<Ghost>> outgoing(std::size_t(m.size));
    Status ready;
    if (!m.boxes.empty() && !others.empty()) {
        std::vector<int> top_rank;
        auto top = m.top_tree(others, top_rank);
        if (!top) {
            ready = top.error();
        } else if ((*top)->size() > 0) {
            std::vector<std::uint32_t> hits;
            for (std::size_t i = 0; i < m.boxes.size(); ++i) {
                hits.clear();
                (*top)->query_box(m.boxes[i], hits);
                for (std::uint32_t k : hits) {
                    outgoing[std::size_t(top_rank[k])].push_back(
                        Ghost{m.boxes[i], static_cast<std::uint32_t>(i)});
                }
            }
        }
    }
    if (Status s = agree(m.comm, ready); !s) return s.error();
    std::vector<std::uint64_t> row(std::size_t(m.size), 0);
    for (int s = 0; s < m.size; ++s) row[std::size_t(s)] = outgoing[std::size_t(s)].size();
    MPI_Allgather(row.data(), m.size, MPI_UINT64_T, m.sends.data(), m.size, MPI_UINT64_T, m.comm);
    for (int s = 0; s < m.size; ++s) {
        if (m.owner(m.rank, s) != s) outgoing[std::size_t(s)] = {};
    }
    std::vector<Ghost> ghosts;
    std::vector<int> from;
    if (Status s = exchange(m.comm, outgoing, ghosts, from, m.stats); !s) return s.error();
    outgoing = {};

    // The pairs of the rank's boxes and the ghosts together, by the rank's method: those of
    // two local boxes and those of a local box and a ghost are this rank's; those of two
    // ghosts are another rank's, and dropped.
    std::vector<GlobalPair> pairs;
    Status found;
    try {
        const std::size_t n = m.boxes.size();
        std::vector<Box> scene;
        std::vector<GlobalId> ghost_ids;  // by ghost, after the n local boxes
        if (!ghosts.empty()) {
            scene.reserve(n + ghosts.size());
            scene.assign(m.boxes.begin(), m.boxes.end());
            ghost_ids.reserve(ghosts.size());
            std::size_t g = 0;
            for (int s = 0; s < m.size; ++s) {
                for (int k = 0; k < from[std::size_t(s)]; ++k, ++g) {
                    scene.push_back(ghosts[g].box);
                    ghost_ids.push_back(GlobalId{static_cast<std::uint32_t>(s), ghosts[g].index});
                }
            }
            ghosts = {};
        }
        auto found_pairs = m.method_pairs(ghost_ids.empty() ? m.boxes : scene, !ghost_ids.empty());
        if (!found_pairs) {
            found = found_pairs.error();
        } else {
            pairs.reserve(found_pairs->size());
            for (const Pair& p : *found_pairs) {
                if (p.j < n) {
                    pairs.push_back(GlobalPair{{me, p.i}, {me, p.j}});
                } else if (p.i < n) {
                    const GlobalId mine{me, p.i}, theirs = ghost_ids[p.j - n];
                    pairs.push_back(mine < theirs ? GlobalPair{mine, theirs}
                                                  : GlobalPair{theirs, mine});
                }
            }
            std::sort(pairs.begin(), pairs.end());
        }
    } catch (const std::bad_alloc&) {
        found = Error{ErrorCode::out_of_memory,
                      "out of memory after " + std::to_string(pairs.size()) + " pairs"};
    }
    if (Status s = agree(m.comm, found); !s) return s.error();
    return pairs;
}

Result<QueryHits> DistributedScene::query_boxes(std::span<const Box> regions) {
    Impl& m = *impl_;
    m.stats = {};
    Status ready;
    for (std::size_t q = 0; q < regions.size() && ready; ++q) {
        if (Status s = validate_box(regions[q], q); !s) {
            ready = Error{ErrorCode::invalid_argument, "region query " + s.error().message, q};
        }
    }
    if (regions.size() >= (std::size_t(1) << 32))
        ready = Error{ErrorCode::limit_exceeded, "more than 2^32 - 1 queries on one rank"};
    if (Status s = agree(m.comm, ready); !s) return s.error();

    // Each region to the ranks whose bounds it overlaps.
    std::vector<int> everyone(std::size_t(m.size));
    for (int s = 0; s < m.size; ++s) everyone[std::size_t(s)] = s;
    std::vector<int> top_rank;
    auto top = m.top_tree(everyone, top_rank);
    Status built = top ? m.build_local() : Status(top.error());
    if (Status s = agree(m.comm, built); !s) return s.error();
    std::vector<std::vector<RegionQuery>> outgoing(std::size_t(m.size));
    std::vector<std::uint32_t> hits;
    for (std::size_t q = 0; q < regions.size(); ++q) {
        hits.clear();
        (*top)->query_box(regions[q], hits);
        for (std::uint32_t k : hits) {
            outgoing[std::size_t(top_rank[k])].push_back(
                RegionQuery{regions[q], static_cast<std::uint32_t>(q)});
        }
    }
    std::vector<RegionQuery> asked;
    std::vector<int> from;
    if (Status s = exchange(m.comm, outgoing, asked, from, m.stats); !s) return s.error();
    outgoing = {};

    // The answers, to each asking rank as words: query, count, then that many indices.
    std::vector<std::vector<std::uint32_t>> answers(std::size_t(m.size));
    std::size_t a = 0;
    for (int s = 0; s < m.size; ++s) {
        for (int k = 0; k < from[std::size_t(s)]; ++k, ++a) {
            hits.clear();
            m.local->query_box(asked[a].region, hits);
            if (hits.empty()) continue;
            auto& words = answers[std::size_t(s)];
            words.push_back(asked[a].query);
            words.push_back(static_cast<std::uint32_t>(hits.size()));
            words.insert(words.end(), hits.begin(), hits.end());
        }
    }
    std::vector<std::uint32_t> words;
    if (Status s = exchange(m.comm, answers, words, from, m.stats); !s) return s.error();

    // Rows by query: count, then fill, then sort each row.
    QueryHits out;
    out.offsets.assign(regions.size() + 1, 0);
    for (std::size_t w = 0; w < words.size(); w += 2 + words[w + 1])
        out.offsets[words[w] + 1] += words[w + 1];
    for (std::size_t q = 0; q < regions.size(); ++q) out.offsets[q + 1] += out.offsets[q];
    out.ids.resize(out.offsets.back());
    std::vector<std::uint64_t> fill(out.offsets.begin(), out.offsets.end() - 1);
    std::size_t w = 0;
    for (int s = 0; s < m.size; ++s) {
        const std::size_t end = w + std::size_t(from[std::size_t(s)]);
        while (w < end) {
            const std::uint32_t q = words[w], count = words[w + 1];
            for (std::uint32_t k = 0; k < count; ++k)
                out.ids[fill[q]++] = GlobalId{static_cast<std::uint32_t>(s), words[w + 2 + k]};
            w += 2 + count;
        }
    }
    for (std::size_t q = 0; q < regions.size(); ++q) {
        std::sort(out.ids.begin() + std::ptrdiff_t(out.offsets[q]),
                  out.ids.begin() + std::ptrdiff_t(out.offsets[q + 1]));
    }
    return out;
}

Result<std::vector<std::optional<GlobalHit>>> DistributedScene::ray_casts(
    std::span<const Ray> rays) {
    Impl& m = *impl_;
    m.stats = {};
    Status ready;
    for (std::size_t q = 0; q < rays.size() && ready; ++q) ready = validate_ray(rays[q], q);
    if (rays.size() >= (std::size_t(1) << 32))
        ready = Error{ErrorCode::limit_exceeded, "more than 2^32 - 1 rays on one rank"};
    if (ready) ready = m.build_local();
    if (Status s = agree(m.comm, ready); !s) return s.error();

    // Each ray to the ranks whose bounds it enters (a ray that hits a box enters every box
    // containing it: the slab bounds only widen).
    std::vector<std::vector<RayQuery>> outgoing(std::size_t(m.size));
    for (std::size_t q = 0; q < rays.size(); ++q) {
        for (int s = 0; s < m.size; ++s) {
            const RankBounds& b = m.bounds[std::size_t(s)];
            if (!b.empty && ray_box_entry(rays[q], b.box))
                outgoing[std::size_t(s)].push_back(RayQuery{rays[q], std::uint32_t(q)});
        }
    }
    std::vector<RayQuery> asked;
    std::vector<int> from;
    if (Status s = exchange(m.comm, outgoing, asked, from, m.stats); !s) return s.error();
    outgoing = {};

    std::vector<std::vector<RayAnswer>> answers(std::size_t(m.size));
    std::size_t a = 0;
    for (int s = 0; s < m.size; ++s) {
        for (int k = 0; k < from[std::size_t(s)]; ++k, ++a) {
            if (auto hit = m.local->ray_cast(asked[a].ray))
                answers[std::size_t(s)].push_back(RayAnswer{asked[a].query, hit->id, hit->t});
        }
    }
    std::vector<RayAnswer> got;
    if (Status s = exchange(m.comm, answers, got, from, m.stats); !s) return s.error();

    std::vector<std::optional<GlobalHit>> out(rays.size());
    std::size_t g = 0;
    for (int s = 0; s < m.size; ++s) {
        for (int k = 0; k < from[std::size_t(s)]; ++k, ++g) {
            const GlobalHit hit{{static_cast<std::uint32_t>(s), got[g].index}, got[g].t};
            auto& best = out[got[g].query];
            if (!best || hit.t < best->t || (hit.t == best->t && hit.id < best->id)) best = hit;
        }
    }
    return out;
}

}  // namespace broadphase::mpi
