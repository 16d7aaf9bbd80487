// The persistent pipeline cache of gpu::Context (gpu/device/pipeline_cache.cpp) and the lazy,
// per-feature compilation of kernels (gpu/device/kernels.cpp): the file a first Context writes is
// loaded by a second; corrupt, truncated and foreign files are ignored (a cold start) and
// replaced; a cache that is off writes nothing; an adopted device uses the caller's cache and
// never saves it; and each feature compiles only its own kernels, once per Context. Every
// Context here is the test's own, with its cache in a temporary folder (never the user's).
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "device/context_impl.hpp"
#include "device/pipeline_cache.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system's temporary folder, removed with its files at the end.
class TempFolder {
public:
    TempFolder() {
        std::random_device random;
        path_ = fs::temp_directory_path() /
                ("broadphase-pipeline-cache-test-" + std::to_string(::getpid()) + "-" +
                 std::to_string(random()));
        fs::create_directories(path_);
    }
    ~TempFolder() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }
    std::vector<fs::path> files() const {
        std::vector<fs::path> out;
        for (const auto& e : fs::recursive_directory_iterator(path_))
            if (e.is_regular_file()) out.push_back(e.path());
        return out;
    }

private:
    fs::path path_;
};

// Sets an environment variable for one scope (restores the old value).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

std::vector<std::byte> read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

void write_bytes(const fs::path& path, std::span<const std::byte> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// The kernel counts below are those of the reduce_then_scan sort (KernelsCompiledLazilyPerFeature
// counts the one-sweep sort's too).
std::unique_ptr<gpu::Context> make_context(
    const gpu::PipelineCacheOptions& cache,
    gpu::SortPath sort_path = gpu::SortPath::reduce_then_scan) {
    gpu::ContextOptions options;
    options.pipeline_cache = cache;
    options.tuning.sort_path = sort_path;
    return own_context(options);
}

gpu::PipelineCacheOptions in_folder(const fs::path& folder) {
    return {true, folder.string()};
}

// No cache: every pipeline is compiled, so pipelines_created() counts each kernel.
gpu::PipelineCacheOptions cache_off() {
    return {false, {}};
}

const std::vector<Box>& small_scene() {
    static const std::vector<Box> boxes = generate_scene("uniform", 2000)->boxes;
    return boxes;
}

// Finds the pairs of the small scene on `context` (compiling the pairs kernels) and checks
// them against brute force and the Context's validation errors.
void find_pairs_on(gpu::Context& context) {
    auto lbvh = gpu::Lbvh::create(context);
    ASSERT_TRUE(lbvh) << lbvh.error().message;
    auto pairs = (*lbvh)->find_pairs(small_scene());
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_EQ(*pairs, *find_pairs_cpu("brute_force", small_scene()));
    EXPECT_EQ(context.validation_errors(), 0u);
}

VkPhysicalDeviceProperties properties_of(const gpu::Context& context) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(context.physical_device(), &p);
    return p;
}

class PipelineCacheTest : public GpuTest {};

// Test 1: a first Context starts cold and writes its file when destroyed; a second loads it,
// and works.
TEST_F(PipelineCacheTest, WrittenByFirstContextLoadedBySecond) {
    TempFolder folder;
    std::string path;
    {
        auto context = make_context(in_folder(folder.path()));
        ASSERT_TRUE(context);
        const gpu::PipelineCacheInfo& info = context->pipeline_cache_info();
        EXPECT_EQ(info.state, gpu::PipelineCacheState::cold);
        EXPECT_TRUE(info.ignored.empty()) << info.ignored;
        EXPECT_EQ(fs::path(info.path).parent_path(), folder.path());
        EXPECT_EQ(fs::path(info.path).filename().string(),
                  gpu::pipeline_cache_file_name(properties_of(*context)));
        path = info.path;
        find_pairs_on(*context);
        EXPECT_FALSE(fs::exists(path));  // saved when destroyed
    }
    ASSERT_TRUE(fs::exists(path));
    const std::vector<std::byte> file = read_bytes(path);
    auto context = make_context(in_folder(folder.path()));
    ASSERT_TRUE(context);
    const gpu::PipelineCacheInfo& info = context->pipeline_cache_info();
    EXPECT_EQ(info.state, gpu::PipelineCacheState::loaded) << info.ignored;
    EXPECT_EQ(info.path, path);
    EXPECT_EQ(info.loaded_bytes + gpu::kPipelineCacheFileHeader, file.size());
    EXPECT_TRUE(info.ignored.empty()) << info.ignored;
    find_pairs_on(*context);
    // Only the cache file is in the folder (no temporary file left behind).
    EXPECT_EQ(folder.files().size(), 1u);
}

