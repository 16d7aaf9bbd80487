// Top-down debug view of a culled frame, rasterised on the CPU with the tool's Image: an
// orthographic projection onto the x-z plane (looking down -y), boxes as filled rectangles, the
// camera frustum as the projection of its 12 edges.
#include <algorithm>
#include <cmath>

#include "renderer.hpp"
#include "vec_math.hpp"

namespace broadphase::renderer {

tool::Image draw_debug_view(std::span<const Box> boxes, std::span<const std::uint32_t> drawn_ids,
                            const Camera& camera, int width, int height,
                            std::span<const std::uint32_t> occluded_ids) {
    tool::Image image(width, height, {250, 250, 250});
    // The frustum's 8 corners: near then far, each (-x -y, +x -y, +x +y, -x +y) in view space.
    Vec3 forward = normalize(sub(camera.target, camera.eye));
    Vec3 right = normalize(cross(forward, camera.up));
    Vec3 up = cross(right, forward);
    float tan_half = std::tan(camera.fovy_deg * 3.14159265358979f / 360.0f);
    Vec3 corners[8];
    for (int plane = 0; plane < 2; ++plane) {
        float d = plane == 0 ? camera.near : camera.far;
        float hh = d * tan_half, hw = hh * camera.aspect;
        Vec3 centre = add_scaled(camera.eye, forward, d);
        const float sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
        for (int k = 0; k < 4; ++k)
            corners[plane * 4 + k] =
                add_scaled(add_scaled(centre, right, sx[k] * hw), up, sy[k] * hh);
    }
    // Window: the scene bounds and the eye, with a margin.
    float lo_x = camera.eye.x, hi_x = camera.eye.x, lo_z = camera.eye.z, hi_z = camera.eye.z;
    for (const Box& b : boxes) {
        lo_x = std::min(lo_x, b.min.x), hi_x = std::max(hi_x, b.max.x);
        lo_z = std::min(lo_z, b.min.z), hi_z = std::max(hi_z, b.max.z);
    }
    float span = std::max({hi_x - lo_x, hi_z - lo_z, 1e-6f}) * 1.1f;
    float cx = 0.5f * (lo_x + hi_x), cz = 0.5f * (lo_z + hi_z);
    float scale = float(std::min(width, height)) / span;
    auto px = [&](float x) {
        return int(std::floor((x - cx) * scale + static_cast<float>(width) * 0.5f));
    };
    auto pz = [&](float z) {
        return int(std::floor((z - cz) * scale + static_cast<float>(height) * 0.5f));
    };
    auto clamp = [](int v, int limit) { return std::clamp(v, -4 * limit, 5 * limit); };

    // 0: frustum-culled (grey), 1: occlusion-culled (orange), 2: drawn (blue).
    std::vector<std::uint8_t> state(boxes.size(), 0);
    for (std::uint32_t id : occluded_ids)
        if (id < boxes.size()) state[id] = 1;
    for (std::uint32_t id : drawn_ids)
        if (id < boxes.size()) state[id] = 2;
    const tool::Rgb colors[3] = {{190, 190, 190}, {245, 150, 40}, {40, 90, 220}};
    // Largest footprints first (a ground slab under everything), then by state: what stands on
    // a large box stays visible.
    std::vector<std::uint32_t> order(boxes.size());
    std::vector<float> area(boxes.size());
    for (std::uint32_t i = 0; i < boxes.size(); ++i) {
        order[i] = i;
        area[i] = (boxes[i].max.x - boxes[i].min.x) * (boxes[i].max.z - boxes[i].min.z);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return area[a] != area[b] ? area[a] > area[b] : state[a] < state[b];
    });
    for (std::uint32_t i : order) {
        int x0 = clamp(px(boxes[i].min.x), width), x1 = clamp(px(boxes[i].max.x), width);
        int z0 = clamp(pz(boxes[i].min.z), height), z1 = clamp(pz(boxes[i].max.z), height);
        if (float(x1 - x0) * float(z1 - z0) > 0.1f * float(width) * float(height)) {
            // A box as large as the view (a ground): its outline only.
            const tool::Rgb c = colors[state[i]];
            image.line(x0, z0, x1, z0, c, 2), image.line(x1, z0, x1, z1, c, 2);
            image.line(x1, z1, x0, z1, c, 2), image.line(x0, z1, x0, z0, c, 2);
            continue;
        }
        image.rect(std::max(x0, -1), std::max(z0, -1), std::min(x1, width), std::min(z1, height),
                   colors[state[i]]);
    }
    const tool::Rgb red{220, 30, 30};
    const int edges[12][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6},
                              {6, 7}, {7, 4}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (const auto& e : edges)
        image.line(clamp(px(corners[e[0]].x), width), clamp(pz(corners[e[0]].z), height),
                   clamp(px(corners[e[1]].x), width), clamp(pz(corners[e[1]].z), height), red, 2);
    int ex = px(camera.eye.x), ez = pz(camera.eye.z);
    image.rect(ex - 4, ez - 4, ex + 4, ez + 4, {0, 0, 0});
    image.rect(ex - 2, ez - 2, ex + 2, ez + 2, {255, 255, 255});
    image.text(8, 8,
               "top view (x right, z down): drawn " + std::to_string(drawn_ids.size()) + " of " +
                   std::to_string(boxes.size()) +
                   (occluded_ids.empty() ? std::string()
                                         : ", occluded " + std::to_string(occluded_ids.size())),
               {0, 0, 0});
    image.text(8, 20, "blue drawn, grey frustum-culled, orange occlusion-culled", {0, 0, 0});
    return image;
}

}  // namespace broadphase::renderer
