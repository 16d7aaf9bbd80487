// The script of `broadphase events --script`: bodies added, removed, moved and refiltered frame
// by frame under the script's own ids, read whole and checked before anything runs, so that a
// bad script fails before any output. The format, one command per line (white space between
// fields, `#` starts a comment, blank lines are skipped):
//
//   frame                                                 starts a frame (the first line)
//   + ID minx miny minz maxx maxy maxz [category mask group]   adds a dynamic body
//   s ID minx miny minz maxx maxy maxz [category mask group]   adds a static body
//   - ID                                                  removes a body
//   m ID minx miny minz maxx maxy maxz                    moves a body (static ones too)
//   f ID category mask group                              changes a body's filter
//
// ID is a decimal integer in [0, 4294967295], live from its add to its remove and then free to
// be added again; category and mask are decimal or 0x-prefixed hexadecimal 32-bit values
// (defaults 1 and 0xFFFFFFFF), group a signed decimal 32-bit value (default 0): b2Filter's
// categoryBits, maskBits and groupIndex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "broadphase/proxies.hpp"
#include "broadphase/types.hpp"

namespace broadphase::tool {

/// One line of a script other than `frame`.
struct ScriptCommand {
    enum class Op : std::uint8_t { add, remove, move, set_filter };
    Op op = Op::add;
    BodyKind kind = BodyKind::dynamic_body;  ///< add: `+` dynamic, `s` static
    std::uint32_t id = 0;                    ///< the script's id of the body
    Box box{};                               ///< add, move
    Filter filter{};                         ///< add, set_filter
    std::size_t line = 0;                    ///< 1-based line in the script
};

/// A script read whole: its frames in order, each the commands that precede its step.
struct ProxyScript {
    std::vector<std::vector<ScriptCommand>> frames;
};

/// Reads a script (the format above) and checks that every command applies: an add names an
/// id that is not live, the others one that is. An error (parse_error or invalid_box) reads
/// "SOURCE:LINE: what", its `line` set.
Result<ProxyScript> parse_proxy_script(std::string_view text, std::string_view source);

}  // namespace broadphase::tool
