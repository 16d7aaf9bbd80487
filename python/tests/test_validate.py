"""validate: every method against the reference, the report, and MismatchError."""

import numpy as np
import pytest

import broadphase as bp


def test_every_method_agrees_on_a_small_scene():
    boxes = bp.generate_scene("degenerate", 800, seed=2)
    report = bp.validate(boxes)
    assert list(report) == bp.method_names()  # brute_force, the reference, comes first
    pairs = len(bp.brute_force_pairs(boxes))
    for method, row in report.items():
        assert row["agrees"] and row["missing"] == row["extra"] == 0, method
        assert row["pairs"] == pairs and row["seconds"] >= 0


def test_chosen_methods_and_reference():
    boxes = bp.generate_scene("xline", 500)
    report = bp.validate(boxes.astype(np.float64), ["kd_tree", "octree"], reference="lbvh")
    assert list(report) == ["lbvh", "kd_tree", "octree"]


def test_a_difference_raises_with_the_report(monkeypatch):
    boxes = bp.generate_scene("uniform", 400)
    real = bp.find_pairs

    def one_pair_short(boxes, method="sweep_and_prune", **kwargs):
        pairs = real(boxes, method, **kwargs)
        return pairs[1:] if method == "kd_tree" else pairs

    monkeypatch.setattr(bp, "find_pairs", one_pair_short)
    methods = ["sweep_and_prune", "kd_tree"]
    with pytest.raises(bp.MismatchError, match=r"kd_tree \(1 missing, 0 extra\)") as info:
        bp.validate(boxes, methods)
    assert not info.value.report["kd_tree"]["agrees"]
    assert info.value.report["sweep_and_prune"]["agrees"]
    report = bp.validate(boxes, methods, strict=False)
    assert report["kd_tree"]["missing"] == 1 and not report["kd_tree"]["agrees"]


def test_invalid_boxes_raise():
    boxes = bp.generate_scene("uniform", 50).copy()
    boxes[7, 3] = -1e9
    with pytest.raises(ValueError, match=r"box 7: min.x \(.*\) > max.x"):
        bp.validate(boxes)
    with pytest.raises(ValueError, match="unknown method"):
        bp.validate(bp.generate_scene("uniform", 5), ["nope"])
