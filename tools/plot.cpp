// PNG writer, rasteriser and log-log plot for the tool (see plot.hpp).
#include "plot.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <png.h>

namespace broadphase::tool {

namespace {

// Classic 5x7 font, ASCII 32..126, five column bytes per glyph, bit 0 at the top.
constexpr std::uint8_t kFont[95][5] = {
    {0x00, 0x00, 0x00, 0x00, 0x00}, {0x00, 0x00, 0x5F, 0x00, 0x00}, {0x00, 0x07, 0x00, 0x07, 0x00},
    {0x14, 0x7F, 0x14, 0x7F, 0x14}, {0x24, 0x2A, 0x7F, 0x2A, 0x12}, {0x23, 0x13, 0x08, 0x64, 0x62},
    {0x36, 0x49, 0x55, 0x22, 0x50}, {0x00, 0x05, 0x03, 0x00, 0x00}, {0x00, 0x1C, 0x22, 0x41, 0x00},
    {0x00, 0x41, 0x22, 0x1C, 0x00}, {0x08, 0x2A, 0x1C, 0x2A, 0x08}, {0x08, 0x08, 0x3E, 0x08, 0x08},
    {0x00, 0x50, 0x30, 0x00, 0x00}, {0x08, 0x08, 0x08, 0x08, 0x08}, {0x00, 0x60, 0x60, 0x00, 0x00},
    {0x20, 0x10, 0x08, 0x04, 0x02}, {0x3E, 0x51, 0x49, 0x45, 0x3E}, {0x00, 0x42, 0x7F, 0x40, 0x00},
    {0x42, 0x61, 0x51, 0x49, 0x46}, {0x21, 0x41, 0x45, 0x4B, 0x31}, {0x18, 0x14, 0x12, 0x7F, 0x10},
    {0x27, 0x45, 0x45, 0x45, 0x39}, {0x3C, 0x4A, 0x49, 0x49, 0x30}, {0x01, 0x71, 0x09, 0x05, 0x03},
    {0x36, 0x49, 0x49, 0x49, 0x36}, {0x06, 0x49, 0x49, 0x29, 0x1E}, {0x00, 0x36, 0x36, 0x00, 0x00},
    {0x00, 0x56, 0x36, 0x00, 0x00}, {0x00, 0x08, 0x14, 0x22, 0x41}, {0x14, 0x14, 0x14, 0x14, 0x14},
    {0x41, 0x22, 0x14, 0x08, 0x00}, {0x02, 0x01, 0x51, 0x09, 0x06}, {0x32, 0x49, 0x79, 0x41, 0x3E},
    {0x7E, 0x11, 0x11, 0x11, 0x7E}, {0x7F, 0x49, 0x49, 0x49, 0x36}, {0x3E, 0x41, 0x41, 0x41, 0x22},
    {0x7F, 0x41, 0x41, 0x22, 0x1C}, {0x7F, 0x49, 0x49, 0x49, 0x41}, {0x7F, 0x09, 0x09, 0x01, 0x01},
    {0x3E, 0x41, 0x41, 0x51, 0x32}, {0x7F, 0x08, 0x08, 0x08, 0x7F}, {0x00, 0x41, 0x7F, 0x41, 0x00},
    {0x20, 0x40, 0x41, 0x3F, 0x01}, {0x7F, 0x08, 0x14, 0x22, 0x41}, {0x7F, 0x40, 0x40, 0x40, 0x40},
    {0x7F, 0x02, 0x04, 0x02, 0x7F}, {0x7F, 0x04, 0x08, 0x10, 0x7F}, {0x3E, 0x41, 0x41, 0x41, 0x3E},
    {0x7F, 0x09, 0x09, 0x09, 0x06}, {0x3E, 0x41, 0x51, 0x21, 0x5E}, {0x7F, 0x09, 0x19, 0x29, 0x46},
    {0x46, 0x49, 0x49, 0x49, 0x31}, {0x01, 0x01, 0x7F, 0x01, 0x01}, {0x3F, 0x40, 0x40, 0x40, 0x3F},
    {0x1F, 0x20, 0x40, 0x20, 0x1F}, {0x7F, 0x20, 0x18, 0x20, 0x7F}, {0x63, 0x14, 0x08, 0x14, 0x63},
    {0x03, 0x04, 0x78, 0x04, 0x03}, {0x61, 0x51, 0x49, 0x45, 0x43}, {0x00, 0x00, 0x7F, 0x41, 0x41},
    {0x02, 0x04, 0x08, 0x10, 0x20}, {0x41, 0x41, 0x7F, 0x00, 0x00}, {0x04, 0x02, 0x01, 0x02, 0x04},
    {0x40, 0x40, 0x40, 0x40, 0x40}, {0x00, 0x01, 0x02, 0x04, 0x00}, {0x20, 0x54, 0x54, 0x54, 0x78},
    {0x7F, 0x48, 0x44, 0x44, 0x38}, {0x38, 0x44, 0x44, 0x44, 0x20}, {0x38, 0x44, 0x44, 0x48, 0x7F},
    {0x38, 0x54, 0x54, 0x54, 0x18}, {0x08, 0x7E, 0x09, 0x01, 0x02}, {0x08, 0x14, 0x54, 0x54, 0x3C},
    {0x7F, 0x08, 0x04, 0x04, 0x78}, {0x00, 0x44, 0x7D, 0x40, 0x00}, {0x20, 0x40, 0x44, 0x3D, 0x00},
    {0x00, 0x7F, 0x10, 0x28, 0x44}, {0x00, 0x41, 0x7F, 0x40, 0x00}, {0x7C, 0x04, 0x18, 0x04, 0x78},
    {0x7C, 0x08, 0x04, 0x04, 0x78}, {0x38, 0x44, 0x44, 0x44, 0x38}, {0x7C, 0x14, 0x14, 0x14, 0x08},
    {0x08, 0x14, 0x14, 0x18, 0x7C}, {0x7C, 0x08, 0x04, 0x04, 0x08}, {0x48, 0x54, 0x54, 0x54, 0x20},
    {0x04, 0x3F, 0x44, 0x40, 0x20}, {0x3C, 0x40, 0x40, 0x20, 0x7C}, {0x1C, 0x20, 0x40, 0x20, 0x1C},
    {0x3C, 0x40, 0x30, 0x40, 0x3C}, {0x44, 0x28, 0x10, 0x28, 0x44}, {0x0C, 0x50, 0x50, 0x50, 0x3C},
    {0x44, 0x64, 0x54, 0x4C, 0x44}, {0x00, 0x08, 0x36, 0x41, 0x00}, {0x00, 0x00, 0x7F, 0x00, 0x00},
    {0x00, 0x41, 0x36, 0x08, 0x00}, {0x08, 0x08, 0x2A, 0x1C, 0x08},
};

const Rgb kPalette[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                        {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                        {188, 189, 34},  {23, 190, 207}, {0, 0, 0},       {128, 0, 0},
                        {0, 0, 128},     {0, 128, 128},  {128, 128, 0},   {255, 0, 255}};

std::string format_tick(double v) {
    char buf[32];
    if (v >= 1e4 || v < 1e-3)
        std::snprintf(buf, sizeof buf, "1e%d", int(std::lround(std::log10(v))));
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

void Image::line(int x0, int y0, int x1, int y1, Rgb c, int thickness) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    int r = thickness / 2;
    while (true) {
        for (int oy = -r; oy <= r; ++oy)
            for (int ox = -r; ox <= r; ++ox) set(x0 + ox, y0 + oy, c);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

void Image::rect(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
        for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) set(x, y, c);
}

void Image::text(int x, int y, const std::string& s, Rgb c, int scale) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        int ch = static_cast<unsigned char>(s[i]);
        const std::uint8_t* glyph = (ch >= 32 && ch < 127) ? kFont[ch - 32] : nullptr;
        for (int col = 0; col < 5; ++col)
            for (int row = 0; row < 7; ++row) {
                bool on = glyph ? (glyph[col] >> row) & 1
                                : (row == 0 || row == 6 || col == 0 || col == 4);
                if (on)
                    rect(x + (int(i) * 6 + col) * scale, y + row * scale,
                         x + (int(i) * 6 + col) * scale + scale - 1, y + row * scale + scale - 1,
                         c);
            }
    }
}

std::vector<std::uint8_t> encode_png(const Image& image) {
    // libpng with zlib's strongest level and per-row adaptive filters: plots are mostly flat
    // colour, so they shrink from ~3 bytes per pixel to tens of kilobytes.
    std::vector<std::uint8_t> out;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (info == nullptr) {
        png_destroy_write_struct(&png, nullptr);
        return {};
    }
    // libpng reports errors by longjmp; nothing with a destructor is created past this point
    // except `out`, whose storage outlives the jump (it is declared before setjmp).
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return {};
    }
    png_set_write_fn(
        png, &out,
        [](png_structp p, png_bytep data, png_size_t size) {
            auto* bytes = static_cast<std::vector<std::uint8_t>*>(png_get_io_ptr(p));
            bytes->insert(bytes->end(), data, data + size);
        },
        nullptr);
    png_set_IHDR(png, info, static_cast<png_uint_32>(image.width),
                 static_cast<png_uint_32>(image.height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 9);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
    png_write_info(png, info);
    static_assert(sizeof(Rgb) == 3, "rows are written straight from Image::pixels");
    for (int y = 0; y < image.height; ++y) {
        const Rgb* row = image.pixels.data() + std::size_t(y) * std::size_t(image.width);
        png_write_row(png, reinterpret_cast<png_const_bytep>(row));
    }
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return out;
}

Status write_png(const std::string& path, const Image& image) {
    std::vector<std::uint8_t> bytes = encode_png(image);
    if (bytes.empty())
        return Error{ErrorCode::io_error, "cannot encode '" + path + "' as PNG (libpng failed)"};
    // Checked to the close: a full disk shows only when the last buffer is flushed.
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr)
        return Error{ErrorCode::io_error, "cannot write '" + path + "': " + std::strerror(errno)};
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    const int write_errno = errno;
    errno = 0;
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed)
        return Error{ErrorCode::io_error,
                     "cannot write '" + path +
                         "': " + std::strerror(!written ? write_errno : (errno ? errno : EIO))};
    return {};
}

