"""Exploring broadphase from Python, notebook-style: run it whole (python3 explore.py --out
explore.png, MPLBACKEND=Agg without a display) or cell by cell (# %% cells, as in VS Code,
Spyder or Jupytext). It times a few methods against N, checks that they agree, and draws a
scene seen from above with a camera's visible boxes and a ray's closest hit."""

# %% Imports and options
import argparse
import time

import matplotlib.pyplot as plt
import numpy as np

import broadphase as bp

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="explore.png", help="PNG to write")
parser.add_argument("--max-n", type=int, default=20000, help="largest scene of the timing")
args, _ = parser.parse_known_args()  # a notebook kernel passes its own arguments

print(f"broadphase {bp.__version__}; methods: {', '.join(bp.method_names())}")
if bp.has_gpu():
    print("Vulkan devices:", [d["name"] for d in bp.devices()])

# %% Pairs and time against N: every method finds the same sorted pairs
methods = ["sweep_and_prune", "uniform_grid", "dynamic_aabb_tree", "lbvh"]
if bp.has_gpu():
    methods.append("gpu_lbvh")
    bp.find_pairs(bp.generate_scene("uniform", 10), "gpu_lbvh")  # makes the GPU context once
sizes = [n for n in (1000, 2000, 5000, 10000, 20000, 50000) if n <= args.max_n]
seconds = {m: [] for m in methods}
pairs_per_box = {}
for scene in ("uniform", "clustered"):
    pairs_per_box[scene] = []
    for n in sizes:
        boxes = bp.generate_scene(scene, n)
        reference = None
        for method in methods:
            start = time.perf_counter()
            pairs = bp.find_pairs(boxes, method)
            if scene == "uniform":
                seconds[method].append(time.perf_counter() - start)
            if reference is None:
                reference = pairs
            assert np.array_equal(pairs, reference), f"{method} differs on {scene}:{n}"
        pairs_per_box[scene].append(len(reference) / n)
    print(f"{scene}: pairs per box {np.round(pairs_per_box[scene], 2)}")

# %% A small scene seen from above: what a camera sees, and where a ray hits first
boxes = bp.generate_scene("clustered", 400, seed=3)
camera = bp.Camera(eye=(0.5, 0.5, -0.3), target=(0.65, 0.5, 1.0), fovy_deg=30, near=0.05, far=1.0)
visible = bp.cull(boxes, camera)  # front to back; gpu_lbvh when built, else sphere_bvh
ray = np.array([[0.0, 0.5, 0.35, 1.0, 0.0, 0.25, 2.0]], np.float32)  # ox oy oz dx dy dz tmax
hit_ids, hit_t = bp.ray_cast(boxes, ray, "kd_tree")
print(f"camera sees {len(visible)} of {len(boxes)} boxes; ray hits box {hit_ids[0]} at t={hit_t[0]:.3f}")

# %% Plot
fig, (ax_time, ax_pairs, ax_top) = plt.subplots(1, 3, figsize=(16, 5))
for method in methods:
    ax_time.loglog(sizes, seconds[method], "o-", label=method)
ax_time.set(xlabel="boxes (uniform)", ylabel="seconds (build + pairs)", title="Time against N")
ax_time.legend()
for scene, ratio in pairs_per_box.items():
    ax_pairs.semilogx(sizes, ratio, "o-", label=scene)
ax_pairs.set(xlabel="boxes", ylabel="pairs per box", title="Pairs found against N")
ax_pairs.legend()

seen = np.zeros(len(boxes), bool)
seen[visible] = True
for i, b in enumerate(boxes):  # looking down -y: x across, z up the page
    color = "tab:blue" if seen[i] else "lightgrey"
    ax_top.add_patch(plt.Rectangle((b[0], b[2]), b[3] - b[0], b[5] - b[2], fc=color, ec="none"))
if hit_ids[0] >= 0:
    b = boxes[hit_ids[0]]
    ax_top.add_patch(plt.Rectangle((b[0], b[2]), b[3] - b[0], b[5] - b[2], fc="none", ec="red", lw=2))
end = ray[0, :3] + ray[0, 3:6] * (hit_t[0] if hit_ids[0] >= 0 else ray[0, 6])
ax_top.plot([ray[0, 0], end[0]], [ray[0, 2], end[2]], "r-", label="ray to its closest hit")
ax_top.plot(camera.eye[0], camera.eye[2], "k^", label="camera (blue: visible)")
eye, forward = np.array(camera.eye), np.subtract(camera.target, camera.eye)
half = np.arctan(np.tan(np.radians(camera.fovy_deg) / 2) * camera.aspect)  # horizontal half angle
for side in (-half, half):  # the frustum's left and right edges, near to far, in the x-z plane
    c, s = np.cos(side), np.sin(side)
    d = np.array([c * forward[0] - s * forward[2], c * forward[2] + s * forward[0]])
    d /= np.linalg.norm(forward[[0, 2]]) * c  # unit depth along the view direction
    ax_top.plot(eye[0] + d[0] * np.array([camera.near, camera.far]),
                eye[2] + d[1] * np.array([camera.near, camera.far]), "k--", lw=1)
ax_top.set(xlim=(-0.05, 1.05), ylim=(-0.35, 1.05), aspect="equal", xlabel="x", ylabel="z",
           title="Seen from above")
ax_top.legend(loc="upper right")
fig.tight_layout()
fig.savefig(args.out, dpi=80)
print(f"wrote {args.out}")
