"""Shared fixtures of the broadphase Python tests: small generated scenes (lavapipe is slow)
and an oracle in plain NumPy."""

import numpy as np
import pytest

import broadphase as bp

requires_gpu = pytest.mark.skipif(not bp.has_gpu(), reason="module built without the GPU")

#: methods whose results every test compares: every CPU structure, and gpu_lbvh when built
ALL_METHODS = bp.method_names()
CPU_METHODS = bp.cpu_method_names()


def method_params(methods):
    """pytest params for methods, gpu_lbvh marked to skip in a build without the GPU."""
    return [pytest.param(m, marks=requires_gpu) if m == "gpu_lbvh" else m for m in methods]


def pair_set(pairs):
    return {(int(i), int(j)) for i, j in pairs}


def overlapping(boxes, region):
    """Ids of the boxes overlapping the closed region, ascending (NumPy, float32)."""
    region = np.asarray(region, dtype=np.float32)
    hit = np.all((boxes[:, :3] <= region[3:]) & (region[:3] <= boxes[:, 3:]), axis=1)
    return np.nonzero(hit)[0].astype(np.uint32)


def moved(boxes, frame, seed=7):
    """The boxes shifted by a frame-dependent random walk (same sizes, same ids)."""
    rng = np.random.default_rng(seed + frame)
    side = float(np.median(boxes[:, 3] - boxes[:, 0]))
    shift = rng.normal(scale=side * 0.6, size=(len(boxes), 3)).astype(np.float32)
    return boxes + np.concatenate([shift, shift], axis=1)


@pytest.fixture(scope="session")
def uniform_small():
    return bp.generate_scene("uniform", 1500, seed=3)
