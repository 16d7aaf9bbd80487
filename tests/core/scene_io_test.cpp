// Tests of the scene file formats: scene text (round trip bit for bit, separators, comments,
// CRLF, malformed lines with their line numbers), Wavefront .obj (face forms, relative
// indices, errors), file reading and writing, and hostile input that must fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "../fuzz/fuzz_check.hpp"
#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

using Limits = std::numeric_limits<float>;

// Bit-for-bit equality (tells -0 from 0), the fuzz targets' round-trip check.
using fuzz::same_bits;

std::string temp_path(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / name).string();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

/// Expects `text` to fail to parse on `line` (1-based) for box `box` with `message`.
void expect_scene_error(const std::string& text, std::size_t line, std::size_t box,
                        const std::string& message, ErrorCode code = ErrorCode::parse_error) {
    SCOPED_TRACE(text);
    const auto scene = parse_scene_text(text, "scene.txt");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, code);
    EXPECT_EQ(scene.error().line, line);
    EXPECT_EQ(scene.error().box, box);
    EXPECT_EQ(scene.error().message, message);
}

// Expects a parse that succeeds with exactly `expected`.
void expect_parsed(const Result<Scene>& scene, const std::vector<Box>& expected) {
    ASSERT_TRUE(scene) << scene.error().message;
    EXPECT_EQ(scene->boxes, expected);
}

void expect_obj_error(const std::string& text, std::size_t line, const std::string& message) {
    SCOPED_TRACE(text);
    const auto scene = parse_obj(text, "mesh.obj");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::parse_error);
    EXPECT_EQ(scene.error().line, line);
    EXPECT_EQ(scene.error().message, message);
}

// Scene text: writing and round trips.

TEST(SceneText, FormatsSixShortestNumbersPerLine) {
    const std::vector<Box> boxes = {{{0, 0, 0}, {1, 1, 1}}, {{0.1f, -2.5f, -0.0f}, {1e30f, 3, 4}}};
    EXPECT_EQ(format_scene_text(boxes), "0 0 0 1 1 1\n0.1 -2.5 -0 1e+30 3 4\n");
    EXPECT_EQ(format_scene_text({}), "");
}

TEST(SceneText, RoundTripsEveryGeneratorBitForBit) {
    for (std::string_view name : generator_names()) {
        const auto scene = generate_scene(name, 1000);
        ASSERT_TRUE(scene);
        const auto back = parse_scene_text(format_scene_text(scene->boxes));
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_TRUE(same_bits(scene->boxes, back->boxes)) << name;
    }
}

TEST(SceneText, RoundTripsExtremeValuesBitForBit) {
    const float values[] = {
        0.0f,          -0.0f,         Limits::denorm_min(), -Limits::denorm_min(),
        Limits::min(), Limits::max(), Limits::lowest(),     Limits::epsilon(),
        1.0f / 3.0f,   0.1f,          16777217.0f,          -123456.789f,
        1e-40f};
    std::vector<Box> boxes;
    for (float v : values) boxes.push_back({{v, v, v}, {v, v, v}});
    boxes.push_back({{Limits::lowest(), -0.0f, 0.0f}, {Limits::max(), 0.0f, 0.0f}});
    const auto back = parse_scene_text(format_scene_text(boxes));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_TRUE(same_bits(boxes, back->boxes));
}

TEST(SceneText, FileRoundTrip) {
    const auto scene = generate_scene("mixed_sizes", 500);
    ASSERT_TRUE(scene);
    const std::string path = temp_path("broadphase_round_trip.txt");
    ASSERT_TRUE(write_scene_file(path, scene->boxes));
    const auto back = read_scene_file(path);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->name, path);
    EXPECT_TRUE(same_bits(scene->boxes, back->boxes));
    std::filesystem::remove(path);
}

// Scene text: accepted syntax.

TEST(SceneText, CommasAndMixedSeparators) {
    const std::vector<Box> expected = {
        {{0, 0, 0}, {1, 1, 1}}, {{1, 2, 3}, {4, 5, 6}}, {{-1, -2, -3}, {0.5f, 0.25f, 0}}};
    expect_parsed(parse_scene_text("0,0,0,1,1,1\n1, 2, 3, 4, 5, 6\n  -1 ,-2\t-3,0.5 , 0.25,0  \n"),
                  expected);
}

