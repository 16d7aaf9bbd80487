// Bodies that come and go over gpu::ProxyScene (spawner.hpp).
#include "spawner.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "simulation.hpp"

namespace broadphase::simulation {

namespace {

constexpr float kGravity = 9.81f;
constexpr float kFallenBelow = -30;  // a body whose top is below this has left the world

Error invalid(std::string message) {
    return Error{ErrorCode::invalid_argument, std::move(message)};
}

Box shifted(const Box& box, const Vec3& d) {
    return {{box.min.x + d.x, box.min.y + d.y, box.min.z + d.z},
            {box.max.x + d.x, box.max.y + d.y, box.max.z + d.z}};
}

// "N pairs, first difference (a, b) only in X" for two sorted lists that differ.
std::string describe_difference(const char* what, const std::vector<Pair>& gpu,
                                const std::vector<Pair>& cpu, const std::string& method) {
    std::string text = std::string(what) + ": " + std::to_string(gpu.size()) + " on the GPU, " +
                       std::to_string(cpu.size()) + " in " + method;
    const auto [g, c] = std::mismatch(gpu.begin(), gpu.end(), cpu.begin(), cpu.end());
    if (g != gpu.end() && (c == cpu.end() || *g < *c))
        text += ", first difference (" + std::to_string(g->i) + ", " + std::to_string(g->j) +
                ") only on the GPU";
    else if (c != cpu.end())
        text += ", first difference (" + std::to_string(c->i) + ", " + std::to_string(c->j) +
                ") only in " + method;
    return text;
}

}  // namespace

struct Spawner::Impl {
    SpawnerOptions options;
    std::mt19937 rng;
    std::uint32_t frames_done = 0;
    std::vector<SpawnedBody> bodies;
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::ProxyScene> scene;  // destroyed before its context
    std::unique_ptr<ProxyWorld> mirror;      // with check_with

    float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }

    // Adds to the scene (and the mirror, which must hand out the same handle).
    Status add(SpawnedBody body) {
        auto handle = scene->add(body.box, body.filter, body.kind);
        if (!handle) return handle.error();
        if (mirror) {
            auto twin = mirror->add(body.box, body.filter, body.kind);
            if (!twin) return twin.error();
            if (*twin != *handle)
                return invalid("the GPU scene handed out handle " + std::to_string(*handle) +
                               ", the CPU world " + std::to_string(*twin));
        }
        body.handle = *handle;
        bodies.push_back(body);
        return Status::success();
    }
    Status remove(ProxyHandle handle) {
        if (Status s = scene->remove(handle); !s) return s;
        return mirror ? mirror->remove(handle) : Status::success();
    }
    Status move(ProxyHandle handle, const Box& box) {
        if (Status s = scene->move(handle, box); !s) return s;
        return mirror ? mirror->move(handle, box) : Status::success();
    }

    // The ground slab (its top at y = 0) and four pillars standing on it.
    Status add_world() {
        const float w = options.world;
        SpawnedBody ground;
        ground.box = {{-w, -1, -w}, {w, 0, w}};
        ground.filter = kWorldFilter;
        ground.kind = BodyKind::static_body;
        if (Status s = add(ground); !s) return s;
        for (float x : {-0.5f * w, 0.5f * w}) {
            for (float z : {-0.5f * w, 0.5f * w}) {
                SpawnedBody pillar = ground;
                pillar.box = {{x - 1, 0, z - 1}, {x + 1, 12, z + 1}};
                if (Status s = add(pillar); !s) return s;
            }
        }
        return Status::success();
    }

    // A crate above the ground, drifting sideways: some fall off the edge.
    SpawnedBody crate() {
        const float w = options.world;
        SpawnedBody body;
        const Vec3 lo{uniform(-w, w), uniform(0.5f, 8), uniform(-w, w)};
        body.box = {
            lo,
            {lo.x + uniform(0.4f, 1.2f), lo.y + uniform(0.4f, 1.2f), lo.z + uniform(0.4f, 1.2f)}};
        body.velocity = {uniform(-3, 3), uniform(-1, 1), uniform(-3, 3)};
        body.filter = kCrateFilter;
        body.lifetime = options.lifetime;
        return body;
    }

    // The crate's box cut in half along x and z, pieces flying apart and up; adjacent pieces
    // touch, and touching boxes overlap: only their filter keeps them apart.
    std::vector<SpawnedBody> shatter(const SpawnedBody& crate) {
        std::vector<SpawnedBody> pieces;
        const Box& b = crate.box;
        const Vec3 mid{0.5f * (b.min.x + b.max.x), 0.5f * (b.min.y + b.max.y),
                       0.5f * (b.min.z + b.max.z)};
        for (std::uint32_t k = 0; k < options.pieces; ++k) {
            const bool right = (k & 1) != 0, back = (k & 2) != 0;
            SpawnedBody piece;
            piece.box = {{right ? mid.x : b.min.x, b.min.y, back ? mid.z : b.min.z},
                         {right ? b.max.x : mid.x, mid.y, back ? b.max.z : mid.z}};
            piece.velocity = {(right ? 1.0f : -1.0f) * uniform(0.5f, 2), uniform(1, 4),
                              (back ? 1.0f : -1.0f) * uniform(0.5f, 2)};
            piece.filter = kDebrisFilter;
            piece.lifetime = std::max(1u, options.lifetime / 2);
            piece.debris = true;
            pieces.push_back(piece);
        }
        return pieces;
    }

