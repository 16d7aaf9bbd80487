// One line of progress on a terminal for the tool's long commands (validate, events,
// bench cpu): the line is rewritten in place with '\r', cut to the terminal's width, and
// erased before anything else is written to that terminal and at the end. It is shown only
// when standard error is a terminal (isatty), so that a redirected or piped standard error, a
// file and standard output never see it; the decision and the stream are injected for tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace broadphase::tool {

/// The status line. Move-only; the destructor erases whatever line is shown.
class Progress {
public:
    /// Writes to `stream` (not owned, must outlive this) only when `enabled`; a line is cut to
    /// `width` - 1 columns (no wrap), and update() shows at most one line per `min_interval`.
    Progress(std::FILE* stream, bool enabled, std::size_t width = 80,
             std::chrono::steady_clock::duration min_interval = {});
    /// On standard error, enabled when it is a terminal, as wide as the terminal (80 when it
    /// does not say), update() at most ten times a second.
    static Progress on_stderr();
    ~Progress();
    Progress(Progress&& other) noexcept;
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    Progress& operator=(Progress&&) = delete;

    bool enabled() const { return enabled_; }

    /// Replaces the shown line with the formatted text (printf), at once.
    void show(const char* format, ...) __attribute__((format(printf, 2, 3)));
    /// Like show(), but skipped when the last line was shown less than min_interval ago: for
    /// a count that advances quickly (frames done).
    void update(const char* format, ...) __attribute__((format(printf, 2, 3)));
    /// Writes a line that stays (the shown line is erased first), followed by a newline.
    void keep(const char* format, ...) __attribute__((format(printf, 2, 3)));
    /// Erases the shown line, if any: call before anything else goes to the terminal.
    void clear();

private:
    /// update()'s rate limit: no line shown yet, or the last one min_interval ago or more.
    bool due() const;
    void replace(const std::string& text);

    std::FILE* stream_;
    bool enabled_;
    std::size_t width_;
    std::chrono::steady_clock::duration min_interval_;
    std::chrono::steady_clock::time_point last_{};  ///< when a line was last shown
    bool timed_ = false;                            ///< a line has been shown
    std::size_t shown_ = 0;  ///< columns of the line on screen now, 0 when none
};

}  // namespace broadphase::tool
