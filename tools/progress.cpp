// The tool's one-line terminal progress (see progress.hpp).
#include "progress.hpp"

#include <cstdarg>
#include <string>

#include <sys/ioctl.h>
#include <unistd.h>

namespace broadphase::tool {

namespace {

std::string formatted(const char* format, std::va_list args) {
    std::va_list copy;
    va_copy(copy, args);
    const int size = std::vsnprintf(nullptr, 0, format, copy);
    va_end(copy);
    if (size <= 0) return {};
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, args);
    text.pop_back();
    return text;
}

// `text` cut to at most `columns` characters (UTF-8 sequences kept whole); its columns in
// `count`.
std::string cut(const std::string& text, std::size_t columns, std::size_t& count) {
    count = 0;
    std::size_t end = 0;
    for (; end < text.size(); ++end) {
        const auto byte = static_cast<unsigned char>(text[end]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
        if (byte == '\n' || byte == '\r' || count == columns) break;
        ++count;
    }
    return text.substr(0, end);
}

}  // namespace

Progress::Progress(std::FILE* stream, bool enabled, std::size_t width,
                   std::chrono::steady_clock::duration min_interval)
    : stream_(stream),
      enabled_(enabled && stream != nullptr),
      width_(width),
      min_interval_(min_interval) {}

Progress Progress::on_stderr() {
    const bool terminal = ::isatty(::fileno(stderr)) == 1;
    std::size_t width = 80;
    winsize size{};
    if (terminal && ::ioctl(::fileno(stderr), TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        width = size.ws_col;
    return Progress(stderr, terminal, width, std::chrono::milliseconds(100));
}

Progress::~Progress() {
    clear();
}

Progress::Progress(Progress&& other) noexcept
    : stream_(other.stream_),
      enabled_(other.enabled_),
      width_(other.width_),
      min_interval_(other.min_interval_),
      last_(other.last_),
      timed_(other.timed_),
      shown_(other.shown_) {
    other.enabled_ = false;
    other.shown_ = 0;
}

void Progress::show(const char* format, ...) {
    if (!enabled_) return;
    std::va_list args;
    va_start(args, format);
    replace(formatted(format, args));
    va_end(args);
}

void Progress::update(const char* format, ...) {
    if (!enabled_ || !due()) return;
    std::va_list args;
    va_start(args, format);
    replace(formatted(format, args));
    va_end(args);
}

void Progress::keep(const char* format, ...) {
    if (!enabled_) return;
    clear();
    std::va_list args;
    va_start(args, format);
    const std::string text = formatted(format, args);
    va_end(args);
    std::fprintf(stream_, "%s\n", text.c_str());
    std::fflush(stream_);
}

void Progress::clear() {
    if (!enabled_ || shown_ == 0) return;
    std::fprintf(stream_, "\r%*s\r", static_cast<int>(shown_), "");
    std::fflush(stream_);
    shown_ = 0;
}

bool Progress::due() const {
    return !timed_ || std::chrono::steady_clock::now() - last_ >= min_interval_;
}

void Progress::replace(const std::string& text) {
    std::size_t columns = 0;
    // One column is left free: a line as wide as the terminal would wrap the cursor.
    const std::string line = cut(text, width_ > 1 ? width_ - 1 : 1, columns);
    const int pad = shown_ > columns ? static_cast<int>(shown_ - columns) : 0;
    std::fprintf(stream_, "\r%s%*s", line.c_str(), pad, "");
    std::fflush(stream_);
    shown_ = columns;  // the padding is blank already
    last_ = std::chrono::steady_clock::now();
    timed_ = true;
}

}  // namespace broadphase::tool