TEST(SceneText, CommentsAndBlankLines) {
    const auto scene = parse_scene_text(
        "# a scene\n"
        "\n"
        "0 0 0 1 1 1  # the first box\n"
        "   \t \n"
        "#1 1 1 0 0 0 (commented out)\n"
        "1 1 1 2 2 2#no space\n"
        "#");
    ASSERT_TRUE(scene) << scene.error().message;
    ASSERT_EQ(scene->boxes.size(), 2u);
    EXPECT_EQ(scene->boxes[1], (Box{{1, 1, 1}, {2, 2, 2}}));
}

TEST(SceneText, CrlfLineEndingsAndNoFinalNewline) {
    const auto scene = parse_scene_text("0 0 0 1 1 1\r\n\r\n1 1 1 2 2 2\r\n3 3 3 4 4 4");
    ASSERT_TRUE(scene) << scene.error().message;
    EXPECT_EQ(scene->boxes.size(), 3u);
    expect_scene_error("0 0 0 1 1 1\r\n\r\n1 1 1 2 2\r\n", 3, 1,
                       "scene.txt:3: expected 6 numbers (minx miny minz maxx maxy maxz), found 5");
}

TEST(SceneText, LeadingByteOrderMarkIsSkipped) {
    // Written by some Windows editors; it used to read as "'???0' is not a number".
    const auto scene = parse_scene_text(
        "\xEF\xBB\xBF"
        "0 0 0 1 1 1\n1 1 1 2 2 2\n");
    ASSERT_TRUE(scene) << scene.error().message;
    EXPECT_EQ(scene->boxes.size(), 2u);
    // Only at the very start: elsewhere it is still a bad number, named with its line.
    expect_scene_error(
        "0 0 0 1 1 1\n\xEF\xBB\xBF"
        "1 1 1 2 2 2\n",
        2, 1, "scene.txt:2: '???1' is not a number");
}

TEST(SceneText, EmptyTextIsAnEmptyScene) {
    for (const char* text : {"", "\n", "# nothing\n", "\r\n\r\n", "   "}) {
        const auto scene = parse_scene_text(text);
        ASSERT_TRUE(scene) << text;
        EXPECT_TRUE(scene->boxes.empty());
    }
}

TEST(SceneText, NumberForms) {
    const auto scene = parse_scene_text("+1 1. .25 1e1 1E+1 5e-1\n1e-50 -1e-50 0 0 0 0\n");
    ASSERT_TRUE(scene) << scene.error().message;
    EXPECT_EQ(scene->boxes[0], (Box{{1, 1, 0.25f}, {10, 10, 0.5f}}));
    EXPECT_EQ(scene->boxes[1].min.x, 0.0f);  // underflow reads as the nearest float
}

// Scene text: errors name the line and the box.

TEST(SceneText, WrongNumberOfFields) {
    expect_scene_error("0 0 0 1 1 1\n# c\n1 2 3 4 5\n", 3, 1,
                       "scene.txt:3: expected 6 numbers (minx miny minz maxx maxy maxz), found 5");
    expect_scene_error("\n\n\n1 2 3 4 5 6 7\n", 4, 0,
                       "scene.txt:4: expected 6 numbers (minx miny minz maxx maxy maxz), found 7");
    expect_scene_error("0 0 0 1 1 1\n7\n", 2, 1,
                       "scene.txt:2: expected 6 numbers (minx miny minz maxx maxy maxz), found 1");
}

TEST(SceneText, GarbageNumbers) {
    expect_scene_error("0 0 0 1 1 1\n1 2 x 4 5 6\n", 2, 1, "scene.txt:2: 'x' is not a number");
    expect_scene_error("1 2 3 4 5 6x\n", 1, 0, "scene.txt:1: '6x' is not a number");
    for (const char* bad : {"0x1", "1..2", "--1", "+-1", "++1", "1e", "e5", ".", "-", "+",
                            "1,5.5.5", "1;", "0b1", "1_000"}) {
        const auto scene = parse_scene_text(std::string("0 0 0 ") + bad + " 9 9 9\n");
        ASSERT_FALSE(scene) << bad;
        EXPECT_EQ(scene.error().code, ErrorCode::parse_error) << bad;
        EXPECT_EQ(scene.error().line, 1u) << bad;
    }
}

