// Persistent VkPipelineCache files (see pipeline_cache.hpp): naming, layout, header checks, the
// atomic save, and the Context's opening and saving of its cache.
#include "device/pipeline_cache.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <system_error>

#include "device/context_impl.hpp"

namespace broadphase::gpu {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'B', 'P', 'P', 'C', 'A', 'C', 'H', 'E'};
constexpr std::uint32_t kLayoutVersion = 1;
// Files larger than this are not caches this library wrote.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t(1) << 30;

std::string hex(std::uint64_t value, int digits) {
    char text[17];
    std::snprintf(text, sizeof(text), "%0*llx", digits, static_cast<unsigned long long>(value));
    return text;
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

template <class T>
T read_at(std::span<const std::byte> bytes, std::size_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

template <class T>
void write_at(std::vector<std::byte>& bytes, std::size_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

}  // namespace

std::string default_pipeline_cache_folder() {
    const std::string xdg = env("XDG_CACHE_HOME");
    if (!xdg.empty() && fs::path(xdg).is_absolute()) return (fs::path(xdg) / "broadphase").string();
    const std::string home = env("HOME");
    if (!home.empty()) return (fs::path(home) / ".cache" / "broadphase").string();
    return {};
}

std::string pipeline_cache_folder(const PipelineCacheOptions& options) {
    if (!options.enabled) return {};
    if (!options.folder.empty()) return options.folder;
    const std::string variable = env("BROADPHASE_PIPELINE_CACHE");
    if (variable == "off") return {};
    if (!variable.empty()) return variable;
    return default_pipeline_cache_folder();
}

std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& properties) {
    std::string uuid;
    for (std::uint8_t b : properties.pipelineCacheUUID) uuid += hex(b, 2);
    return "pipelines-" + hex(properties.vendorID, 4) + "-" + hex(properties.deviceID, 4) + "-" +
           hex(properties.driverVersion, 8) + "-" + uuid + ".bin";
}

std::string pipeline_cache_data_mismatch(std::span<const std::byte> data,
                                         const VkPhysicalDeviceProperties& properties) {
    if (data.size() < kPipelineCacheDataHeader)
        return "the driver data is " + std::to_string(data.size()) +
               " bytes, shorter than a VkPipelineCacheHeaderVersionOne";
    VkPipelineCacheHeaderVersionOne header;
    static_assert(sizeof(header) == kPipelineCacheDataHeader);
    std::memcpy(&header, data.data(), sizeof(header));
    if (header.headerSize != kPipelineCacheDataHeader || header.headerSize > data.size())
        return "headerSize " + std::to_string(header.headerSize) + " (32 expected)";
    if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return "headerVersion " + std::to_string(header.headerVersion) + " (1 expected)";
    if (header.vendorID != properties.vendorID)
        return "vendorID 0x" + hex(header.vendorID, 4) + ", the device's is 0x" +
               hex(properties.vendorID, 4);
    if (header.deviceID != properties.deviceID)
        return "deviceID 0x" + hex(header.deviceID, 4) + ", the device's is 0x" +
               hex(properties.deviceID, 4);
    if (std::memcmp(header.pipelineCacheUUID, properties.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return "the pipelineCacheUUID is another driver's";
    return {};
}

std::uint64_t fnv1a(std::span<const std::byte> bytes) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (std::byte b : bytes) {
        hash ^= static_cast<std::uint8_t>(b);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

std::vector<std::byte> pack_pipeline_cache(std::span<const std::byte> data) {
    std::vector<std::byte> file(kPipelineCacheFileHeader + data.size());
    std::memcpy(file.data(), kMagic, sizeof(kMagic));
    write_at<std::uint32_t>(file, 8, kLayoutVersion);
    write_at<std::uint32_t>(file, 12, 0);
    write_at<std::uint64_t>(file, 16, data.size());
    write_at<std::uint64_t>(file, 24, fnv1a(data));
    if (!data.empty())
        std::memcpy(file.data() + kPipelineCacheFileHeader, data.data(), data.size());
    return file;
}

UnpackedPipelineCache unpack_pipeline_cache(std::span<const std::byte> file,
                                            const VkPhysicalDeviceProperties& properties) {
    UnpackedPipelineCache out;
    if (file.size() < kPipelineCacheFileHeader || std::memcmp(file.data(), kMagic, 8) != 0) {
        out.ignored = "not a broadphase pipeline cache file";
        return out;
    }
    if (const auto version = read_at<std::uint32_t>(file, 8); version != kLayoutVersion) {
        out.ignored = "file layout version " + std::to_string(version) + " (" +
                      std::to_string(kLayoutVersion) + " expected)";
        return out;
    }
    const auto size = read_at<std::uint64_t>(file, 16);
    const std::span<const std::byte> data = file.subspan(kPipelineCacheFileHeader);
    if (size != data.size()) {
        out.ignored = "truncated or padded: the header gives " + std::to_string(size) +
                      " bytes of driver data, the file holds " + std::to_string(data.size());
        return out;
    }
    if (fnv1a(data) != read_at<std::uint64_t>(file, 24)) {
        out.ignored = "corrupt: the driver data does not match its hash";
        return out;
    }
    if (std::string mismatch = pipeline_cache_data_mismatch(data, properties); !mismatch.empty()) {
        out.ignored = "another device or driver: " + mismatch;
        return out;
    }
    out.data.assign(data.begin(), data.end());
    return out;
}

Result<std::optional<std::vector<std::byte>>> read_pipeline_cache_file(const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (status.type() == fs::file_type::not_found) return std::optional<std::vector<std::byte>>{};
    auto failed = [&](const std::string& why) {
        return Error{ErrorCode::io_error, "cannot read '" + path + "': " + why};
    };
    if (ec) return failed(ec.message());
    if (status.type() != fs::file_type::regular) return failed("not a regular file");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) return failed(ec.message());
    if (size > kMaxFileBytes) return failed("larger than 1 GiB");
    std::ifstream in(path, std::ios::binary);
    std::vector<std::byte> bytes(static_cast<std::size_t>(size));
    if (!in ||
        !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
        return failed(std::strerror(errno));
    return std::optional<std::vector<std::byte>>(std::move(bytes));
}

Status write_file_atomically(const std::string& path, std::span<const std::byte> bytes) {
    auto failed = [&](const std::string& why) {
        return Error{ErrorCode::io_error, "cannot write '" + path + "': " + why};
    };
    const fs::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) {
        fs::create_directories(target.parent_path(), ec);
        if (ec) return failed("cannot create its folder: " + ec.message());
    }
    // A name no other writer uses: the clock, a per-process counter and a random word.
    static std::atomic<std::uint64_t> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::uint32_t random = 0;
    try {
        random = std::random_device{}();
    } catch (...) {  // no entropy source: the clock and the counter still differ
    }
    const std::string temp = path + ".tmp-" + hex(static_cast<std::uint64_t>(now), 16) + "-" +
                             hex(counter++, 4) + "-" + hex(random, 8);
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out)
            return failed(std::string("cannot create a temporary file: ") + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            const std::string why = std::strerror(errno);
            fs::remove(temp, ec);
            return failed(why);
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        const std::string why = ec.message();
        std::error_code ignored;
        fs::remove(temp, ignored);
        return failed(why);
    }
    return {};
}

void Context::Impl::open_pipeline_cache(const PipelineCacheOptions& options,
                                        VkPipelineCache external) {
    PipelineCacheInfo& cache = pipeline_cache_info;
    cache = {};
    if (external) {
        pipeline_cache = external;
        owns_pipeline_cache = false;
        cache.state = PipelineCacheState::caller;
        return;
    }
    const std::string folder = pipeline_cache_folder(options);
    if (folder.empty()) return;  // off
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(physical, &properties);
    cache.path = (fs::path(folder) / pipeline_cache_file_name(properties)).string();
    cache.state = PipelineCacheState::cold;
    std::vector<std::byte> data;
    auto file = read_pipeline_cache_file(cache.path);
    if (!file) {
        cache.ignored = file.error().message;
    } else if (file->has_value()) {
        UnpackedPipelineCache unpacked = unpack_pipeline_cache(**file, properties);
        cache.ignored = std::move(unpacked.ignored);
        data = std::move(unpacked.data);
    }
    VkPipelineCacheCreateInfo create{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    create.initialDataSize = data.size();
    create.pInitialData = data.empty() ? nullptr : data.data();
    VkResult r = vkCreatePipelineCache(device, &create, nullptr, &pipeline_cache);
    if (r != VK_SUCCESS && !data.empty()) {
        cache.ignored = std::string("the driver refused it: ") + vk_result_name(r);
        data.clear();
        create.initialDataSize = 0;
        create.pInitialData = nullptr;
        r = vkCreatePipelineCache(device, &create, nullptr, &pipeline_cache);
    }
    if (r != VK_SUCCESS) {
        // No cache at all: pipelines are still created, only not kept.
        pipeline_cache = VK_NULL_HANDLE;
        cache.state = PipelineCacheState::off;
        cache.ignored = std::string("vkCreatePipelineCache failed: ") + vk_result_name(r);
        return;
    }
    owns_pipeline_cache = true;
    if (!data.empty()) {
        cache.state = PipelineCacheState::loaded;
        cache.loaded_bytes = data.size();
        stored_size = data.size();
        stored_hash = fnv1a(data);
    }
}

Status Context::Impl::save_pipeline_cache(bool only_if_changed) {
    if (!owns_pipeline_cache || !pipeline_cache || pipeline_cache_info.path.empty()) return {};
    std::size_t size = 0;
    BP_VK_TRY(vkGetPipelineCacheData(device, pipeline_cache, &size, nullptr),
              "vkGetPipelineCacheData");
    std::vector<std::byte> data(size);
    // The cache may grow between the two calls (another thread compiling): ask again.
    VkResult r = VK_INCOMPLETE;
    for (int attempt = 0; attempt < 4 && r == VK_INCOMPLETE; ++attempt) {
        size = data.size();
        r = vkGetPipelineCacheData(device, pipeline_cache, &size, data.data());
        if (r == VK_INCOMPLETE) {
            std::size_t larger = 0;
            BP_VK_TRY(vkGetPipelineCacheData(device, pipeline_cache, &larger, nullptr),
                      "vkGetPipelineCacheData");
            data.resize(std::max(larger, data.size() * 2));
        }
    }
    if (r != VK_SUCCESS) return vk_error(r, "vkGetPipelineCacheData");
    data.resize(size);
    const std::uint64_t hash = fnv1a(data);
    if (only_if_changed && data.size() == stored_size && hash == stored_hash) return {};
    if (Status s = write_file_atomically(pipeline_cache_info.path, pack_pipeline_cache(data)); !s)
        return s;
    stored_size = data.size();
    stored_hash = hash;
    return {};
}

}  // namespace broadphase::gpu
