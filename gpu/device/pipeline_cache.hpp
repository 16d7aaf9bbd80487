// Persistent VkPipelineCache files: where they live (one per device and driver), their layout
// (a checksummed header around the driver's data), the check of the driver data's
// VkPipelineCacheHeaderVersionOne against the device (Vulkan spec, "Pipeline Cache"), and the
// atomic save (a temporary file in the same folder, renamed over the old one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// Bytes of the file header in front of the driver's data: "BPPCACHE", the layout version
/// (uint32, 1), 4 zero bytes, the data's size (uint64) and its FNV-1a hash (uint64).
inline constexpr std::size_t kPipelineCacheFileHeader = 32;

/// Bytes of VkPipelineCacheHeaderVersionOne (headerSize, headerVersion, vendorID, deviceID,
/// pipelineCacheUUID), which starts the data of every driver.
inline constexpr std::size_t kPipelineCacheDataHeader = 32;

/// $XDG_CACHE_HOME/broadphase (an absolute XDG_CACHE_HOME only, as the XDG spec says), else
/// $HOME/.cache/broadphase; empty when neither is set.
std::string default_pipeline_cache_folder();

/// The folder `options` name once BROADPHASE_PIPELINE_CACHE and the default are applied (see
/// PipelineCacheOptions::folder); empty when the cache is off.
std::string pipeline_cache_folder(const PipelineCacheOptions& options);

/// "pipelines-VENDOR-DEVICE-DRIVER-UUID.bin" (hexadecimal), so that devices and drivers never
/// share a file.
std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& properties);

/// Why driver data cannot be given to this device (its VkPipelineCacheHeaderVersionOne is
/// short, of another header size or version, or names another vendor, device or
/// pipelineCacheUUID); empty when it can.
std::string pipeline_cache_data_mismatch(std::span<const std::byte> data,
                                         const VkPhysicalDeviceProperties& properties);

/// 64-bit FNV-1a hash.
std::uint64_t fnv1a(std::span<const std::byte> bytes);

/// The bytes of a cache file holding `data` (the file header, then the data).
std::vector<std::byte> pack_pipeline_cache(std::span<const std::byte> data);

/// The driver data of a cache file, or why it cannot be used.
struct UnpackedPipelineCache {
    std::vector<std::byte> data;
    std::string ignored;  ///< empty when `data` can be given to the driver
};

/// Checks a cache file's header (magic, version, size: a truncated file fails), its hash (a
/// corrupt one fails) and the driver data's header against the device.
UnpackedPipelineCache unpack_pipeline_cache(std::span<const std::byte> file,
                                            const VkPhysicalDeviceProperties& properties);

/// The bytes of a file; nullopt when it does not exist; an error when it cannot be read.
Result<std::optional<std::vector<std::byte>>> read_pipeline_cache_file(const std::string& path);

/// Writes `bytes` to `path` atomically: creates the folder, writes a temporary file beside the
/// target and renames it over the target. An io_error names the path and the reason.
Status write_file_atomically(const std::string& path, std::span<const std::byte> bytes);

}  // namespace broadphase::gpu