TEST(SceneText, OutOfRangeNumbers) {
    expect_scene_error("0 0 0 1e39 1 1\n", 1, 0, "scene.txt:1: '1e39' is out of range for a float");
    expect_scene_error("-1e400 0 0 1 1 1\n", 1, 0,
                       "scene.txt:1: '-1e400' is out of range for a float");
}

TEST(SceneText, NonFiniteValuesAreRejectedByValidation) {
    expect_scene_error("0 0 0 1 1 1\n0 nan 0 1 1 1\n", 2, 1, "scene.txt:2: box 1: min.y is NaN",
                       ErrorCode::invalid_box);
    expect_scene_error("0 0 0 1 1 inf\n", 1, 0, "scene.txt:1: box 0: max.z is infinite (inf)",
                       ErrorCode::invalid_box);
    expect_scene_error("-infinity 0 0 1 1 1\n", 1, 0,
                       "scene.txt:1: box 0: min.x is infinite (-inf)", ErrorCode::invalid_box);
    expect_scene_error("0 0 0 NaN 1 1\n", 1, 0, "scene.txt:1: box 0: max.x is NaN",
                       ErrorCode::invalid_box);
}

TEST(SceneText, MinGreaterThanMaxNamesLineAndBox) {
    std::string text = "# boxes\n";
    for (int i = 0; i < 10; ++i) text += "0 0 0 1 1 1\n";
    text += "3 0 0 2 1 1\n";  // line 12, box 10
    expect_scene_error(text, 12, 10, "scene.txt:12: box 10: min.x (3) > max.x (2)",
                       ErrorCode::invalid_box);
    expect_scene_error("0 5 0 1 4.5 1\n", 1, 0, "scene.txt:1: box 0: min.y (5) > max.y (4.5)",
                       ErrorCode::invalid_box);
    expect_scene_error("0 0 -1 1 1 -2\n", 1, 0, "scene.txt:1: box 0: min.z (-1) > max.z (-2)",
                       ErrorCode::invalid_box);
}

TEST(SceneText, HostileBytesAreRejectedAndQuotedSafely) {
    const std::string nul("0 0 0 1 1 \0\n", 12);
    const auto a = parse_scene_text(nul);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().message, "<text>:1: '?' is not a number");

    const auto b = parse_scene_text("0 0 0 1 1 " + std::string(10000, '9') + "x\n");
    ASSERT_FALSE(b);
    EXPECT_LT(b.error().message.size(), 100u);

    const auto c = parse_scene_text("\xff\xfe\x01 0 0 1 1 1\n");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().message, "<text>:1: '" + std::string(3, '?') + "' is not a number");
}

TEST(SceneText, RandomInputNeverCrashesAndOnlyYieldsValidBoxes) {
    std::mt19937 rng(1);
    const std::string alphabet = "0123456789.,-+eE# \n\r\tnaifxNI";
    const std::string valid = format_scene_text(generate_scene("degenerate", 50)->boxes);
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        if (round % 3 == 0) {
            // Arbitrary bytes.
            text.resize(rng() % 200);
            for (char& ch : text) ch = static_cast<char>(rng());
        } else if (round % 3 == 1) {
            text.resize(rng() % 200);
            for (char& ch : text) ch = alphabet[rng() % alphabet.size()];
        } else {
            // A valid scene with a few bytes changed.
            text = valid;
            for (int k = 0; k < 3; ++k)
                text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
        }
        const auto scene = parse_scene_text(text);
        if (scene) {
            EXPECT_TRUE(validate_boxes(scene->boxes));
        } else {
            EXPECT_TRUE(scene.error().line.has_value());
            EXPECT_FALSE(scene.error().message.empty());
        }
    }
}

