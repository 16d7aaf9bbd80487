// The tool's checked input and output (see io.hpp).
#include "io.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <system_error>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace broadphase::tool {
namespace {

Error io_error(const std::string& what, int error_number) {
    return Error{ErrorCode::io_error, what + ": " + std::strerror(error_number)};
}

const char* file_kind(mode_t mode) {
    return S_ISDIR(mode)    ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

}  // namespace

Output::Output(const Args& args) : path_(args.out == kStdoutPath ? "" : args.out) {}

Output::~Output() {
    if (file_ != nullptr && file_ != stdout) {
        std::fclose(file_);
        if (!finished_ && created_) std::remove(path_.c_str());
    }
}

bool Output::open() {
    if (file_ != nullptr) return true;
    if (error_ != 0) return false;
    if (path_.empty()) {
        file_ = stdout;
        return true;
    }
    // Only a file this command creates is removed again on failure: never a device such as
    // /dev/full, nor a file that was there before.
    struct stat info {};
    const bool existed = ::lstat(path_.c_str(), &info) == 0 || errno != ENOENT;
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) {
        error_ = errno ? errno : EIO;
        return false;
    }
    created_ = !existed && ::fstat(::fileno(file_), &info) == 0 && S_ISREG(info.st_mode);
    std::setvbuf(file_, nullptr, _IOLBF, 0);  // each finished line is in the file, as on stdout
    return true;
}

void Output::write(std::string_view text) {
    if (!open() || text.empty()) return;
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() && error_ == 0)
        error_ = errno ? errno : EIO;
}

void Output::print(const char* format, ...) {
    if (!open()) return;
    std::va_list list;
    va_start(list, format);
    if (std::vfprintf(file_, format, list) < 0 && error_ == 0) error_ = errno ? errno : EIO;
    va_end(list);
}

bool Output::failed() const {
    return error_ != 0 || (file_ != nullptr && std::ferror(file_));
}

Status Output::finish() {
    open();  // an empty result still creates the --out file
    const std::string name = path_.empty() ? "standard output" : "'" + path_ + "'";
    if (file_ != nullptr) {
        errno = 0;
        if ((std::fflush(file_) != 0 || std::ferror(file_)) && error_ == 0)
            error_ = errno ? errno : EIO;
        if (file_ != stdout) {
            errno = 0;
            if (std::fclose(file_) != 0 && error_ == 0) error_ = errno ? errno : EIO;
            file_ = nullptr;
        }
    }
    if (error_ != 0) {
        if (created_) std::remove(path_.c_str());
        finished_ = true;
        return io_error("cannot write " + name, error_);
    }
    finished_ = true;
    return Status::success();
}

Status write_text_file(const std::string& path, std::string_view text) {
    Args args;
    args.out = path;
    Output out(args);
    out.write(text);
    return out.finish();
}

Result<std::string> read_text_file(const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return io_error("cannot open '" + path + "'", errno);
    if (!S_ISREG(info.st_mode))
        return Error{ErrorCode::io_error, "cannot read '" + path + "': " + file_kind(info.st_mode) +
                                              ", not a regular file"};
    if (static_cast<std::size_t>(info.st_size) > memory_limit())
        return Error{ErrorCode::limit_exceeded,
                     "cannot read '" + path + "': " + bytes_text(double(info.st_size)) +
                         ", more than the " + bytes_text(double(memory_limit())) +
                         " of memory this process may use"};
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) return io_error("cannot open '" + path + "'", errno);
    try {
        std::string text;
        text.reserve(static_cast<std::size_t>(info.st_size));
        char buffer[1 << 16];
        std::size_t n = 0;
        while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
        const bool bad = std::ferror(file);
        const int error_number = errno;
        std::fclose(file);
        if (bad) return io_error("cannot read '" + path + "'", error_number);
        return text;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    std::fclose(file);
    return Error{ErrorCode::out_of_memory,
                 "out of memory reading '" + path + "' (" + bytes_text(double(info.st_size)) + ")"};
}

std::size_t memory_limit() {
    double limit = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
    if (!(limit > 0)) limit = double(std::numeric_limits<std::size_t>::max());
    for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        struct rlimit r {};
        if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
            limit = std::min(limit, double(r.rlim_cur));
    }
    return limit >= double(std::numeric_limits<std::size_t>::max())
               ? std::numeric_limits<std::size_t>::max()
               : static_cast<std::size_t>(limit);
}

Result<Scene> load_input_scene(const std::string& spec, const std::string& option) {
    // A generator NAME:COUNT[:SEED]: its boxes plus the copy a method makes must fit.
    const std::size_t colon = spec.find(':');
    if (colon != std::string::npos) {
        bool generator = false;
        for (std::string_view g : generator_names()) generator |= spec.compare(0, colon, g) == 0;
        const std::size_t end = spec.find(':', colon + 1);
        const std::string_view count_text = std::string_view(spec).substr(
            colon + 1, end == std::string::npos ? end : end - colon - 1);
        std::uint64_t count = 0;
        const auto r =
            std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
        if (generator && r.ec == std::errc() && r.ptr == count_text.data() + count_text.size()) {
            const double boxes = double(count) * double(sizeof(Box));
            const double limit = double(memory_limit());
            if (2 * boxes > limit)
                return Error{ErrorCode::limit_exceeded,
                             option + " " + spec + ": " + std::to_string(count) + " boxes are " +
                                 bytes_text(boxes) + ", and with the copy every method makes " +
                                 bytes_text(2 * boxes) + ", more than the " + bytes_text(limit) +
                                 " of memory this process may use"};
        }
    }
    Result<Scene> scene =
        Error{ErrorCode::out_of_memory, "out of memory loading " + option + " " + spec};
    try {
        scene = load_scene(spec);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    if (!scene) {
        // load_scene's "unknown generator" (a NAME:... that is no file) names no option: say
        // which one held it.
        if (scene.error().message.rfind("unknown generator", 0) == 0)
            return Error{scene.error().code, option + ": " + scene.error().message};
        return scene;
    }
    if (scene->boxes.empty())
        std::fprintf(stderr,
                     "broadphase: %s %s has no boxes: an empty scene, so the results are empty\n",
                     option.c_str(), spec.c_str());
    return scene;
}

Status finish_stdout() {
    errno = 0;
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        return io_error("cannot write standard output", errno ? errno : EIO);
    return Status::success();
}

std::string bytes_text(double bytes) {
    char text[32];
    if (bytes >= 1e9)
        std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6)
        std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
    else
        std::snprintf(text, sizeof text, "%.0f bytes", bytes);
    return text;
}

}  // namespace broadphase::tool
