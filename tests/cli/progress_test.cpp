// The tool's terminal progress line (tools/progress.hpp), written into a memory stream with the
// terminal decision injected: nothing at all when standard error is not a terminal; on one,
// each line replaces the last in place ('\r', padded over a longer one), is cut to the width,
// and is erased before a kept line and at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "progress.hpp"

namespace broadphase::tool {
namespace {

// A FILE* writing into memory (open_memstream); text() is what was written so far.
class Captured {
public:
    Captured() : stream_(open_memstream(&data_, &size_)) {}
    ~Captured() {
        std::fclose(stream_);
        std::free(data_);
    }
    std::FILE* stream() { return stream_; }
    std::string text() {
        std::fflush(stream_);
        return std::string(data_, size_);
    }

private:
    char* data_ = nullptr;
    std::size_t size_ = 0;
    std::FILE* stream_;
};

// A Progress `width` columns wide (update() at most once per `interval`) on a captured stream
// that it takes for a terminal.
struct Terminal {
    explicit Terminal(std::size_t width, std::chrono::steady_clock::duration interval = {})
        : progress(out.stream(), true, width, interval) {}
    Captured out;
    Progress progress;
};

// A Terminal 40 columns wide.
class ProgressOnTerminal : public ::testing::Test {
protected:
    Terminal terminal{40};
    Captured& out = terminal.out;
    Progress& progress = terminal.progress;
};

// Test 1: not a terminal: not one byte, whatever is asked, the destructor included.
TEST(Progress, NotATerminalWritesNothing) {
    Captured out;
    {
        Progress progress(out.stream(), false, 40);
        EXPECT_FALSE(progress.enabled());
        progress.show("validate: %s", "brute_force");
        progress.update("frame %d of %d", 3, 10);
        progress.keep("[1/4] uniform 500 kd_tree: %.4f s", 0.5);
        progress.clear();
    }
    EXPECT_EQ(out.text(), "");
}

// Test 2: on a terminal each line replaces the last; a shorter one is padded over the longer.
TEST_F(ProgressOnTerminal, EachLineReplacesTheLast) {
    EXPECT_TRUE(progress.enabled());
    progress.show("checking %s", "kd_tree");
    EXPECT_EQ(out.text(), "\rchecking kd_tree");
    progress.show("lbvh");
    EXPECT_EQ(out.text(), "\rchecking kd_tree\rlbvh            ");
}

// Test 3: clear() erases the shown line and leaves the cursor at its start; a second clear()
// and a clear() with nothing shown write nothing.
TEST_F(ProgressOnTerminal, ClearErasesOnce) {
    progress.clear();
    EXPECT_EQ(out.text(), "");
    progress.show("abc");
    progress.clear();
    progress.clear();
    EXPECT_EQ(out.text(), "\rabc\r   \r");
}

// Test 4: the destructor erases the line: nothing is left on the terminal at the end.
TEST(Progress, DestructorErases) {
    Captured out;
    {
        Progress progress(out.stream(), true, 40);
        progress.show("frame 1 of 2");
    }
    EXPECT_EQ(out.text(), "\rframe 1 of 2\r            \r");
}

// Test 5: a kept line erases the status line first and ends with a newline.
TEST_F(ProgressOnTerminal, KeptLineErasesTheStatusFirst) {
    progress.keep("one");
    progress.show("running");
    progress.keep("[2/2] done");
    EXPECT_EQ(out.text(), "one\n\rrunning\r       \r[2/2] done\n");
}

// Test 6: a line is cut to width - 1 columns (no wrap), UTF-8 characters kept whole, and a
// newline in the text ends it.
TEST(Progress, LinesAreCutToTheWidth) {
    Terminal narrow(6);
    narrow.progress.show("0123456789");
    EXPECT_EQ(narrow.out.text(), "\r01234");
    Terminal utf8(4);
    utf8.progress.show("a\xE2\x80\x94\xE2\x80\x94\xE2\x80\x94z");  // a, three em dashes, z
    EXPECT_EQ(utf8.out.text(), "\ra\xE2\x80\x94\xE2\x80\x94");
    utf8.progress.show("x\ny");
    EXPECT_EQ(utf8.out.text(), "\ra\xE2\x80\x94\xE2\x80\x94\rx  ");
}

// Test 7: update() shows at most one line per interval; show() always shows.
TEST(Progress, UpdateIsThrottled) {
    Terminal hourly(40, std::chrono::hours(1));
    hourly.progress.update("frame 1");
    hourly.progress.update("frame 2");
    EXPECT_EQ(hourly.out.text(), "\rframe 1");
    hourly.progress.show("frame 3");
    EXPECT_EQ(hourly.out.text(), "\rframe 1\rframe 3");
    Terminal every(40);
    every.progress.update("a");
    every.progress.update("b");
    EXPECT_EQ(every.out.text(), "\ra\rb");
}

// Test 8: a moved-from progress writes nothing; the new owner erases at the end.
TEST(Progress, MovedFromWritesNothing) {
    Captured out;
    {
        Progress first(out.stream(), true, 40);
        first.show("ab");
        Progress second(std::move(first));
        first.show("zz");
        first.clear();
        EXPECT_EQ(out.text(), "\rab");
    }
    EXPECT_EQ(out.text(), "\rab\r  \r");
}

}  // namespace
}  // namespace broadphase::tool