// Wavefront .obj.

TEST(Obj, EveryFaceFormGivesItsVertexBounds) {
    const std::vector<Box> expected = {{{0, 0, 0}, {1, 2, 0}},
                                       {{0, 0, 0}, {1, 0, 3}},
                                       {{0, 0, 0}, {1, 2, 3}},
                                       {{0, 0, 0}, {1, 2, 3}},
                                       {{0, 0, 3}, {0, 0, 3}}};
    expect_parsed(parse_obj("# a mesh\n"
                            "mtllib mesh.mtl\n"
                            "o thing\n"
                            "v 0 0 0\n"
                            "v 1 0 0\n"
                            "v 0 2 0\n"
                            "v 0 0 3 1.0\n"
                            "vt 0 0\n"
                            "vt 1 0\n"
                            "vn 0 0 1\n"
                            "g group\n"
                            "usemtl red\n"
                            "s off\n"
                            "f 1 2 3\n"
                            "f 1/1 2/2 4/1\n"
                            "f 2//1 3//1 4//1\n"
                            "f 1/1/1 2/2/1 3/1/1 4/2/1\n"
                            "l 1 2\n"
                            "p 3\n"
                            "f 4\n"),
                  expected);
}

TEST(Obj, NegativeIndicesAreRelativeToTheVerticesSoFar) {
    expect_parsed(parse_obj("v 0 0 0\nv 1 1 1\nv 2 2 2\n"
                            "f -3 -2\n"
                            "v 5 5 5\n"
                            "f -1 -2/1 -4//2\n"),
                  {{{0, 0, 0}, {1, 1, 1}}, {{0, 0, 0}, {5, 5, 5}}});
}

TEST(Obj, CrlfTabsAndComments) {
    expect_parsed(parse_obj("v 0 0 0\r\nv\t1\t1\t1 # corner\r\n\r\nf 1\t2\r\n"),
                  {{{0, 0, 0}, {1, 1, 1}}});
}

TEST(Obj, LeadingByteOrderMarkIsSkipped) {
    expect_parsed(parse_obj("\xEF\xBB\xBF"
                            "v 0 0 0\nv 1 1 1\nf 1 2\n"),
                  {{{0, 0, 0}, {1, 1, 1}}});
}

TEST(Obj, NoFacesIsAnEmptyScene) {
    const auto scene = parse_obj("v 0 0 0\nv 1 1 1\n");
    ASSERT_TRUE(scene);
    EXPECT_TRUE(scene->boxes.empty());
}

TEST(Obj, BadIndicesNameTheLine) {
    const std::string verts = "v 0 0 0\nv 1 1 1\nv 2 2 2\n";
    expect_obj_error(verts + "f 1 2 4\n", 4,
                     "mesh.obj:4: vertex index 4 is out of range (3 vertices so far)");
    expect_obj_error(verts + "f 1 2 -4\n", 4,
                     "mesh.obj:4: vertex index -4 is out of range (3 vertices so far)");
    expect_obj_error(verts + "\nf 0 1 2\n", 5,
                     "mesh.obj:5: vertex index 0 is invalid (indices start at 1)");
    expect_obj_error("f 1 2 3\nv 0 0 0\n", 1,
                     "mesh.obj:1: vertex index 1 is out of range (0 vertices so far)");
    expect_obj_error(verts + "f 1 99999999999999999999999\n", 4,
                     "mesh.obj:4: '99999999999999999999999' is not a face vertex (v, v/vt, v//vn "
                     "or v/vt/vn)");
    expect_obj_error(verts + "f 1 -9223372036854775808\n", 4,
                     "mesh.obj:4: vertex index -9223372036854775808 is out of range (3 vertices "
                     "so far)");
}

