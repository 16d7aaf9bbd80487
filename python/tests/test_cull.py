"""cull: front-to-back visible ids of the GPU and sphere-BVH cullers against brute force and a
NumPy twin of the conservative plane test; cameras from objects, strings and sequences."""

import numpy as np
import pytest

import broadphase as bp
from conftest import method_params

CAMERAS = {
    "outside": bp.Camera((2, 2, 2), (0.5, 0.5, 0.5), fovy_deg=60, aspect=1.5, near=0.01, far=10),
    "inside": bp.Camera((0.5, 0.5, 0.1), (0.5, 0.6, 1), fovy_deg=40, aspect=1, near=0.05, far=0.7),
    "sideways": bp.Camera((0.3, 0.9, 0.5), (1.2, 0.2, 0.4), up=(0, 0, 1), fovy_deg=90, far=2),
}


@pytest.fixture(scope="module")
def boxes():
    return bp.generate_scene("uniform", 2500, seed=4)


def numpy_cull(camera, boxes):
    """frustum_may_see in float32, same operation order, then exact front-to-back order."""
    planes = camera.frustum_planes()
    seen = np.ones(len(boxes), bool)
    for nx, ny, nz, d in planes:
        n = np.array([nx, ny, nz], np.float32)
        p = np.where(n >= 0, boxes[:, 3:], boxes[:, :3])
        margin = n[0] * p[:, 0] + n[1] * p[:, 1] + n[2] * p[:, 2] + np.float32(d)
        seen &= margin >= 0
    ids = np.nonzero(seen)[0]
    eye = np.array(camera.eye, np.float64)
    b = boxes[ids].astype(np.float64)
    gap = np.maximum(np.maximum(b[:, :3] - eye, eye - b[:, 3:]), 0)
    distance = np.linalg.norm(gap, axis=1).astype(np.float32)
    return ids[np.lexsort((ids, distance))].astype(np.uint32)


@pytest.mark.parametrize("camera", CAMERAS, ids=list(CAMERAS))
def test_brute_force_matches_numpy(camera, boxes):
    ids = bp.cull(boxes, CAMERAS[camera], method="brute_force")
    assert ids.dtype == np.uint32 and ids.ndim == 1 and ids.flags["C_CONTIGUOUS"]
    assert 0 < len(ids)
    np.testing.assert_array_equal(ids, numpy_cull(CAMERAS[camera], boxes))


@pytest.mark.parametrize("method", method_params(["sphere_bvh", "gpu_lbvh"]))
@pytest.mark.parametrize("camera", CAMERAS, ids=list(CAMERAS))
def test_cullers_match_brute_force(method, camera, boxes):
    expected = bp.cull(boxes, CAMERAS[camera], method="brute_force")
    exact = bp.cull(boxes, CAMERAS[camera], "exact", method)
    np.testing.assert_array_equal(exact, expected)
    approx = bp.cull(boxes, CAMERAS[camera], order="approx", method=method)
    assert sorted(approx.tolist()) == sorted(expected.tolist())


def test_some_boxes_are_culled(boxes):
    seen = {name: len(bp.cull(boxes, c, method="brute_force")) for name, c in CAMERAS.items()}
    assert seen["inside"] < len(boxes) // 2 and seen["sideways"] < len(boxes)


def test_camera_forms():
    boxes = bp.generate_scene("uniform", 300)
    text = "2,2,2,0.5,0.5,0.5,0,1,0,60,1.5,0.01,10"
    expected = bp.cull(boxes, CAMERAS["outside"], method="brute_force")
    np.testing.assert_array_equal(bp.cull(boxes, text, method="brute_force"), expected)
    numbers = [float(x) for x in text.split(",")]
    np.testing.assert_array_equal(bp.cull(boxes, numbers, method="brute_force"), expected)
    np.testing.assert_array_equal(bp.cull(boxes, np.array(numbers), method="brute_force"), expected)
    camera = bp.Camera(eye=[2, 2, 2], target=np.array([0.5, 0.5, 0.5]), aspect=1.5, near=0.01, far=10)
    assert camera.eye == (2, 2, 2) and camera.up == (0, 1, 0) and camera.fovy_deg == 60
    np.testing.assert_array_equal(bp.cull(boxes, camera, method="brute_force"), expected)
    vp = camera.view_projection()
    assert vp.shape == (4, 4) and vp.dtype == np.float32
    np.testing.assert_allclose(vp, camera.projection() @ camera.view(), rtol=1e-5, atol=1e-6)
    # The eye is at the origin of view space.
    np.testing.assert_allclose(camera.view() @ np.array([2, 2, 2, 1]), [0, 0, 0, 1], atol=1e-6)
    assert "Camera(eye=(2.0, 2.0, 2.0)" in repr(camera)


def test_invalid_cameras_and_arguments():
    boxes = [[0, 0, 0, 1, 1, 1]]
    with pytest.raises(ValueError, match="near"):
        bp.cull(boxes, bp.Camera((2, 2, 2), (0, 0, 0), near=1, far=0.5), method="brute_force")
    with pytest.raises(ValueError, match="eye"):
        bp.Camera((1, 1, 1), (1, 1, 1)).frustum_planes()
    with pytest.raises(ValueError, match="13 numbers"):
        bp.cull(boxes, [1, 2, 3], method="brute_force")
    with pytest.raises(ValueError):
        bp.cull(boxes, "1,2,3", method="brute_force")
    with pytest.raises(TypeError, match="camera must be"):
        bp.cull(boxes, object(), method="brute_force")
    with pytest.raises(TypeError, match="eye must be a sequence of 3 numbers"):
        bp.Camera((1, 2), (0, 0, 0))
    with pytest.raises(ValueError, match="unknown order 'nearest'"):
        bp.cull(boxes, CAMERAS["outside"], "nearest", "brute_force")
    with pytest.raises(ValueError, match="unknown cull method 'kd_tree'"):
        bp.cull(boxes, CAMERAS["outside"], method="kd_tree")
    with pytest.raises(ValueError, match="box 0: min.x is NaN"):
        bp.cull([[np.nan, 0, 0, 1, 1, 1]], CAMERAS["outside"], method="brute_force")
