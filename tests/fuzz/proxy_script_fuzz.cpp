// Fuzz target: the script reader of `broadphase events --script` (tools/proxy_script.hpp). Any
// bytes either parse into frames whose commands all apply (valid boxes, an add on an id not
// live, every other command on a live one, at most one command per line), or fail with an error
// naming the file and its 1-based line (the one error without a line: a script with no frame).
#include <cstddef>
#include <cstdint>
#include <set>

#include "broadphase/scene.hpp"
#include "fuzz_check.hpp"
#include "proxy_script.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    using broadphase::tool::ScriptCommand;
    const std::string_view text = as_text(data, size);
    const auto script =
        no_throw([&] { return broadphase::tool::parse_proxy_script(text, "fuzz.script"); });
    const std::size_t lines = line_count(text);
    if (script) {
        FUZZ_CHECK(!script->frames.empty());
        std::set<std::uint32_t> live;
        std::size_t last_line = 0;
        for (const auto& frame : script->frames) {
            for (const ScriptCommand& c : frame) {
                FUZZ_CHECK(c.line > last_line && c.line <= lines);
                last_line = c.line;
                const bool was_live = live.count(c.id) != 0;
                FUZZ_CHECK(was_live == (c.op != ScriptCommand::Op::add));
                if (c.op == ScriptCommand::Op::add) live.insert(c.id);
                if (c.op == ScriptCommand::Op::remove) live.erase(c.id);
                if (c.op == ScriptCommand::Op::add || c.op == ScriptCommand::Op::move)
                    FUZZ_CHECK(validate_box(c.box, c.id).ok());
            }
        }
        return 0;
    }
    const Error& error = script.error();
    check_error(error, {ErrorCode::parse_error, ErrorCode::invalid_box, ErrorCode::out_of_memory});
    if (error.code != ErrorCode::out_of_memory && error.line) {
        check_error_line(error, "fuzz.script", lines);
    } else if (error.code != ErrorCode::out_of_memory) {
        FUZZ_CHECK(error.message.starts_with("fuzz.script: no frame"));
    }
    return 0;
}