// Test 2: save_pipeline_cache writes the file now, creating missing folders; the data is this
// device's (its header checks out).
TEST_F(PipelineCacheTest, ExplicitSaveCreatesFolderAndFile) {
    TempFolder folder;
    const fs::path nested = folder.path() / "a" / "b";
    auto context = make_context(in_folder(nested));
    ASSERT_TRUE(context);
    find_pairs_on(*context);
    ASSERT_TRUE(context->save_pipeline_cache());
    const std::string& path = context->pipeline_cache_info().path;
    ASSERT_TRUE(fs::exists(path));
    const gpu::UnpackedPipelineCache unpacked =
        gpu::unpack_pipeline_cache(read_bytes(path), properties_of(*context));
    EXPECT_TRUE(unpacked.ignored.empty()) << unpacked.ignored;
    EXPECT_GE(unpacked.data.size(), gpu::kPipelineCacheDataHeader);
    EXPECT_EQ(folder.files().size(), 1u);
}

// Test 3: a corrupt, truncated, foreign or alien file is not given to the driver: the Context
// starts cold, says why, works, and replaces the file with a valid one.
TEST_F(PipelineCacheTest, BadFilesIgnoredAndReplaced) {
    TempFolder folder;
    std::string path;
    std::vector<std::byte> good;
    VkPhysicalDeviceProperties properties{};
    {
        auto context = make_context(in_folder(folder.path()));
        ASSERT_TRUE(context);
        find_pairs_on(*context);
        ASSERT_TRUE(context->save_pipeline_cache());
        path = context->pipeline_cache_info().path;
        properties = properties_of(*context);
        good = read_bytes(path);
    }
    ASSERT_GE(good.size(), gpu::kPipelineCacheFileHeader + gpu::kPipelineCacheDataHeader);
    const std::vector<std::byte> data(good.begin() + gpu::kPipelineCacheFileHeader, good.end());

    auto with_header = [&](auto change) {
        std::vector<std::byte> d = data;
        VkPipelineCacheHeaderVersionOne h;
        std::memcpy(&h, d.data(), sizeof(h));
        change(h);
        std::memcpy(d.data(), &h, sizeof(h));
        return gpu::pack_pipeline_cache(d);
    };
    struct Case {
        const char* name;
        std::vector<std::byte> bytes;
        const char* reason;  // in PipelineCacheInfo::ignored
    };
    std::vector<Case> cases;
    {
        std::vector<std::byte> corrupt = good;
        corrupt.back() ^= std::byte{0x5a};
        cases.push_back({"corrupt", corrupt, "corrupt"});
        std::vector<std::byte> truncated(good.begin(), good.end() - 1);
        cases.push_back({"truncated", truncated, "truncated"});
        std::vector<std::byte> short_file(good.begin(), good.begin() + 20);
        cases.push_back({"shorter than the header", short_file, "not a broadphase"});
        cases.push_back({"empty", {}, "not a broadphase"});
        cases.push_back({"the driver data alone", data, "not a broadphase"});
        const char text[] = "not a pipeline cache at all, just text";
        std::vector<std::byte> alien(sizeof(text));
        std::memcpy(alien.data(), text, sizeof(text));
        cases.push_back({"text", alien, "not a broadphase"});
        cases.push_back(
            {"another vendor", with_header([](auto& h) { h.vendorID ^= 0x1234; }), "vendorID"});
        cases.push_back(
            {"another device", with_header([](auto& h) { h.deviceID ^= 0x77; }), "deviceID"});
        cases.push_back({"another driver",
                         with_header([](auto& h) { h.pipelineCacheUUID[3] ^= 1; }),
                         "pipelineCacheUUID"});
        cases.push_back({"another header version", with_header([](auto& h) {
                             h.headerVersion = VkPipelineCacheHeaderVersion(7);
                         }),
                         "headerVersion"});
        cases.push_back(
            {"another header size", with_header([](auto& h) { h.headerSize = 16; }), "headerSize"});
    }
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        write_bytes(path, c.bytes);
        {
            auto context = make_context(in_folder(folder.path()));
            ASSERT_TRUE(context);
            const gpu::PipelineCacheInfo& info = context->pipeline_cache_info();
            EXPECT_EQ(info.state, gpu::PipelineCacheState::cold);
            EXPECT_EQ(info.loaded_bytes, 0u);
            EXPECT_NE(info.ignored.find(c.reason), std::string::npos) << info.ignored;
            find_pairs_on(*context);
        }
        const gpu::UnpackedPipelineCache replaced =
            gpu::unpack_pipeline_cache(read_bytes(path), properties);
        EXPECT_TRUE(replaced.ignored.empty()) << replaced.ignored;
    }
    EXPECT_EQ(folder.files().size(), 1u);
}