Image plot_loglog(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, int width, int height) {
    Image img(width, height);
    const Rgb black{0, 0, 0}, grid{225, 225, 225};
    const int left = 90, right = width - 260, top = 50, bottom = height - 70;
    double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
    for (const Series& s : series)
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (s.x[i] <= 0 || s.y[i] <= 0) continue;
            x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
        }
    if (x_hi <= 0) x_lo = 1, x_hi = 10;
    if (y_hi <= 0) y_lo = 1, y_hi = 10;
    // Whole decades around the data.
    double lx0 = std::floor(std::log10(x_lo)), lx1 = std::max(std::ceil(std::log10(x_hi)), lx0 + 1);
    double ly0 = std::floor(std::log10(y_lo)), ly1 = std::max(std::ceil(std::log10(y_hi)), ly0 + 1);
    auto px = [&](double x) {
        return left + int(std::lround((std::log10(x) - lx0) / (lx1 - lx0) * (right - left)));
    };
    auto py = [&](double y) {
        return bottom - int(std::lround((std::log10(y) - ly0) / (ly1 - ly0) * (bottom - top)));
    };

    for (double d = lx0; d <= lx1; ++d) {
        int x = px(std::pow(10.0, d));
        img.line(x, top, x, bottom, grid);
        std::string t = format_tick(std::pow(10.0, d));
        img.text(x - Image::text_width(t) / 2, bottom + 8, t, black);
    }
    for (double d = ly0; d <= ly1; ++d) {
        int y = py(std::pow(10.0, d));
        img.line(left, y, right, y, grid);
        std::string t = format_tick(std::pow(10.0, d));
        img.text(left - 8 - Image::text_width(t), y - 3, t, black);
    }
    img.line(left, bottom, right, bottom, black);
    img.line(left, top, left, bottom, black);
    img.text((left + right - Image::text_width(title, 2)) / 2, 14, title, black, 2);
    img.text((left + right - Image::text_width(x_label)) / 2, bottom + 30, x_label, black);
    img.text(8, top - 20, y_label, black);

    for (std::size_t k = 0; k < series.size(); ++k) {
        const Series& s = series[k];
        Rgb c = kPalette[k % std::size(kPalette)];
        int prev_x = 0, prev_y = 0;
        bool have_prev = false;
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (s.x[i] <= 0 || s.y[i] <= 0) continue;
            int x = px(s.x[i]), y = py(s.y[i]);
            if (have_prev) img.line(prev_x, prev_y, x, y, c, 2);
            img.rect(x - 2, y - 2, x + 2, y + 2, c);
            prev_x = x, prev_y = y, have_prev = true;
        }
        int ly = top + 10 + int(k) * 18;
        img.line(right + 20, ly + 3, right + 45, ly + 3, c, 3);
        img.text(right + 52, ly, s.name, black);
    }
    return img;
}

}  // namespace broadphase::tool
