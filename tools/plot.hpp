// Minimal raster output for the tool: an RGB image, lines and 5x7 bitmap text, a PNG writer
// (libpng, compressed), and a log-log line plot of series (time against N, the form of the
// benchmark figures in the broadphase articles this library follows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::tool {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
};

/// An RGB8 image, row-major, origin top-left.
struct Image {
    int width = 0, height = 0;
    std::vector<Rgb> pixels;

    Image(int w, int h, Rgb fill = {255, 255, 255})
        : width(w), height(h), pixels(std::size_t(w) * h, fill) {}
    void set(int x, int y, Rgb c) {
        if (x >= 0 && y >= 0 && x < width && y < height) pixels[std::size_t(y) * width + x] = c;
    }
    /// Line from (x0, y0) to (x1, y1), `thickness` pixels wide (Bresenham, squared brush).
    void line(int x0, int y0, int x1, int y1, Rgb c, int thickness = 1);
    void rect(int x0, int y0, int x1, int y1, Rgb c);  ///< filled, inclusive
    /// Text in a 5x7 font scaled by `scale`; characters outside the font draw as boxes.
    void text(int x, int y, const std::string& s, Rgb c, int scale = 1);
    static int text_width(const std::string& s, int scale = 1) { return int(s.size()) * 6 * scale; }
};

/// Encodes the image as compressed PNG bytes (empty if libpng fails).
std::vector<std::uint8_t> encode_png(const Image& image);
/// Writes the image as a PNG file; io_error naming the path on failure.
Status write_png(const std::string& path, const Image& image);

/// One line of a plot: (x, y) points, x and y > 0 (log-log axes).
struct Series {
    std::string name;
    std::vector<double> x, y;
};

/// Draws series on log-log axes with a title, axis labels and a legend.
Image plot_loglog(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, int width = 1100, int height = 700);

}  // namespace broadphase::tool