// Test 4: a cache that is off, by option or by BROADPHASE_PIPELINE_CACHE=off, reads and
// writes nothing; the variable's folder is used when the option gives none.
TEST_F(PipelineCacheTest, OffWritesNothingAndVariableChoosesFolder) {
    TempFolder folder;
    {
        ScopedEnv env("BROADPHASE_PIPELINE_CACHE", folder.path().string().c_str());
        gpu::PipelineCacheOptions off;
        off.enabled = false;
        off.folder = folder.path().string();
        auto context = make_context(off);
        ASSERT_TRUE(context);
        EXPECT_EQ(context->pipeline_cache_info().state, gpu::PipelineCacheState::off);
        EXPECT_TRUE(context->pipeline_cache_info().path.empty());
        find_pairs_on(*context);
        EXPECT_TRUE(context->save_pipeline_cache());  // nothing to save
    }
    {
        ScopedEnv env("BROADPHASE_PIPELINE_CACHE", "off");
        auto context = make_context({});
        ASSERT_TRUE(context);
        EXPECT_EQ(context->pipeline_cache_info().state, gpu::PipelineCacheState::off);
        find_pairs_on(*context);
    }
    EXPECT_TRUE(folder.files().empty());
    {
        const fs::path chosen = folder.path() / "from-variable";
        ScopedEnv env("BROADPHASE_PIPELINE_CACHE", chosen.string().c_str());
        auto context = make_context({});
        ASSERT_TRUE(context);
        EXPECT_EQ(context->pipeline_cache_info().state, gpu::PipelineCacheState::cold);
        EXPECT_EQ(fs::path(context->pipeline_cache_info().path).parent_path(), chosen);
        find_pairs_on(*context);
    }
    EXPECT_EQ(folder.files().size(), 1u);
}

// Test 5: a save that cannot write (the folder is a file) is the explicit call's io_error,
// naming the path; the destructor ignores it.
TEST_F(PipelineCacheTest, FailedSaveIsReported) {
    TempFolder folder;
    const fs::path blocker = folder.path() / "blocker";
    write_bytes(blocker, {});
    auto context = make_context(in_folder(blocker / "cache"));
    ASSERT_TRUE(context);
    EXPECT_EQ(context->pipeline_cache_info().state, gpu::PipelineCacheState::cold);
    find_pairs_on(*context);
    const Status saved = context->save_pipeline_cache();
    ASSERT_FALSE(saved);
    EXPECT_EQ(saved.error().code, ErrorCode::io_error);
    EXPECT_NE(saved.error().message.find(context->pipeline_cache_info().path), std::string::npos)
        << saved.error().message;
    context.reset();  // saves again, fails, and says so on stderr only
    EXPECT_EQ(folder.files().size(), 1u);
}

