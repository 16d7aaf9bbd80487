// Whole-file reads and writes shared by the file formats (scene text, .obj, rays, depth files):
// errors name the file and the system's reason, and only regular files are read.
#pragma once

#include <string>
#include <string_view>

#include "broadphase/types.hpp"

namespace broadphase::file_io {

/// io_error "<what> '<path>': <strerror of error_number>".
Error io_error(const std::string& what, const std::string& path, int error_number);

/// The whole content of a regular file (a directory, a device such as /dev/zero or a FIFO has
/// no end to read up to, or blocks on open: refused, checked before opening and again on what
/// was opened).
Result<std::string> read_regular_file(const std::string& path);

/// Writes `text` as the whole file (created or truncated); a failed open, write or close is an
/// io_error naming the file.
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace broadphase::file_io
