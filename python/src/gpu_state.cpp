// The Python module's shared GPU contexts (see gpu_state.hpp), and the device list.
#include "gpu_state.hpp"

#include <map>
#include <vector>

namespace broadphase::python {

namespace {

// Every state made so far, by the device string asked for. Guarded by the GIL.
std::map<std::string, std::shared_ptr<GpuState>>& states() {
    static auto* map = new std::map<std::string, std::shared_ptr<GpuState>>();
    return *map;
}

std::string device_key(const py::object& device) {
    if (device.is_none()) return "";
    if (py::isinstance<py::bool_>(device))
        throw py::type_error("device must be None, an index or a name substring");
    if (py::isinstance<py::int_>(device)) {
        const auto index = device.cast<long long>();
        if (index < 0) throw py::value_error("device index must be >= 0");
        return std::to_string(index);
    }
    if (py::isinstance<py::str>(device)) return device.cast<std::string>();
    throw py::type_error("device must be None, an index or a name substring");
}

const char* type_name(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "cpu";
        default:
            return "other";
    }
}

std::string version_text(std::uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
           "." + std::to_string(VK_API_VERSION_PATCH(v));
}

struct PhysicalDevice {
    std::string name;
    VkPhysicalDeviceType type;
    std::uint32_t api_version;
};

// The physical devices of a fresh instance (no layers, no extensions).
Result<std::vector<PhysicalDevice>> enumerate_devices() {
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "broadphase (python)";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    VkInstance instance = VK_NULL_HANDLE;
    if (VkResult r = vkCreateInstance(&info, nullptr, &instance); r != VK_SUCCESS) {
        return Error{ErrorCode::vulkan_error,
                     "vkCreateInstance failed (VkResult " + std::to_string(r) + ")"};
    }
    std::uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> handles(count);
    vkEnumeratePhysicalDevices(instance, &count, handles.data());
    std::vector<PhysicalDevice> found;
    for (std::uint32_t i = 0; i < count; ++i) {
        VkPhysicalDeviceProperties p{};
        vkGetPhysicalDeviceProperties(handles[i], &p);
        found.push_back({p.deviceName, p.deviceType, p.apiVersion});
    }
    vkDestroyInstance(instance, nullptr);
    return found;
}

}  // namespace

gpu::Lbvh& GpuState::get_lbvh() {
    if (!lbvh) lbvh = unwrap(gpu::Lbvh::create(*context));
    return *lbvh;
}

gpu::LbvhQueries& GpuState::get_queries() {
    if (!queries) queries = unwrap(gpu::LbvhQueries::create(*context));
    return *queries;
}

gpu::Culler& GpuState::get_culler() {
    if (!culler) culler = unwrap(gpu::Culler::create(*context));
    return *culler;
}

std::shared_ptr<GpuState> gpu_state(const py::object& device) {
    const std::string key = device_key(device);
    std::shared_ptr<GpuState>& state = states()[key];
    if (!state) {
        state = std::make_shared<GpuState>();
        state->device = key;
    }
    return state;
}

void release_gpu_states() {
    auto& map = states();
    auto dropped = std::move(map);
    map.clear();
    // Contexts without other users are destroyed here, without the GIL.
    py::gil_scoped_release release;
    for (auto& [key, state] : dropped) {
        std::lock_guard lock(state->mutex);  // wait for a call still running on it
    }
    dropped.clear();
}

void ensure_context(GpuState& state) {
    if (state.context) return;
    gpu::ContextOptions options;
    options.device = state.device;
    options.tuning = state.tuning;
    state.context = unwrap(gpu::Context::create(options));
    state.validation_errors = state.context->validation_errors();
}

void check_validation(GpuState& state) {
    const std::uint64_t errors = state.context->validation_errors();
    if (errors == state.validation_errors) return;
    const std::uint64_t added = errors - state.validation_errors;
    state.validation_errors = errors;
    raise(ErrorCode::vulkan_error, "the Vulkan validation layer reported " + std::to_string(added) +
                                       " error" + (added == 1 ? "" : "s") +
                                       " (printed on standard error)");
}

py::list list_devices() {
    Result<std::vector<PhysicalDevice>> found = [] {
        py::gil_scoped_release release;
        return enumerate_devices();
    }();
    py::list out;
    const std::vector<PhysicalDevice> devices = unwrap(std::move(found));
    for (std::size_t i = 0; i < devices.size(); ++i) {
        py::dict d;
        d["index"] = i;
        d["name"] = devices[i].name;
        d["type"] = type_name(devices[i].type);
        d["api_version"] = version_text(devices[i].api_version);
        out.append(d);
    }
    return out;
}

namespace {

// One of a Tuning choice's words: `automatic` leaves it to the device's rule; any other word is
// a ValueError naming the argument and the words it takes.
template <class Choice>
Choice tuning_choice(const char* argument, const std::string& word, Choice first,
                     const char* first_word, Choice second, const char* second_word) {
    if (word == first_word) return first;
    if (word == second_word) return second;
    if (word != "automatic")
        raise(ErrorCode::invalid_argument, std::string(argument) + ": '" + word +
                                               "' is none of automatic, " + first_word + ", " +
                                               second_word);
    return Choice::automatic;
}

}  // namespace

void set_tuning(const py::object& device, const std::string& sort_path, std::uint32_t sort_window,
                const std::string& sort_rank, std::uint32_t traversal_budget) {
    gpu::Tuning tuning;
    tuning.sort_path = tuning_choice("sort_path", sort_path, gpu::SortPath::onesweep, "onesweep",
                                     gpu::SortPath::reduce_then_scan, "reduce_then_scan");
    tuning.sort_rank = tuning_choice("sort_rank", sort_rank, gpu::SortRank::shared, "shared",
                                     gpu::SortRank::subgroup, "subgroup");
    tuning.sort_window = sort_window;  // the range is the library's to check, at creation
    tuning.traversal_budget = traversal_budget;
    std::shared_ptr<GpuState> state = gpu_state(device);
    bool made = false;
    {
        py::gil_scoped_release release;  // a GPU call running on the state holds its mutex
        std::lock_guard lock(state->mutex);
        made = state->context != nullptr;
        if (!made) state->tuning = tuning;
    }
    if (made)
        raise(ErrorCode::invalid_argument,
              "set_tuning: the device's context exists already (call it before the device's "
              "first GPU call, or after release_gpu())");
}

py::dict device_info(const py::object& device) {
    std::shared_ptr<GpuState> state = gpu_state(device);
    const gpu::DeviceInfo info = with_gpu(*state, [](GpuState& s) { return s.context->info(); });
    py::dict d;
    d["name"] = info.name;
    d["driver"] = info.driver;
    d["type"] = type_name(info.type);
    d["api_version"] = version_text(info.api_version);
    d["subgroup_size"] = info.subgroup_size;
    d["max_storage_buffer_range"] = info.max_storage_buffer_range;
    d["timestamps"] = info.timestamp_period_ns > 0;
    d["sort_path"] = gpu::sort_path_name(info.sort_path);
    d["sort_window"] = info.sort_window;
    d["sort_rank"] = info.sort_subgroup_rank ? "subgroup" : "shared";
    d["traversal_budget"] = info.traversal_budget;
    return d;
}

}  // namespace broadphase::python