TEST(Obj, MalformedFacesNameTheLine) {
    const std::string verts = "v 0 0 0\nv 1 1 1\nv 2 2 2\n";
    expect_obj_error(verts + "f\n", 4, "mesh.obj:4: face has no vertices");
    expect_obj_error(verts + "f   # nothing\n", 4, "mesh.obj:4: face has no vertices");
    for (const char* corner :
         {"1/2/3/4", "a", "1/x", "/1", "1//x", "1.5", "+1", "1-", "/", "//", "1///", "1/2/x"}) {
        const std::string line = std::string("f 1 2 ") + corner;
        const auto scene = parse_obj(verts + line + "\n");
        ASSERT_FALSE(scene) << line;
        EXPECT_EQ(scene.error().line, 4u) << line;
    }
    const auto scene = parse_obj(verts + "f 1 2 3\nf 1 2 x\n");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().box, 1u);
}

TEST(Obj, MalformedVerticesNameTheLine) {
    expect_obj_error("v 1 2\n", 1, "mesh.obj:1: expected x y z after 'v', found 2 numbers");
    expect_obj_error("v 0 0 0\nv 1 2 abc\n", 2, "mesh.obj:2: 'abc' is not a number");
    expect_obj_error("v nan 0 0\n", 1, "mesh.obj:1: vertex coordinate 'nan' is not finite");
    expect_obj_error("v 0 -inf 0\n", 1, "mesh.obj:1: vertex coordinate '-inf' is not finite");
    expect_obj_error("v 0 0 1e39\n", 1, "mesh.obj:1: '1e39' is out of range for a float");
    expect_obj_error("v 0,0,0\n", 1, "mesh.obj:1: '0,0,0' is not a number");
}

TEST(Obj, UnknownStatementsAreErrors) {
    expect_obj_error("v 0 0 0\nbogus 1 2 3\n", 2, "mesh.obj:2: unknown statement 'bogus'");
    expect_obj_error("V 0 0 0\n", 1, "mesh.obj:1: unknown statement 'V'");
}

TEST(Obj, RandomInputNeverCrashes) {
    std::mt19937 rng(2);
    const std::string alphabet = "vf0123456789/-. \n\r#tn";
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        text.resize(rng() % 200);
        for (char& ch : text) {
            ch = round % 2 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
        }
        const auto scene = parse_obj(text);
        if (scene) {
            EXPECT_TRUE(validate_boxes(scene->boxes));
        } else {
            EXPECT_TRUE(scene.error().line.has_value());
        }
    }
}

// Rays text.

TEST(RaysText, ParsesRaysWithCommasCommentsCrlfAndInfiniteTmax) {
    const auto rays = parse_rays_text(
        "\xEF\xBB\xBF# two rays\r\n-1 0.5 0.5 1 0 0 10\r\n\r\n0.5,-1,0.5,0,1,0,inf # up\n");
    ASSERT_TRUE(rays) << rays.error().message;
    ASSERT_EQ(rays->size(), 2u);
    EXPECT_EQ((*rays)[0].origin, (Vec3{-1, 0.5f, 0.5f}));
    EXPECT_EQ((*rays)[0].dir, (Vec3{1, 0, 0}));
    EXPECT_EQ((*rays)[0].tmax, 10.0f);
    EXPECT_EQ((*rays)[1].dir, (Vec3{0, 1, 0}));
    EXPECT_TRUE(std::isinf((*rays)[1].tmax));
}

