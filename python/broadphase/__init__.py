"""broadphase: which axis-aligned boxes overlap, on the CPU and on Vulkan GPUs.

Boxes are (n, 6) arrays of rows ``minx miny minz maxx maxy maxz`` (float32, C-contiguous;
other dtypes and layouts are converted once, see ``as_boxes``); box ids are row indices.
Pairs come back as sorted (m, 2) uint32 arrays of (i, j) with i < j, the same for every
method: the CPU structures of ``cpu_method_names()`` and ``gpu_lbvh`` (a linear BVH in Vulkan
compute shaders, on a GPU context the module creates on first use and shares).

    >>> import broadphase
    >>> boxes = broadphase.generate_scene("uniform", 10000)
    >>> pairs = broadphase.find_pairs(boxes, method="gpu_lbvh")

Errors raise with the library's messages: ValueError for invalid boxes (naming the box, also
in the exception's ``box`` attribute), bad shapes and unknown names; OSError for files;
NotImplementedError for what a method or build cannot do; MemoryError; ``GpuError`` for
Vulkan failures, device limits and validation-layer errors (``BROADPHASE_VALIDATION=1``).
"""

import atexit as _atexit
import time as _time

import numpy as _np

from ._broadphase import (
    Camera,
    Frame,
    GpuError,
    Index,
    MovingScene,
    __version__,
    as_boxes,
    cpu_method_names,
    cull,
    device_info,
    devices,
    find_pairs,
    generate_scene,
    generator_names,
    has_gpu,
    method_names,
    read_scene,
    release_gpu,
    set_tuning,
    write_scene,
)

__all__ = [
    "Camera",
    "Frame",
    "GpuError",
    "Index",
    "MismatchError",
    "MovingScene",
    "__version__",
    "as_boxes",
    "brute_force_pairs",
    "cpu_method_names",
    "cull",
    "device_info",
    "devices",
    "find_pairs",
    "find_pairs_against",
    "generate_scene",
    "generator_names",
    "has_gpu",
    "method_names",
    "nearest",
    "query_boxes",
    "query_points",
    "ray_cast",
    "read_scene",
    "release_gpu",
    "set_tuning",
    "validate",
    "write_scene",
]

# The shared GPU contexts go before the interpreter does.
_atexit.register(release_gpu)


class MismatchError(AssertionError):
    """validate() found methods whose pairs differ from the reference's."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def query_boxes(boxes, regions, method="sweep_and_prune", *, device=None):
    """Boxes overlapping each region: (offsets, ids) as Index(boxes, method).query_boxes."""
    return Index(boxes, method, device=device).query_boxes(regions)


def query_points(boxes, points, method="sweep_and_prune", *, device=None):
    """Boxes containing each (q, 3) point: (offsets, ids) as Index.query_points."""
    return Index(boxes, method, device=device).query_points(points)


def ray_cast(boxes, rays, method="sweep_and_prune", *, device=None):
    """Closest hit of each (r, 7) ray ``ox oy oz dx dy dz tmax``: (ids, t) as Index.ray_cast."""
    return Index(boxes, method, device=device).ray_cast(rays)


def nearest(boxes, points, k, method="sweep_and_prune"):
    """The k nearest boxes to each point: (ids, distances) as Index.nearest (CPU methods)."""
    return Index(boxes, method).nearest(points, k)


def find_pairs_against(a, b, method="sweep_and_prune", *, device=None):
    """Every overlapping (i, j) with i a row of `a` and j a row of `b`, sorted (m, 2) uint32."""
    return Index(b, method, device=device).pairs_against(a)


def brute_force_pairs(boxes):
    """The pairs of every box against every other with NumPy (the oracle; O(n^2) memory in
    blocks, fine for a few thousand boxes): a sorted (m, 2) uint32 array."""
    b = as_boxes(boxes)
    n = len(b)
    found = []
    block = max(1, 4_000_000 // max(n, 1))
    for start in range(0, n, block):
        a = b[start : start + block]
        hit = _np.all(
            (a[:, None, :3] <= b[None, :, 3:]) & (b[None, :, :3] <= a[:, None, 3:]), axis=2
        )
        i, j = _np.nonzero(hit)
        i = i + start
        keep = i < j
        found.append(_np.stack([i[keep], j[keep]], axis=1))
    if not found:
        return _np.empty((0, 2), dtype=_np.uint32)
    pairs = _np.concatenate(found).astype(_np.uint32)
    return pairs[_np.lexsort((pairs[:, 1], pairs[:, 0]))]


def _pair_keys(pairs):
    return (pairs[:, 0].astype(_np.uint64) << _np.uint64(32)) | pairs[:, 1].astype(_np.uint64)


def validate(boxes, methods=None, *, reference="brute_force", strict=True, device=None):
    """Runs every method (default: method_names()) on the boxes and compares its sorted pairs
    with the reference method's. Returns {method: {"pairs", "seconds", "agrees", "missing",
    "extra"}} (the reference included); with strict, raises MismatchError (its ``report`` is
    that dict) when a method differs. Invalid boxes raise ValueError as find_pairs does."""
    boxes = as_boxes(boxes)
    methods = list(method_names() if methods is None else methods)

    def run(method):
        start = _time.perf_counter()
        got = find_pairs(boxes, method, device=device if method == "gpu_lbvh" else None)
        return got, _time.perf_counter() - start

    expected, seconds = run(reference)
    expected_keys = _pair_keys(expected)
    report = {
        reference: {"pairs": len(expected), "seconds": seconds, "agrees": True,
                    "missing": 0, "extra": 0}
    }
    for method in methods:
        if method == reference:
            continue
        got, seconds = run(method)
        keys = _pair_keys(got)
        missing = _np.setdiff1d(expected_keys, keys, assume_unique=True)
        extra = _np.setdiff1d(keys, expected_keys, assume_unique=True)
        report[method] = {
            "pairs": len(got),
            "seconds": seconds,
            "agrees": bool(_np.array_equal(got, expected)),
            "missing": len(missing),
            "extra": len(extra),
        }
    differing = [m for m, r in report.items() if not r["agrees"]]
    if strict and differing:
        details = ", ".join(
            f"{m} ({report[m]['missing']} missing, {report[m]['extra']} extra)" for m in differing
        )
        raise MismatchError(f"pairs differ from {reference}'s: {details}", report)
    return report