// Test 6: an adopted device with the caller's own VkPipelineCache: every pipeline goes through
// it (it grows or at least keeps its header), nothing is written, and it outlives the Context.
// Without one, adopt keeps its own cache file like create.
TEST_F(PipelineCacheTest, AdoptedDeviceUsesCallersCache) {
    gpu::Context& owner = gpu_context();
    const char* const extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkPipelineCacheCreateInfo create{};
    create.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    VkPipelineCache callers = VK_NULL_HANDLE;
    ASSERT_EQ(vkCreatePipelineCache(owner.device(), &create, nullptr, &callers), VK_SUCCESS);
    TempFolder folder;
    gpu::ExternalDevice external;
    external.instance = impl_of(owner).instance;
    external.physical_device = owner.physical_device();
    external.device = owner.device();
    external.queue_family = owner.queue_family();
    external.queue = owner.queue();
    external.api_version = VK_API_VERSION_1_2;
    external.enabled_extensions = extensions;
    external.vulkan_memory_model = true;
    external.caller_pipeline_cache = callers;
    external.pipeline_cache = in_folder(folder.path());  // ignored: the caller's cache wins
    {
        auto adopted = gpu::Context::adopt(external);
        ASSERT_TRUE(adopted) << adopted.error().message;
        gpu::Context& context = **adopted;
        EXPECT_EQ(context.pipeline_cache_info().state, gpu::PipelineCacheState::caller);
        EXPECT_TRUE(context.pipeline_cache_info().path.empty());
        find_pairs_on(context);
        EXPECT_GT(context.pipelines_created(), 0u);
        EXPECT_TRUE(context.save_pipeline_cache());
    }
    EXPECT_TRUE(folder.files().empty());
    std::size_t size = 0;
    EXPECT_EQ(vkGetPipelineCacheData(owner.device(), callers, &size, nullptr), VK_SUCCESS);
    EXPECT_GE(size, gpu::kPipelineCacheDataHeader);
    vkDestroyPipelineCache(owner.device(), callers, nullptr);

    external.caller_pipeline_cache = VK_NULL_HANDLE;
    {
        auto adopted = gpu::Context::adopt(external);
        ASSERT_TRUE(adopted) << adopted.error().message;
        EXPECT_EQ((*adopted)->pipeline_cache_info().state, gpu::PipelineCacheState::cold);
        find_pairs_on(**adopted);
    }
    EXPECT_EQ(folder.files().size(), 1u);
    {
        auto adopted = gpu::Context::adopt(external);
        ASSERT_TRUE(adopted) << adopted.error().message;
        EXPECT_EQ((*adopted)->pipeline_cache_info().state, gpu::PipelineCacheState::loaded)
            << (*adopted)->pipeline_cache_info().ignored;
    }
}

// Test 7: kernels are compiled on first use, per feature, once per Context. The counts are the
// kernels of each feature: a build of morton30 with refinement 11 (scene bounds, codes,
// hierarchy with bounds, sort histogram and scatter, scan local and add; the refinement's code
// runs, run bounds, refine codes and count arguments; the one-sweep sort: its histogram and
// pass, 9), without it or for morton63 7; the pairs pass 2 (pairs, traversal arguments); a
// cull 3 more (traverse, compact, emit; the sort is shared; with the one-sweep sort, the scan's
// 2 too).
TEST_F(PipelineCacheTest, KernelsCompiledLazilyPerFeature) {
    for (gpu::SortPath path : {gpu::SortPath::reduce_then_scan, gpu::SortPath::onesweep}) {
        SCOPED_TRACE(gpu::sort_path_name(path));
        // The one-sweep sort compiles 2 kernels (its histogram and pass) where reduce_then_scan
        // compiles 4; the cull's scan is then its own 2.
        const bool onesweep = path == gpu::SortPath::onesweep;
        auto context = make_context(cache_off(), path);
        ASSERT_TRUE(context);
        EXPECT_EQ(context->info().sort_path, path);
        EXPECT_EQ(context->pipelines_created(), 0u);

        auto lbvh = gpu::Lbvh::create(*context);
        ASSERT_TRUE(lbvh);
        EXPECT_EQ(context->pipelines_created(), 0u);  // nothing before the first build
        auto nodes = (*lbvh)->build_nodes(small_scene());
        ASSERT_TRUE(nodes) << nodes.error().message;
        // With the refinement's check (code_runs); its later steps (run_bounds, refine_codes)
        // wait for a build that records them (refinement on demand: this scene has no long
        // run), here the culler's.
        EXPECT_EQ(context->pipelines_created(), onesweep ? 6u : 8u);
        auto pairs = (*lbvh)->find_pairs(small_scene());
        ASSERT_TRUE(pairs) << pairs.error().message;
        const std::uint32_t pairs_only = context->pipelines_created();
        EXPECT_EQ(pairs_only, onesweep ? 8u : 10u);  // + the pairs pass

        // A second Lbvh of the same options compiles nothing; neither does a culler until it
        // culls.
        auto again = gpu::Lbvh::create(*context);
        ASSERT_TRUE(again);
        ASSERT_TRUE((*again)->find_pairs(small_scene()));
        EXPECT_EQ(context->pipelines_created(), pairs_only);
        auto culler = gpu::Culler::create(*context);
        ASSERT_TRUE(culler);
        EXPECT_EQ(context->pipelines_created(), pairs_only);  // no cull kernel before a cull
        Camera camera;
        camera.eye = {0.5f, 0.5f, -2};
        camera.target = {0.5f, 0.5f, 0.5f};
        auto frustum = Frustum::from_camera(camera);
        ASSERT_TRUE(frustum);
        auto visible = (*culler)->cull(small_scene(), *frustum, CullOrder::exact);
        ASSERT_TRUE(visible) << visible.error().message;
        // The cull's kernels and the sort's count arguments (the build writes its own), and
        // the refinement's later steps, which the culler's build records.
        EXPECT_EQ(context->pipelines_created(), pairs_only + (onesweep ? 8 : 6));
        EXPECT_EQ(context->validation_errors(), 0u);
    }
}

