// `broadphase`: overlapping pairs, cross-validation of every method, benchmarks and scene
// generation from the command line. The commands and their options are in args.cpp, the
// commands themselves in commands.hpp; this reads the command line and runs one.
#include <cstdio>
#include <new>
#include <stdexcept>

#include "args.hpp"
#include "commands.hpp"
#include "io.hpp"

int main(int argc, char** argv) {
    using namespace broadphase::tool;
    // Each finished line is written at once, also into a pipe or a file: a long validate or
    // bench shows its progress as it goes (and keeps it if it is stopped).
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    CommandLine line = read_command_line(argc, argv);
    if (line.run == nullptr) {
        std::fputs(line.text.c_str(), line.exit_code == 0 ? stdout : stderr);
        if (line.exit_code != 0) return line.exit_code;
        broadphase::Status s = finish_stdout();
        return s ? 0 : fail(s.error());
    }
    int status = 0;
    try {
        status = line.run(line.args);
    } catch (const std::bad_alloc&) {
        // The commands and the library turn allocation failures into errors with sizes where
        // they build or query; this is the last resort for anything in between.
        std::fprintf(stderr, "broadphase %s: out of memory\n", line.args.command.c_str());
        status = 2;
    } catch (const std::length_error&) {
        std::fprintf(stderr, "broadphase %s: out of memory (a size beyond any container)\n",
                     line.args.command.c_str());
        status = 2;
    }
    // Output that never arrived is a failure, whatever the command said (a command that
    // failed has said why already).
    broadphase::Status flushed = finish_stdout();
    if (!flushed && status == 0) return fail(flushed.error());
    return status;
}
