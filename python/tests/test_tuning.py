"""set_tuning: the Context's tuning (gpu::Tuning) from Python, before the device's first GPU
call; device_info reports what was chosen. Every value gives the same pairs."""

import pytest

import broadphase as bp
from conftest import pair_set, requires_gpu


@requires_gpu
def test_set_tuning_reaches_the_context():
    bp.release_gpu()  # a fresh state for the default device
    try:
        bp.set_tuning(sort_path="reduce_then_scan", sort_window=3, sort_rank="shared",
                      traversal_budget=256)
        info = bp.device_info()
        assert info["sort_path"] == "reduce_then_scan"
        assert info["sort_window"] == 3
        assert info["sort_rank"] == "shared"
        assert info["traversal_budget"] == 256
        boxes = bp.generate_scene("clustered", 3000)
        assert pair_set(bp.find_pairs(boxes, method="gpu_lbvh")) == pair_set(
            bp.find_pairs(boxes, method="sweep_and_prune"))
        with pytest.raises(ValueError, match="exists already"):
            bp.set_tuning(sort_path="onesweep")
    finally:
        bp.release_gpu()  # later tests get the default tuning again


@requires_gpu
def test_a_bad_window_is_refused_when_the_context_is_made():
    bp.release_gpu()
    try:
        bp.set_tuning(sort_window=9)
        with pytest.raises(ValueError, match="sort window is 9"):
            bp.device_info()
    finally:
        bp.release_gpu()


@requires_gpu
def test_bad_names_are_refused_at_once():
    with pytest.raises(ValueError, match="sort_path: 'fastest'"):
        bp.set_tuning(sort_path="fastest")
    with pytest.raises(ValueError, match="sort_rank: 'ballot'"):
        bp.set_tuning(sort_rank="ballot")
