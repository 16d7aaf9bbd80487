"""Index queries (boxes, points, rays, k nearest) of every method against NumPy and the
brute-force structure, and their input validation."""

import numpy as np
import pytest

import broadphase as bp
from conftest import ALL_METHODS, method_params, overlapping, requires_gpu


@pytest.fixture(scope="module")
def world():
    return bp.generate_scene("mixed_sizes", 1500, seed=9)


@pytest.fixture(scope="module")
def regions():
    rng = np.random.default_rng(1)
    lo = rng.uniform(-0.1, 1.0, size=(150, 3))
    size = rng.uniform(0, 0.15, size=(150, 3))
    regions = np.concatenate([lo, lo + size], axis=1).astype(np.float32)
    regions[0] = [-1, -1, -1, 2, 2, 2]  # everything
    regions[1] = [5, 5, 5, 6, 6, 6]  # nothing
    return regions


@pytest.fixture(scope="module")
def points():
    return np.random.default_rng(2).uniform(0, 1, size=(150, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def rays():
    rng = np.random.default_rng(3)
    origin = rng.uniform(-0.5, 1.5, size=(150, 3))
    direction = rng.normal(size=(150, 3))
    tmax = rng.uniform(0.1, 3, size=(150, 1))
    rays = np.concatenate([origin, direction, tmax], axis=1).astype(np.float32)
    rays[0] = [0.5, 0.5, -1, 0, 0, 1, np.inf]  # axis-parallel, unbounded
    rays[1] = [0.5, 0.5, 0.5, 1, 0, 0, 0]  # tmax 0: hits only boxes around the origin
    return rays


def check_csr(offsets, ids, expected):
    assert offsets.dtype == np.int64 and ids.dtype == np.uint32
    assert offsets.shape == (len(expected) + 1,) and offsets[0] == 0 and offsets[-1] == len(ids)
    for q, want in enumerate(expected):
        np.testing.assert_array_equal(ids[offsets[q] : offsets[q + 1]], want)


@pytest.mark.parametrize("method", method_params(ALL_METHODS))
def test_box_and_point_queries_match_numpy(method, world, regions, points):
    index = bp.Index(world, method)
    offsets, ids = index.query_boxes(regions)
    check_csr(offsets, ids, [overlapping(world, r) for r in regions])
    offsets, ids = index.query_points(points)
    check_csr(offsets, ids, [overlapping(world, np.concatenate([p, p])) for p in points])


@pytest.fixture(scope="module")
def brute_force_hits(world, rays):
    return bp.ray_cast(world, rays, "brute_force")


@pytest.mark.parametrize("method", method_params(ALL_METHODS))
def test_ray_casts_match_brute_force(method, world, rays, brute_force_hits):
    ids, t = bp.Index(world, method).ray_cast(rays)
    want_ids, want_t = brute_force_hits
    assert ids.dtype == np.int64 and t.dtype == np.float32 and ids.shape == t.shape == (len(rays),)
    np.testing.assert_array_equal(ids, want_ids)
    if method == "gpu_lbvh":  # GPU division rounds within 2.5 ulp
        np.testing.assert_allclose(t, want_t, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(t, want_t)
    assert np.all(np.isinf(t[ids < 0]))


def test_brute_force_ray_hits_lie_on_their_boxes(world, rays, brute_force_hits):
    ids, t = brute_force_hits
    hit = ids >= 0
    assert 10 < hit.sum() < len(rays)
    assert ids[0] >= 0
    points = rays[hit, :3] + t[hit, None] * rays[hit, 3:6]
    boxes = world[ids[hit]]
    assert np.all(points >= boxes[:, :3] - 1e-5) and np.all(points <= boxes[:, 3:] + 1e-5)
    assert np.all((t[hit] >= 0) & (t[hit] <= rays[hit, 6]))


@pytest.mark.parametrize("method", bp.cpu_method_names())
def test_nearest_matches_brute_force(method, world, points):
    try:
        ids, distances = bp.nearest(world, points, 5, method)
    except NotImplementedError as e:  # a structure may not answer k-nearest
        assert str(e) == f"{method} does not support nearest" and e.code == "unsupported"
        return
    want_ids, want_distances = bp.nearest(world, points, 5, "brute_force")
    assert ids.shape == distances.shape == (len(points), 5) and ids.dtype == np.int64
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(distances, want_distances)


def test_nearest_distances_and_padding(world, points):
    ids, distances = bp.nearest(world, points, 3, "kd_tree")
    boxes = world[ids]
    gap = np.maximum(np.maximum(boxes[..., :3] - points[:, None], points[:, None] - boxes[..., 3:]), 0)
    np.testing.assert_allclose(distances, np.linalg.norm(gap, axis=-1), rtol=1e-5, atol=1e-7)
    assert np.all(np.diff(distances, axis=1) >= 0)
    ids, distances = bp.nearest(world[:2], points[:4], 3, "kd_tree")
    assert np.all(ids[:, 2] == -1) and np.all(np.isinf(distances[:, 2]))


@requires_gpu
def test_gpu_nearest_is_not_implemented(world, points):
    with pytest.raises(NotImplementedError, match="gpu_lbvh does not support nearest"):
        bp.Index(world, "gpu_lbvh").nearest(points, 3)


@requires_gpu
def test_gpu_indexes_share_one_context_and_keep_their_trees(world, regions):
    a = bp.Index(world, "gpu_lbvh")
    b = bp.Index(world[::2], "gpu_lbvh")
    for _ in range(2):  # each query rebuilds the tree of the other index
        for index, boxes in ((a, world), (b, world[::2])):
            offsets, ids = index.query_boxes(regions)
            check_csr(offsets, ids, [overlapping(boxes, r) for r in regions])


@pytest.mark.parametrize("method", method_params(["octree", "gpu_lbvh"]))
def test_invalid_queries_raise_value_error_naming_the_query(method, world):
    index = bp.Index(world, method)
    regions = np.zeros((4, 6), np.float32)
    regions[2, 0] = np.nan
    with pytest.raises(ValueError, match="query box 2: min.x is NaN") as info:
        index.query_boxes(regions)
    assert info.value.box == 2
    with pytest.raises(ValueError, match="query 1: point is not finite"):
        index.query_points([[0, 0, 0], [0, np.inf, 0]])
    with pytest.raises(ValueError, match="query 0: ray origin and direction must be finite"):
        index.ray_cast([[0, 0, 0, np.nan, 0, 1, 1]])
    with pytest.raises(ValueError, match="query 0: ray tmax is NaN"):
        index.ray_cast([[0, 0, 0, 0, 0, 1, np.nan]])
    with pytest.raises(ValueError, match=r"rays must be an \(n, 7\) array of ox oy oz dx dy dz tmax"):
        index.ray_cast(np.zeros((3, 6)))
    with pytest.raises(ValueError, match=r"points must be an \(n, 3\) array"):
        index.query_points(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"regions must be an \(n, 6\) array"):
        index.query_boxes(np.zeros(6))


def test_empty_queries_and_empty_index(world):
    offsets, ids = bp.query_boxes(world, np.empty((0, 6)))
    assert offsets.tolist() == [0] and ids.shape == (0,)
    index = bp.Index([], "sweep_and_prune")
    offsets, ids = index.query_points([[0, 0, 0]])
    assert offsets.tolist() == [0, 0]
    ids, t = index.ray_cast([[0, 0, 0, 1, 0, 0, 10]])
    assert ids.tolist() == [-1] and np.isinf(t[0])
