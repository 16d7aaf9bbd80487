"""Frustum culling from Python: a camera flies along a street of boxes, and each frame asks
which boxes it may see, front to back, on the GPU (gpu_lbvh) and on the CPU (sphere_bvh).

    python3 cull.py [--boxes N] [--frames F]

Each frame's visible ids are checked: the GPU's and the CPU's lists are the same, every
listed box touches the frustum and every box the frustum touches is listed (brute_force),
and the list runs front to back (its boxes' distances from the eye never decrease). Exits 0
when every frame holds, 1 otherwise. Without the GPU part, only the CPU methods run.
"""
import argparse
import sys

import numpy as np

import broadphase as bp


def distances(boxes, eye):
    """The distance from `eye` to each box (0 inside it)."""
    lo, hi = boxes[:, :3], boxes[:, 3:]
    gap = np.maximum(np.maximum(lo - eye, eye - hi), 0.0)
    return np.sqrt((gap * gap).sum(axis=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=20_000)
    parser.add_argument("--frames", type=int, default=8)
    args = parser.parse_args()

    boxes = bp.generate_scene("uniform", args.boxes)  # boxes in the unit cube
    methods = ["sphere_bvh"]
    if "gpu_lbvh" in bp.method_names():
        methods.insert(0, "gpu_lbvh")
    ok = True
    for frame in range(args.frames):
        t = frame / max(args.frames - 1, 1)
        eye = np.array([-0.2 + 1.4 * t, 0.5, -0.3], dtype=np.float32)
        camera = bp.Camera(eye=tuple(eye), target=(float(eye[0]), 0.5, 0.5), fovy_deg=40.0,
                           near=0.01, far=3.0)  # looking along z, sliding along x
        every = bp.cull(boxes, camera, method="brute_force")
        counts = []
        for method in methods:
            visible = bp.cull(boxes, camera, method=method)
            counts.append(f"{method} {len(visible)}")
            if not np.array_equal(np.sort(visible), np.sort(every)):
                print(f"frame {frame}: {method} disagrees with brute_force", file=sys.stderr)
                ok = False
            d = distances(boxes[visible], eye)
            if np.any(np.diff(d) < -1e-5 * max(float(d.max(initial=0.0)), 1.0)):
                print(f"frame {frame}: {method} is not front to back", file=sys.stderr)
                ok = False
        print(f"frame {frame}: eye x {float(eye[0]):.2f}: " + ", ".join(counts) +
              f" visible of {len(boxes)}")
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
