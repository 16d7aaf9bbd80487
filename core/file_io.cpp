// Whole-file reads and writes shared by the file formats (core/file_io.hpp).
#include "file_io.hpp"

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

#include <sys/stat.h>

namespace broadphase::file_io {
namespace {

Error not_regular(const std::string& path, mode_t mode) {
    const char* kind = S_ISDIR(mode)    ? "a directory"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                       : S_ISFIFO(mode) ? "a FIFO"
                       : S_ISSOCK(mode) ? "a socket"
                                        : "not a regular file";
    return {ErrorCode::io_error, "cannot read '" + path + "': " + kind + ", not a regular file"};
}

}  // namespace

Error io_error(const std::string& what, const std::string& path, int error_number) {
    return {ErrorCode::io_error,
            what + " '" + path + "': " + std::generic_category().message(error_number)};
}

Result<std::string> read_regular_file(const std::string& path) {
    using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return io_error("cannot open", path, errno);
    if (!S_ISREG(info.st_mode)) return not_regular(path, info.st_mode);
    File file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) return io_error("cannot open", path, errno);
    if (::fstat(::fileno(file.get()), &info) != 0) return io_error("cannot read", path, errno);
    if (!S_ISREG(info.st_mode)) return not_regular(path, info.st_mode);
    std::string text;
    text.reserve(static_cast<std::size_t>(info.st_size));
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
    if (std::ferror(file.get())) return io_error("cannot read", path, errno);
    return text;
}

Status write_text_file(const std::string& path, std::string_view text) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) return io_error("cannot open for writing", path, errno);
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    const int write_errno = errno;
    const bool closed = std::fclose(file) == 0;
    if (!written) return io_error("cannot write", path, write_errno);
    if (!closed) return io_error("cannot write", path, errno);
    return Status::success();
}

}  // namespace broadphase::file_io