    // One time step of a dynamic body: gravity, then rest on the ground where it is under
    // the body. Returns whether the box changed.
    bool integrate(SpawnedBody& body) {
        const float dt = options.dt, w = options.world;
        const float cx = 0.5f * (body.box.min.x + body.box.max.x);
        const float cz = 0.5f * (body.box.min.z + body.box.max.z);
        const bool over_ground = cx >= -w && cx <= w && cz >= -w && cz <= w;
        const bool resting = over_ground && body.box.min.y == 0 && body.velocity == Vec3{};
        if (resting) return false;
        body.velocity.y -= kGravity * dt;
        Vec3 d{body.velocity.x * dt, body.velocity.y * dt, body.velocity.z * dt};
        // Lands when it crosses the ground's top from above (a body already below falls on).
        if (over_ground && body.box.min.y >= 0 && body.box.min.y + d.y < 0) {
            d.y = -body.box.min.y;
            body.velocity = {};
        }
        body.box = shifted(body.box, d);  // min.y + -min.y is exactly 0 on landing
        return true;
    }

    Result<SpawnStep> step() {
        SpawnStep out;
        std::vector<SpawnedBody> kept, born;
        kept.reserve(bodies.size());
        for (SpawnedBody& body : bodies) {
            if (body.kind == BodyKind::static_body) {
                kept.push_back(body);
                continue;
            }
            ++body.age;
            const bool fell_off = body.box.max.y < kFallenBelow;
            if (body.age >= body.lifetime || fell_off) {
                if (Status s = remove(body.handle); !s) return s.error();
                ++out.despawned;
                if (!body.debris && !fell_off) {
                    for (SpawnedBody& piece : shatter(body)) born.push_back(piece);
                }
                continue;
            }
            if (integrate(body)) {
                if (Status s = move(body.handle, body.box); !s) return s.error();
                ++out.moved;
            }
            kept.push_back(body);
        }
        bodies = std::move(kept);
        for (std::uint32_t k = 0; k < options.spawn_per_frame; ++k) born.push_back(crate());
        for (SpawnedBody& body : born) {
            if (Status s = add(body); !s) return s.error();
        }
        out.spawned = static_cast<std::uint32_t>(born.size());

        auto frame = scene->step();
        if (!frame) return frame.error();
        out.frame = std::move(frame.value());
        if (mirror) {
            auto twin = mirror->step();
            if (!twin) return twin.error();
            const std::string& method = options.check_with;
            const std::string where = "frame " + std::to_string(frame_index()) + ", ";
            if (out.frame.pairs != twin->pairs)
                return invalid(where +
                               describe_difference("pairs", out.frame.pairs, twin->pairs, method));
            if (out.frame.began != twin->began)
                return invalid(where +
                               describe_difference("began", out.frame.began, twin->began, method));
            if (out.frame.ended != twin->ended)
                return invalid(where +
                               describe_difference("ended", out.frame.ended, twin->ended, method));
        }
        ++frames_done;
        out.live = static_cast<std::uint32_t>(bodies.size());
        out.debris = static_cast<std::uint32_t>(
            std::count_if(bodies.begin(), bodies.end(), [](const auto& b) { return b.debris; }));
        return out;
    }

    std::uint32_t frame_index() const { return frames_done; }
};

Spawner::Spawner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Spawner::~Spawner() = default;

Result<std::unique_ptr<Spawner>> Spawner::create(const SpawnerOptions& options) {
    if (options.lifetime == 0) return invalid("a body's lifetime is at least one frame");
    if (!(options.dt > 0) || !(options.world > 0))
        return invalid("the time step and the world's size must be positive");
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->rng.seed(options.seed);
    if (!options.check_with.empty()) {
        auto mirror = ProxyWorld::create(options.check_with);
        if (!mirror) return mirror.error();
        impl->mirror = std::move(mirror.value());
    }
    auto context = create_context(options.validation, options.device);
    if (!context) return context.error();
    impl->context = std::move(context.value());
    auto scene = gpu::ProxyScene::create(*impl->context, options.scene);
    if (!scene) return scene.error();
    impl->scene = std::move(scene.value());
    if (Status s = impl->add_world(); !s) return s.error();
    return std::unique_ptr<Spawner>(new Spawner(std::move(impl)));
}

Result<SpawnStep> Spawner::step() {
    return impl_->step();
}

const std::vector<SpawnedBody>& Spawner::bodies() const {
    return impl_->bodies;
}

gpu::Context& Spawner::context() {
    return *impl_->context;
}

const gpu::ProxyScene& Spawner::scene() const {
    return *impl_->scene;
}

}  // namespace broadphase::simulation