// Test 8: options that do not refine compile neither the refinement nor the sort's count
// arguments; region queries add only the query kernel over a tree built by the same kernels.
TEST_F(PipelineCacheTest, UnusedOptionsCompileNothing) {
    for (const gpu::LbvhOptions& options : {gpu::LbvhOptions{gpu::CodeKind::morton30, false},
                                            gpu::LbvhOptions{gpu::CodeKind::morton63, true}}) {
        auto context = make_context(cache_off());
        ASSERT_TRUE(context);
        auto lbvh = gpu::Lbvh::create(*context, options);
        ASSERT_TRUE(lbvh);
        auto pairs = (*lbvh)->find_pairs(small_scene());
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_EQ(*pairs, *find_pairs_cpu("brute_force", small_scene()));
        EXPECT_EQ(context->pipelines_created(), 9u);  // 7 for the build, 2 for the pairs

        auto queries = gpu::LbvhQueries::create(*context, options);
        ASSERT_TRUE(queries);
        EXPECT_EQ(context->pipelines_created(), 9u);
        ASSERT_TRUE((*queries)->build(small_scene()));
        const std::vector<Box> regions(small_scene().begin(), small_scene().begin() + 10);
        auto hits = (*queries)->query_boxes(regions);
        ASSERT_TRUE(hits) << hits.error().message;
        EXPECT_EQ(context->pipelines_created(), 10u);  // + lbvh_query
        EXPECT_EQ(context->validation_errors(), 0u);
    }
}

// Test 9: queries on their own: the build's 10, then the region passes' query and traversal
// arguments (the scan is the sort's), then the ray cast's one.
TEST_F(PipelineCacheTest, QueriesCompileTheirOwn) {
    auto context = make_context(cache_off());
    ASSERT_TRUE(context);
    auto queries = gpu::LbvhQueries::create(*context);
    ASSERT_TRUE(queries);
    ASSERT_TRUE((*queries)->build(small_scene()));
    EXPECT_EQ(context->pipelines_created(), 10u);
    const std::vector<Box> regions(small_scene().begin(), small_scene().begin() + 10);
    ASSERT_TRUE((*queries)->query_boxes(regions));
    EXPECT_EQ(context->pipelines_created(), 12u);
    const Ray ray{{0.5f, 0.5f, -1}, {0, 0, 1}, 10};
    auto hits = (*queries)->ray_cast(std::span(&ray, 1));
    ASSERT_TRUE(hits) << hits.error().message;
    EXPECT_EQ(context->pipelines_created(), 13u);
    EXPECT_EQ(context->validation_errors(), 0u);
}

// Test 10: a moving scene compiles its frame kernels on reset, sharing the LBVH's and the sort's.
TEST_F(PipelineCacheTest, MovingSceneSharesKernels) {
    auto context = make_context(cache_off());
    ASSERT_TRUE(context);
    auto moving = gpu::MovingScene::create(*context);
    ASSERT_TRUE(moving);
    EXPECT_EQ(context->pipelines_created(), 0u);
    ASSERT_TRUE((*moving)->reset(small_scene()));
    // 13 of the LBVH with its pairs pass (which also writes the pair keys), and refit (leaves
    // and bounds in one kernel), SAH cost, policy, difference and unpack (the sort is the
    // LBVH's).
    EXPECT_EQ(context->pipelines_created(), 18u);
    auto frame = (*moving)->step(small_scene());
    ASSERT_TRUE(frame) << frame.error().message;
    EXPECT_EQ(context->pipelines_created(), 18u);
    EXPECT_EQ(context->validation_errors(), 0u);
}

