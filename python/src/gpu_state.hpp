// The Python module's GPU side: one lazily created Vulkan context per device asked for, shared
// by every call and object that names that device, with the LBVH, the queries and the culler
// created on first use. One GPU call runs at a time per context (the library's objects are not
// thread-safe); calls run with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "errors.hpp"

namespace broadphase::python {

namespace py = pybind11;

/// A device's context and the library objects made on it. Lock `mutex` to use any of them.
struct GpuState {
    std::string device;  ///< as asked: "" (BROADPHASE_DEVICE or the best device), index or name
    gpu::Tuning tuning;  ///< set_tuning's, taken when the context is created
    std::mutex mutex;
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::Lbvh> lbvh;
    std::unique_ptr<gpu::LbvhQueries> queries;
    /// Which Index's tree `queries` holds now (0: none); an Index rebuilds it when it is not its
    /// own.
    std::uint64_t queries_owner = 0;
    std::unique_ptr<gpu::Culler> culler;
    /// Validation-layer errors already reported as exceptions.
    std::uint64_t validation_errors = 0;

    /// The LBVH, queries and culler, created on first use (state locked, context made).
    gpu::Lbvh& get_lbvh();
    gpu::LbvhQueries& get_queries();
    gpu::Culler& get_culler();
};

/// The state of `device` (None: the default device; an int: an index; a str: a name
/// substring), created without a context on first use. Needs the GIL.
std::shared_ptr<GpuState> gpu_state(const py::object& device);

/// Drops the module's references to every state (each context goes when its last user does).
void release_gpu_states();

/// Creates the context if it is missing (state locked). Raises GpuError on failure.
void ensure_context(GpuState& state);

/// set_tuning: the tuning the context of `device` will be created with; a ValueError names a
/// bad value or a context that exists already (a bad sort_window is refused when the context is
/// created).
void set_tuning(const py::object& device, const std::string& sort_path, std::uint32_t sort_window,
                const std::string& sort_rank, std::uint32_t traversal_budget);

/// Raises GpuError when the validation layer reported errors since the last check.
void check_validation(GpuState& state);

/// Runs fn(state) with the GIL released and the state locked, its context created first and
/// the validation layer's error count checked after; returns what fn returns.
template <class F>
auto with_gpu(GpuState& state, F&& fn) {
    py::gil_scoped_release release;
    std::lock_guard lock(state.mutex);
    ensure_context(state);
    auto result = fn(state);
    check_validation(state);
    return result;
}

/// The Vulkan physical devices, in enumeration order (the index `device=` takes), as dicts.
py::list list_devices();

/// The DeviceInfo of `device`'s context (created if needed), as a dict.
py::dict device_info(const py::object& device);

}  // namespace broadphase::python