TEST(RaysText, ErrorsNameTheLineAndTheRay) {
    struct Case {
        const char* text;
        std::size_t line, ray;
        const char* message;
    };
    const Case cases[] = {
        {"0 0 0 1 0 0 1\n\n0 0 0 1 0 0\n", 3, 1,
         "r.txt:3: expected 7 numbers (ox oy oz dx dy dz tmax), found 6"},
        {"0 0 0 1 0 0 1 2\n", 1, 0,
         "r.txt:1: expected 7 numbers (ox oy oz dx dy dz tmax), found 8"},
        {"0 0 0 1 0 x 1\n", 1, 0, "r.txt:1: 'x' is not a number"},
        {"0 0 0 1e39 0 0 1\n", 1, 0, "r.txt:1: '1e39' is out of range for a float"},
        {"0 0 0 1 0 0 1\n0 inf 0 1 0 0 1\n", 2, 1,
         "r.txt:2: ray 1: origin and direction must be finite, not 'inf'"},
        {"0 0 0 1 0 0 nan\n", 1, 0, "r.txt:1: ray 0: tmax must not be NaN"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        const auto rays = parse_rays_text(c.text, "r.txt");
        ASSERT_FALSE(rays);
        EXPECT_EQ(rays.error().code, ErrorCode::parse_error);
        EXPECT_EQ(rays.error().line, c.line);
        EXPECT_EQ(rays.error().box, c.ray);
        EXPECT_EQ(rays.error().message, c.message);
    }
}

TEST(RaysText, FilesAreReadAndNonRegularFilesRefused) {
    const std::string path = temp_path("broadphase_rays.txt");
    write_file(path, "0 0 0 0 0 1 5\n");
    const auto rays = read_rays_file(path);
    ASSERT_TRUE(rays) << rays.error().message;
    EXPECT_EQ(rays->size(), 1u);
    std::filesystem::remove(path);
    const auto missing = read_rays_file(path);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ErrorCode::io_error);
    EXPECT_NE(missing.error().message.find(path), std::string::npos);
    const auto directory = read_rays_file(::testing::TempDir());
    ASSERT_FALSE(directory);
    EXPECT_NE(directory.error().message.find("not a regular file"), std::string::npos);
}

// Files.

TEST(Files, MissingFileIsAnIoErrorNamingThePath) {
    const std::string path = temp_path("broadphase_no_such_file.txt");
    const auto scene = read_scene_file(path);
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::io_error);
    EXPECT_NE(scene.error().message.find(path), std::string::npos);

    const auto via_spec = load_scene(path);
    ASSERT_FALSE(via_spec);
    EXPECT_EQ(via_spec.error().code, ErrorCode::io_error);
}

TEST(Files, DirectoryIsAnIoError) {
    const auto scene = read_scene_file(::testing::TempDir());
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::io_error);
    EXPECT_NE(scene.error().message.find("a directory, not a regular file"), std::string::npos)
        << scene.error().message;
}

// A device has no end to read to (/dev/zero) or none at all; a FIFO blocks on open. Each is
// refused by its kind before it is opened, naming the path.
TEST(Files, NonRegularFilesAreRefusedNamingThem) {
    const auto zero = read_scene_file("/dev/zero");
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().code, ErrorCode::io_error);
    EXPECT_EQ(zero.error().message,
              "cannot read '/dev/zero': a character device, not a regular file");

    const std::string fifo = temp_path("broadphase_fifo.txt");
    std::filesystem::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto from_fifo = load_scene(fifo);  // would block forever if it were opened
    std::filesystem::remove(fifo);
    ASSERT_FALSE(from_fifo);
    EXPECT_EQ(from_fifo.error().code, ErrorCode::io_error);
    EXPECT_EQ(from_fifo.error().message, "cannot read '" + fifo + "': a FIFO, not a regular file");
}

TEST(Files, ObjIsChosenByExtension) {
    const std::string text = "v 0 0 0\nv 1 2 3\nf 1 2\n";
    for (const char* name : {"broadphase_mesh.obj", "broadphase_mesh.OBJ"}) {
        const std::string path = temp_path(name);
        write_file(path, text);
        expect_parsed(load_scene(path), {{{0, 0, 0}, {1, 2, 3}}});
        std::filesystem::remove(path);
    }
}

TEST(Files, ErrorsInFilesNameThePath) {
    const std::string path = temp_path("broadphase_bad.txt");
    write_file(path, "0 0 0 1 1 1\n0 0 0 1 1\n");
    const auto scene = load_scene(path);
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().line, 2u);
    EXPECT_EQ(scene.error().message.rfind(path + ":2: ", 0), 0u);
    std::filesystem::remove(path);
}

TEST(Files, WriteToAMissingDirectoryIsAnIoError) {
    const std::string path = temp_path("broadphase_no_such_dir/scene.txt");
    const Status s = write_scene_file(path, std::vector<Box>{{{0, 0, 0}, {1, 1, 1}}});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::io_error);
    EXPECT_NE(s.error().message.find(path), std::string::npos);
}

}  // namespace
}  // namespace broadphase