// Test 11: file names differ by vendor, device, driver version and pipelineCacheUUID; the
// driver data's header is checked field by field.
TEST(PipelineCacheFile, NamesAndHeaderChecks) {
    VkPhysicalDeviceProperties p{};
    p.vendorID = 0x10de;
    p.deviceID = 0x2330;
    p.driverVersion = 0x12345678;
    for (std::uint8_t i = 0; i < VK_UUID_SIZE; ++i) p.pipelineCacheUUID[i] = i;
    const std::string name = gpu::pipeline_cache_file_name(p);
    EXPECT_EQ(name, "pipelines-10de-2330-12345678-000102030405060708090a0b0c0d0e0f.bin");
    for (auto change : {+[](VkPhysicalDeviceProperties& q) { q.vendorID++; },
                        +[](VkPhysicalDeviceProperties& q) { q.deviceID++; },
                        +[](VkPhysicalDeviceProperties& q) { q.driverVersion++; },
                        +[](VkPhysicalDeviceProperties& q) { q.pipelineCacheUUID[15]++; }}) {
        VkPhysicalDeviceProperties q = p;
        change(q);
        EXPECT_NE(gpu::pipeline_cache_file_name(q), name);
    }

    VkPipelineCacheHeaderVersionOne h{};
    h.headerSize = 32;
    h.headerVersion = VK_PIPELINE_CACHE_HEADER_VERSION_ONE;
    h.vendorID = p.vendorID;
    h.deviceID = p.deviceID;
    std::memcpy(h.pipelineCacheUUID, p.pipelineCacheUUID, VK_UUID_SIZE);
    std::vector<std::byte> data(64);
    std::memcpy(data.data(), &h, sizeof(h));
    EXPECT_EQ(gpu::pipeline_cache_data_mismatch(data, p), "");
    EXPECT_NE(gpu::pipeline_cache_data_mismatch(std::span(data).first(31), p), "");
    const std::vector<std::byte> file = gpu::pack_pipeline_cache(data);
    const gpu::UnpackedPipelineCache unpacked = gpu::unpack_pipeline_cache(file, p);
    EXPECT_EQ(unpacked.ignored, "");
    EXPECT_EQ(unpacked.data, data);
    VkPhysicalDeviceProperties other = p;
    other.driverVersion++;  // in the file name only: the data stays valid
    EXPECT_EQ(gpu::pipeline_cache_data_mismatch(data, other), "");
    other.pipelineCacheUUID[0] ^= 0xff;
    EXPECT_NE(gpu::pipeline_cache_data_mismatch(data, other).find("pipelineCacheUUID"),
              std::string::npos);
}

// Test 12: the default folder follows XDG_CACHE_HOME (absolute only), then HOME; an explicit
// folder wins over BROADPHASE_PIPELINE_CACHE, which wins over the default.
TEST(PipelineCacheFile, FolderChoice) {
    {
        ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
        ScopedEnv home("HOME", "/home/someone");
        EXPECT_EQ(gpu::default_pipeline_cache_folder(), "/xdg/cache/broadphase");
    }
    {
        ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
        ScopedEnv home("HOME", "/home/someone");
        EXPECT_EQ(gpu::default_pipeline_cache_folder(), "/home/someone/.cache/broadphase");
    }
    {
        ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
        ScopedEnv home("HOME", nullptr);
        EXPECT_EQ(gpu::default_pipeline_cache_folder(), "");
        ScopedEnv variable("BROADPHASE_PIPELINE_CACHE", nullptr);
        EXPECT_EQ(gpu::pipeline_cache_folder({}), "");  // nowhere to keep it: off
    }
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
    {
        ScopedEnv variable("BROADPHASE_PIPELINE_CACHE", "/from/variable");
        EXPECT_EQ(gpu::pipeline_cache_folder({}), "/from/variable");
        EXPECT_EQ(gpu::pipeline_cache_folder({true, "/explicit"}), "/explicit");
        EXPECT_EQ(gpu::pipeline_cache_folder({false, "/explicit"}), "");
    }
    {
        ScopedEnv variable("BROADPHASE_PIPELINE_CACHE", "off");
        EXPECT_EQ(gpu::pipeline_cache_folder({}), "");
        EXPECT_EQ(gpu::pipeline_cache_folder({true, "/explicit"}), "/explicit");
    }
    ScopedEnv variable("BROADPHASE_PIPELINE_CACHE", nullptr);
    EXPECT_EQ(gpu::pipeline_cache_folder({}), "/xdg/cache/broadphase");
}

}  // namespace
}  // namespace broadphase::testing
