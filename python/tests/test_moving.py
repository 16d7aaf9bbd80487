"""MovingScene: began/ended of every frame against the set differences of brute-force pairs,
on the GPU (every refit policy) and with CPU structures (dynamic and static)."""

import numpy as np
import pytest

import broadphase as bp
from conftest import method_params, moved, pair_set, requires_gpu

FRAMES = 6


@pytest.fixture(scope="module")
def frames():
    first = bp.generate_scene("uniform", 1200, seed=21)
    return [first] + [moved(first, f) for f in range(1, FRAMES)]


@pytest.fixture(scope="module")
def oracle(frames):
    return [bp.brute_force_pairs(b) for b in frames]


def check_frames(scene, frames, oracle):
    scene.reset(frames[0])
    assert len(scene) == len(frames[0])
    changes = 0
    for f in range(1, len(frames)):
        frame = scene.step(frames[f])
        began, ended = frame  # a Frame unpacks as (began, ended)
        before, now = pair_set(oracle[f - 1]), pair_set(oracle[f])
        for events in (began, ended):
            assert events.dtype == np.uint32 and events.ndim == 2 and events.shape[1] == 2
            assert events.flags["C_CONTIGUOUS"]
        assert began.tolist() == sorted(map(list, now - before))
        assert ended.tolist() == sorted(map(list, before - now))
        np.testing.assert_array_equal(frame.pairs, oracle[f])
        assert frame.pair_count == len(oracle[f])
        changes += len(began) + len(ended)
    assert changes > 0


@pytest.mark.parametrize(
    "method", method_params(["gpu_lbvh", "dynamic_aabb_tree", "uniform_grid", "sweep_and_prune", "lbvh"])
)
def test_events_match_brute_force(method, frames, oracle):
    scene = bp.MovingScene(method)
    assert scene.method == method
    check_frames(scene, frames, oracle)


@requires_gpu
@pytest.mark.parametrize("policy", ["ratio", "refit", "rebuild"])
def test_gpu_policies(policy, frames, oracle):
    scene = bp.MovingScene("gpu_lbvh", policy=policy, rebuild_ratio=1.2)
    check_frames(scene, frames, oracle)
    frame = scene.step(frames[0])  # a jump back: still exact
    assert frame.path in ("refit", "rebuild")
    if policy == "rebuild":
        assert frame.path == "rebuild" and frame.ratio == 1
    if policy == "refit":
        assert frame.path == "refit" and frame.ratio >= 1


@requires_gpu
def test_gpu_work_rule_rebuilds_a_scattered_scene():
    # Small clusters 1e4 apart scatter by up to 4 units a frame: the SAH ratio stays near 1,
    # the traversal's work per box and pair does not, and the frame after it rebuilds.
    base = bp.generate_scene("multiscale", 2000)
    rng = np.random.default_rng(5)
    offsets = np.zeros((len(base), 3), np.float32)
    paths = {}
    for work_ratio in (2.0, 0.0):
        scene = bp.MovingScene("gpu_lbvh", rebuild_work_ratio=work_ratio, return_pairs=False)
        scene.reset(base)
        rng = np.random.default_rng(5)
        offsets[:] = 0
        paths[work_ratio] = []
        for _ in range(3):
            offsets += rng.uniform(-4, 4, offsets.shape).astype(np.float32)
            frame = scene.step(np.hstack([base[:, :3] + offsets, base[:, 3:] + offsets]))
            paths[work_ratio].append((frame.path, frame.ratio, frame.work_ratio))
    assert [p[0] for p in paths[0.0]] == ["refit"] * 3
    assert paths[2.0][0][0] == "refit" and paths[2.0][1][0] == "rebuild"
    assert paths[2.0][1][1] < 1.5 < 2.0 < paths[2.0][1][2]


@requires_gpu
def test_gpu_pairs_can_be_left_on_the_device(frames, oracle):
    scene = bp.MovingScene("gpu_lbvh", return_pairs=False)
    scene.reset(frames[0])
    frame = scene.step(frames[1])
    assert frame.pairs is None and frame.pair_count == len(oracle[1])
    assert "Frame(began=" in repr(frame)


def test_cpu_paths(frames):
    dynamic = bp.MovingScene("dynamic_aabb_tree")
    dynamic.reset(frames[0])
    assert dynamic.step(frames[1]).path == "update"
    static = bp.MovingScene("kd_tree", return_pairs=False)
    static.reset(frames[0])
    frame = static.step(frames[1])
    assert frame.path == "rebuild" and frame.pairs is None


@pytest.mark.parametrize("method", method_params(["gpu_lbvh", "rtree_linear"]))
def test_misuse_raises(method, frames):
    scene = bp.MovingScene(method)
    with pytest.raises(ValueError, match=r"step before reset\(boxes\)"):
        scene.step(frames[0])
    scene.reset(frames[0])
    with pytest.raises(ValueError, match="step got 10 boxes; the scene has 1200"):
        scene.step(frames[1][:10])
    bad = frames[1].copy()
    bad[5, 4] = np.inf
    with pytest.raises(ValueError, match="box 5: max.y is infinite"):
        scene.step(bad)
    with pytest.raises(ValueError, match="box 5"):
        scene.reset(bad)
    with pytest.raises(ValueError, match="unknown method"):
        bp.MovingScene("nope")


@pytest.mark.parametrize("method", method_params(["gpu_lbvh", "kd_tree"]))
def test_options_are_checked(method):
    with pytest.raises(ValueError, match="unknown policy 'sometimes'"):
        bp.MovingScene(method, policy="sometimes")
    with pytest.raises(ValueError, match="rebuild_ratio must be > 0"):
        bp.MovingScene(method, rebuild_ratio=0)
    with pytest.raises(ValueError, match="rebuild_work_ratio must be >= 0"):
        bp.MovingScene(method, rebuild_work_ratio=-1)
