// The tool's checked input and output: every write is checked (a full disk or a closed
// standard output is an error, never a silent exit 0), inputs must be regular files, and a
// scene is refused up front when its boxes cannot fit in the memory this process may use.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "args.hpp"
#include "broadphase/scene.hpp"

namespace broadphase::tool {

/// The --out value that means standard output (`--out -`).
inline constexpr std::string_view kStdoutPath = "-";

/// Where a command's text goes: the --out file (opened on first use; when this created it,
/// removed again unless finish() succeeds) or standard output (no --out, or `--out -`). Both are
/// line-buffered: a long command's finished lines are there while it runs.
class Output {
public:
    explicit Output(const Args& args);
    ~Output();
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;

    /// Writes text; an error is remembered and reported by finish().
    void write(std::string_view text);
    void print(const char* format, ...) __attribute__((format(printf, 2, 3)));
    /// True once a write failed (callers of long commands stop early).
    bool failed() const;
    /// Flushes and closes the output; an error names the file (or standard output) and why.
    Status finish();

private:
    bool open();
    std::string path_;  ///< empty for standard output
    std::FILE* file_ = nullptr;
    int error_ = 0;         ///< errno of the first failure
    bool created_ = false;  ///< the --out file did not exist before (a regular file now)
    bool finished_ = false;
};

/// Writes `text` to `path` whole; an error names the file and why (ENOSPC, ...).
Status write_text_file(const std::string& path, std::string_view text);

/// Reads a regular file whole; a directory, device or FIFO is refused, naming the file.
Result<std::string> read_text_file(const std::string& path);

/// Bytes of memory this process may use: physical memory, or less under RLIMIT_AS/RLIMIT_DATA.
std::size_t memory_limit();

/// load_scene(spec) for option `option`: a generator whose boxes (and one copy of them, which
/// every method makes) exceed memory_limit() is refused before anything is allocated, and
/// running out of memory is an error, never an abort. A spec that is no file but reads as
/// NAME:COUNT with an unknown NAME gets the library's unknown-generator error, not "cannot
/// open". An empty scene is no error: a note on standard error names it.
Result<Scene> load_input_scene(const std::string& spec, const std::string& option = "--scene");

/// Flushes standard output; an error (a full disk, a closed pipe) says so.
Status finish_stdout();

/// A byte count for messages: "1.5 GB", "24 MB", "300 bytes".
std::string bytes_text(double bytes);

}  // namespace broadphase::tool
