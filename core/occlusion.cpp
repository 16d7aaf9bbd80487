// Hierarchical-Z occlusion (Haar & Aaltonen, "GPU-Driven Rendering Pipelines", SIGGRAPH 2015):
// the max-depth pyramid, the conservative box test and the depth file format, exactly as
// include/broadphase/occlusion.hpp states them; the CPU reference a GPU kernel is compared with.
#include "broadphase/occlusion.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string_view>

#include "file_io.hpp"

namespace broadphase {
namespace {

Error bad(const std::string& message) {
    return Error{ErrorCode::invalid_argument, message};
}

Error parse_error_at(std::string_view source, std::size_t line, const std::string& what) {
    return {ErrorCode::parse_error, std::string(source) + ":" + std::to_string(line) + ": " + what,
            std::nullopt, line};
}

std::string pixel_name(std::uint32_t x, std::uint32_t y) {
    return "pixel (" + std::to_string(x) + ", " + std::to_string(y) + ")";
}

std::string quoted(std::string_view token) {
    std::string s;
    s.reserve(token.size() + 2);
    s += '`';
    s += token;
    s += '`';
    return s;
}

bool depth_in_range(float d) {
    return std::isfinite(d) && d >= 0.0f && d <= 1.0f;
}

constexpr float kRelativeMargin = 0x1p-19f, kAbsoluteMargin = 0x1p-20f;

// A quotient below the normal range becomes a zero of its sign (step 3 of the rule): GPUs may
// flush subnormals, so none may reach a comparison.
float flush_subnormal(float q) {
    return std::fabs(q) < std::numeric_limits<float>::min() ? std::copysign(0.0f, q) : q;
}

// Step 3's margin of a quotient q = c / w: (a + |q| * aw) * (1 / w) * 2^-19 + 2^-20, where a
// and aw are the sums of the absolute terms of c and w, each operation rounded on its own.
float rounding_margin(float a, float q, float aw, float inv) {
    const float scaled = std::fabs(q) * aw;
    const float sum = a + scaled;
    const float per_w = sum * inv;
    const float relative = per_w * kRelativeMargin;
    return relative + kAbsoluteMargin;
}

std::uint32_t texel_of(float n, std::uint32_t size) {
    const float u = (n * 0.5f + 0.5f) * float(size);
    return std::min(static_cast<std::uint32_t>(std::floor(u)), size - 1);
}

}  // namespace

std::vector<DepthLevel> depth_pyramid_levels(std::uint32_t width, std::uint32_t height) {
    std::vector<DepthLevel> levels;
    if (width < 1 || height < 1 || width > kMaxDepthImageSize || height > kMaxDepthImageSize)
        return levels;
    std::uint32_t offset = 0, w = width, h = height;
    for (;;) {
        levels.push_back({offset, w, h});
        offset += w * h;
        if (w == 1 && h == 1) break;
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    return levels;
}

Result<DepthPyramid> DepthPyramid::build(std::uint32_t width, std::uint32_t height,
                                         std::span<const float> depth) {
    if (width < 1 || height < 1 || width > kMaxDepthImageSize || height > kMaxDepthImageSize) {
        return bad("depth image size " + std::to_string(width) + " x " + std::to_string(height) +
                   " is outside 1.." + std::to_string(kMaxDepthImageSize));
    }
    if (depth.size() != std::size_t(width) * height) {
        return bad("depth image of " + std::to_string(width) + " x " + std::to_string(height) +
                   " needs " + std::to_string(std::size_t(width) * height) + " depths, got " +
                   std::to_string(depth.size()));
    }
    for (std::uint32_t y = 0; y < height; ++y) {
        for (std::uint32_t x = 0; x < width; ++x) {
            const float d = depth[std::size_t(y) * width + x];
            if (!depth_in_range(d)) {
                return bad("depth at " + pixel_name(x, y) + " is " + std::to_string(d) +
                           ", not a finite depth in [0, 1]");
            }
        }
    }
    try {
        DepthPyramid p;
        p.levels_ = depth_pyramid_levels(width, height);
        p.texels_.resize(p.levels_.back().offset + 1);
        std::copy(depth.begin(), depth.end(), p.texels_.begin());
        for (std::size_t k = 1; k < p.levels_.size(); ++k) {
            const DepthLevel& child = p.levels_[k - 1];
            const DepthLevel& level = p.levels_[k];
            for (std::uint32_t y = 0; y < level.height; ++y) {
                for (std::uint32_t x = 0; x < level.width; ++x) {
                    const std::uint32_t cx1 = std::min(2 * x + 1, child.width - 1);
                    const std::uint32_t cy1 = std::min(2 * y + 1, child.height - 1);
                    const float m =
                        std::max(std::max(p.texel(k - 1, 2 * x, 2 * y), p.texel(k - 1, cx1, 2 * y)),
                                 std::max(p.texel(k - 1, 2 * x, cy1), p.texel(k - 1, cx1, cy1)));
                    p.texels_[level.offset + std::size_t(y) * level.width + x] = m;
                }
            }
        }
        return p;
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "out of memory building a depth pyramid"};
    }
}

bool occluded(const DepthPyramid& pyramid, const std::array<float, 16>& m, const Box& b) {
    float nx_lo = 0, nx_hi = 0, ny_lo = 0, ny_hi = 0, dmin = 0;
    for (int i = 0; i < 8; ++i) {
        const float px = (i & 1) ? b.max.x : b.min.x;
        const float py = (i & 2) ? b.max.y : b.min.y;
        const float pz = (i & 4) ? b.max.z : b.min.z;
        float clip[4], size[4];
        for (int r = 0; r < 4; ++r) {
            // Separate statements: no contraction into fused multiply-adds.
            float s = m[r] * px;
            const float t = m[4 + r] * py;
            s = s + t;
            const float u = m[8 + r] * pz;
            s = s + u;
            clip[r] = s + m[12 + r];
            float a = std::fabs(m[r] * px);
            const float at = std::fabs(m[4 + r] * py);
            a = a + at;
            const float au = std::fabs(m[8 + r] * pz);
            a = a + au;
            size[r] = a + std::fabs(m[12 + r]);
            if (!std::isfinite(clip[r]) || !std::isfinite(size[r])) return false;
        }
        if (!(clip[3] > 0.0f)) return false;
        const float inv = flush_subnormal(1.0f / clip[3]);
        const float nx = flush_subnormal(clip[0] / clip[3]);
        const float ny = flush_subnormal(clip[1] / clip[3]);
        const float d = flush_subnormal(clip[2] / clip[3]);
        const float ex = rounding_margin(size[0], nx, size[3], inv);
        const float ey = rounding_margin(size[1], ny, size[3], inv);
        const float ed = rounding_margin(size[2], d, size[3], inv);
        if (!std::isfinite(ex) || !std::isfinite(ey) || !std::isfinite(ed)) return false;
        const float x_lo = nx - ex, x_hi = nx + ex, y_lo = ny - ey, y_hi = ny + ey;
        const float d_lo = d - ed;
        if (i == 0) {
            nx_lo = x_lo, nx_hi = x_hi;
            ny_lo = y_lo, ny_hi = y_hi;
            dmin = d_lo;
        } else {
            nx_lo = std::min(nx_lo, x_lo), nx_hi = std::max(nx_hi, x_hi);
            ny_lo = std::min(ny_lo, y_lo), ny_hi = std::max(ny_hi, y_hi);
            dmin = std::min(dmin, d_lo);
        }
    }
    const auto clamp1 = [](float v) { return std::clamp(v, -1.0f, 1.0f); };
    const std::uint32_t w = pyramid.width(), h = pyramid.height();
    const std::uint32_t x0 = texel_of(clamp1(nx_lo), w), x1 = texel_of(clamp1(nx_hi), w);
    const std::uint32_t y0 = texel_of(clamp1(ny_lo), h), y1 = texel_of(clamp1(ny_hi), h);
    std::size_t k = 0;
    while (k + 1 < pyramid.level_count() &&
           ((x1 >> k) - (x0 >> k) > 1 || (y1 >> k) - (y0 >> k) > 1)) {
        ++k;
    }
    float dmax = 0;
    for (std::uint32_t y = y0 >> k; y <= y1 >> k; ++y) {
        for (std::uint32_t x = x0 >> k; x <= x1 >> k; ++x) {
            dmax = std::max(dmax, pyramid.texel(k, x, y));
        }
    }
    return dmin > dmax;
}

Result<DepthPyramid> parse_depth_text(std::string_view text, std::string_view source) {
    constexpr std::string_view kSpace = " \t\r\v\f";
    std::size_t line = 0;
    std::uint32_t width = 0, height = 0;
    std::vector<float> depth;
    std::size_t count = 0;
    bool header = false;
    try {
        while (!text.empty() || !header) {
            const std::size_t end = text.find('\n');
            std::string_view rest = text.substr(0, end);
            text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
            ++line;
            std::vector<std::string_view> tokens;
            for (;;) {
                const std::size_t begin = rest.find_first_not_of(kSpace);
                if (begin == std::string_view::npos) break;
                rest.remove_prefix(begin);
                const std::size_t stop = std::min(rest.find_first_of(kSpace), rest.size());
                tokens.push_back(rest.substr(0, stop));
                rest.remove_prefix(stop);
            }
            if (!header) {
                header = true;
                const auto size_of = [](std::string_view s, std::uint32_t& v) {
                    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
                    return r.ec == std::errc() && r.ptr == s.data() + s.size() && v >= 1 &&
                           v <= kMaxDepthImageSize;
                };
                if (tokens.size() != 3 || tokens[0] != "broadphase-depth" ||
                    !size_of(tokens[1], width) || !size_of(tokens[2], height)) {
                    return parse_error_at(source, line,
                                          "expected the header `broadphase-depth W H` with "
                                          "1 <= W, H <= " +
                                              std::to_string(kMaxDepthImageSize));
                }
                count = std::size_t(width) * height;
                depth.reserve(count);
                continue;
            }
            for (std::string_view token : tokens) {
                if (depth.size() == count) {
                    return parse_error_at(source, line,
                                          "more than the " + std::to_string(count) +
                                              " depths of a " + std::to_string(width) + " x " +
                                              std::to_string(height) + " image");
                }
                const std::uint32_t x = std::uint32_t(depth.size() % width);
                const std::uint32_t y = std::uint32_t(depth.size() / width);
                float d = 0;
                const auto r = std::from_chars(token.data(), token.data() + token.size(), d);
                if (r.ec != std::errc() || r.ptr != token.data() + token.size()) {
                    return parse_error_at(
                        source, line,
                        quoted(token) + " at " + pixel_name(x, y) + " is not a number");
                }
                if (!depth_in_range(d)) {
                    return parse_error_at(source, line,
                                          "depth " + quoted(token) + " at " + pixel_name(x, y) +
                                              " is not a finite depth in [0, 1]");
                }
                depth.push_back(d);
            }
        }
        if (depth.size() != count) {
            return parse_error_at(source, line,
                                  "the file ends after " + std::to_string(depth.size()) +
                                      " of the " + std::to_string(count) + " depths of a " +
                                      std::to_string(width) + " x " + std::to_string(height) +
                                      " image");
        }
        return DepthPyramid::build(width, height, depth);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "out of memory reading " + std::string(source)};
    }
}

Result<DepthPyramid> read_depth_file(const std::string& path) {
    try {
        Result<std::string> text = file_io::read_regular_file(path);
        if (!text) return text.error();
        return parse_depth_text(text.value(), path);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "out of memory reading " + path};
    }
}

Status write_depth_file(const std::string& path, const DepthPyramid& pyramid) {
    try {
        std::string text = "broadphase-depth " + std::to_string(pyramid.width()) + " " +
                           std::to_string(pyramid.height()) + "\n";
        const std::span<const float> image = pyramid.image();
        char number[32];
        for (std::size_t i = 0; i < image.size(); ++i) {
            const auto r = std::to_chars(number, number + sizeof number, image[i]);
            text.append(number, r.ptr);
            text += (i + 1) % pyramid.width() == 0 ? '\n' : ' ';
        }
        return file_io::write_text_file(path, text);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "out of memory writing " + path};
    }
}

}  // namespace broadphase
