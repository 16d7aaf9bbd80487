// A stand-alone main for the fuzz targets where libFuzzer is not used (g++ builds, ctest in CI):
// feeds LLVMFuzzerTestOneInput every file of the given corpus folders (or files), then a bounded
// number of deterministic pseudo-random mutations of them (bit flips, byte changes, hostile
// tokens such as "nan", "1e39", NUL bytes and byte-order marks, deleted, duplicated and spliced
// ranges, long runs of one byte). Not coverage-guided like libFuzzer, but the same targets, the
// same checks and a reproducible run: an input that makes a target abort is written to
// crash-<target>.bin in the working folder.
//
//   TARGET [--mutations N] [--seed S] [--max-len BYTES] CORPUS_DIR_OR_FILE...
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Present only in sanitizer builds: called before a sanitizer report ends the process.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using Bytes = std::vector<std::uint8_t>;

// The input being run and where to write it if the process dies (read by the signal handler).
const Bytes* g_current = nullptr;
char g_crash_path[512] = "crash.bin";

void write_current_input() {
    if (g_current == nullptr) return;
    const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    std::size_t done = 0;
    while (done < g_current->size()) {
        const ssize_t n = ::write(fd, g_current->data() + done, g_current->size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    static const char kMessage[] = "fuzz: the failing input is written to ";
    [[maybe_unused]] ssize_t ignored = ::write(2, kMessage, sizeof kMessage - 1);
    ignored = ::write(2, g_crash_path, std::strlen(g_crash_path));
    ignored = ::write(2, "\n", 1);
}

void on_fatal_signal(int signal) {
    write_current_input();
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

/// splitmix64 (Steele, Lea & Flood 2014): a small seeded generator, the same on every platform.
class Random {
public:
    explicit Random(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, n) for n > 0 (modulo bias is irrelevant here).
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

private:
    std::uint64_t state_;
};

/// Text that parsers of numbers, lines and specs find interesting.
constexpr std::string_view kTokens[] = {
    "nan", "-nan", "NaN", "inf", "-inf", "infinity", "1e39", "-1e39", "3.4028236e38", "1e-46",
    "-0", "0x1p3", "1.", ".5", "+-1", "--1", "4294967295", "4294967296", "18446744073709551616",
    "-1", "0", "+", "-", "e", ".", "/", "//", "#", ":", ",", " ", "\t", "\n", "\r\n", "\r",
    std::string_view("\0", 1), "\xef\xbb\xbf", "\xff", "v 0 0 0\n", "f 1 2 3\n", "f -1 -2\n",
    "vt 0 0\n", "uniform:", "degenerate:", "clustered:3:", ":42",
};

constexpr char kByteList[] = " \t\n\r,#:/-+.eE0123456789naifNAIF\0\xff";
/// Bytes that separate or form numbers (NUL and 0xff included).
constexpr std::string_view kBytes(kByteList, sizeof kByteList - 1);

void insert(Bytes& b, std::size_t at, std::string_view text) {
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), text.begin(), text.end());
}

/// One random edit of `b`; `other` is another corpus input to splice from.
void mutate_once(Bytes& b, const Bytes& other, Random& random) {
    const std::size_t n = b.size();
    switch (random.below(9)) {
        case 0:  // flip one bit
            if (n) b[random.below(n)] ^= static_cast<std::uint8_t>(1u << random.below(8));
            break;
        case 1:  // any byte value
            if (n) b[random.below(n)] = static_cast<std::uint8_t>(random.below(256));
            break;
        case 2:  // a byte that separates or forms numbers
            if (n) b[random.below(n)] = static_cast<std::uint8_t>(kBytes[random.below(kBytes.size())]);
            break;
        case 3:  // a hostile token
            insert(b, random.below(n + 1), kTokens[random.below(std::size(kTokens))]);
            break;
        case 4: {  // delete a range
            if (!n) break;
            const std::size_t at = random.below(n);
            const std::size_t len = 1 + random.below(std::min<std::size_t>(16, n - at));
            b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                    b.begin() + static_cast<std::ptrdiff_t>(at + len));
            break;
        }
        case 5: {  // duplicate a range
            if (!n) break;
            const std::size_t at = random.below(n);
            const std::size_t len = 1 + random.below(std::min<std::size_t>(64, n - at));
            const Bytes copy(b.begin() + static_cast<std::ptrdiff_t>(at),
                             b.begin() + static_cast<std::ptrdiff_t>(at + len));
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(random.below(n + 1)), copy.begin(),
                     copy.end());
            break;
        }
        case 6: {  // splice: our head, the other input's tail
            const std::size_t head = random.below(n + 1);
            const std::size_t tail = random.below(other.size() + 1);
            b.resize(head);
            b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(tail), other.end());
            break;
        }
        case 7:  // truncate
            b.resize(random.below(n + 1));
            break;
        default: {  // a long run of one byte (very long lines, numbers, paths)
            const auto byte = static_cast<std::uint8_t>(kBytes[random.below(kBytes.size())]);
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(random.below(n + 1)),
                     1 + random.below(4096), byte);
            break;
        }
    }
}

Bytes read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int usage(const char* program) {
    std::fprintf(stderr,
                 "usage: %s [--mutations N] [--seed S] [--max-len BYTES] CORPUS_DIR_OR_FILE...\n",
                 program);
    return 2;
}

void run(const Bytes& input) {
    g_current = &input;
    LLVMFuzzerTestOneInput(input.data(), input.size());
    g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t mutations = 0;
    std::uint64_t seed = 1;
    std::size_t max_len = 1 << 16;
    std::vector<std::filesystem::path> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--mutations" && has_value) {
            mutations = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--seed" && has_value) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--max-len" && has_value) {
            max_len = std::max<std::size_t>(1, std::strtoull(argv[++i], nullptr, 10));
        } else if (arg.starts_with("-")) {
            return usage(argv[0]);
        } else {
            paths.emplace_back(arg);
        }
    }

    std::vector<std::filesystem::path> files;
    for (const auto& path : paths) {
        std::error_code error;
        if (std::filesystem::is_directory(path, error)) {
            for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
                if (entry.is_regular_file()) files.push_back(entry.path());
            }
        } else if (std::filesystem::is_regular_file(path, error)) {
            files.push_back(path);
        } else {
            std::fprintf(stderr, "fuzz: no file or folder '%s'\n", path.c_str());
            return 2;
        }
    }
    std::sort(files.begin(), files.end());  // a reproducible order, whatever the file system's
    if (files.empty()) {
        std::fprintf(stderr, "fuzz: no corpus files given\n");
        return usage(argv[0]);
    }

    const std::string name = std::filesystem::path(argv[0]).filename().string();
    std::snprintf(g_crash_path, sizeof g_crash_path, "crash-%s.bin", name.c_str());
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(&write_current_input);
    for (int signal : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, on_fatal_signal);

    std::vector<Bytes> corpus;
    for (const auto& file : files) corpus.push_back(read_file(file));
    for (const Bytes& input : corpus) run(input);

    Random random(seed);
    for (std::size_t k = 0; k < mutations; ++k) {
        Bytes input = corpus[k % corpus.size()];
        const Bytes& other = corpus[random.below(corpus.size())];
        for (std::size_t edits = 1 + random.below(4); edits > 0; --edits) {
            mutate_once(input, other, random);
        }
        if (input.size() > max_len) input.resize(max_len);
        run(input);
    }
    std::printf("fuzz: %s ran %zu corpus files and %zu mutations (seed %llu), no failures\n",
                name.c_str(), corpus.size(), mutations, static_cast<unsigned long long>(seed));
    return 0;
}
