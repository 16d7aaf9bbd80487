"""find_pairs: every method against the NumPy oracle on the standard scenes, the array
contract (dtype, shape, contiguity, no copies) and input validation."""

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import broadphase as bp
from conftest import ALL_METHODS, CPU_METHODS, method_params, requires_gpu

GENERATORS = bp.generator_names()


@pytest.fixture(scope="module")
def scenes():
    return {name: bp.generate_scene(name, 700, seed=11) for name in GENERATORS}


@pytest.fixture(scope="module")
def oracle(scenes):
    return {name: bp.brute_force_pairs(boxes) for name, boxes in scenes.items()}


def test_version_matches_cmake_project():
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    version = re.search(r"project\(broadphase VERSION ([0-9.]+)", cmake).group(1)
    assert bp.__version__ == version


def test_method_names():
    assert bp.method_names()[: len(CPU_METHODS)] == CPU_METHODS
    assert CPU_METHODS[0] == "brute_force" and "sweep_and_prune" in CPU_METHODS
    assert ("gpu_lbvh" in bp.method_names()) == bp.has_gpu()


@pytest.mark.parametrize("method", CPU_METHODS)
@pytest.mark.parametrize("scene", GENERATORS)
def test_cpu_methods_match_brute_force(method, scene, scenes, oracle):
    pairs = bp.find_pairs(scenes[scene], method)
    np.testing.assert_array_equal(pairs, oracle[scene])


@requires_gpu
@pytest.mark.parametrize("scene", GENERATORS)
def test_gpu_lbvh_matches_brute_force(scene, scenes, oracle):
    pairs = bp.find_pairs(scenes[scene], "gpu_lbvh")
    np.testing.assert_array_equal(pairs, oracle[scene])


@requires_gpu
def test_gpu_lbvh_on_a_larger_scene():
    boxes = bp.generate_scene("clustered", 4000, seed=5)
    np.testing.assert_array_equal(
        bp.find_pairs(boxes, "gpu_lbvh"), bp.find_pairs(boxes, "sweep_and_prune")
    )


@requires_gpu
def test_gpu_device_by_index_and_name():
    devices = bp.devices()
    assert devices and {"index", "name", "type", "api_version"} <= devices[0].keys()
    boxes = bp.generate_scene("uniform", 500)
    expected = bp.find_pairs(boxes)
    np.testing.assert_array_equal(bp.find_pairs(boxes, "gpu_lbvh", device=0), expected)
    name = devices[0]["name"].split()[0]
    np.testing.assert_array_equal(bp.find_pairs(boxes, "gpu_lbvh", device=name), expected)
    info = bp.device_info(0)
    assert info["name"] == devices[0]["name"]
    with pytest.raises(ValueError, match="no Vulkan device matches 'no such device anywhere'"):
        bp.find_pairs(boxes, "gpu_lbvh", device="no such device anywhere")


def test_results_are_sorted_uint32_rows_without_copies(uniform_small):
    for method in ["sweep_and_prune", "lbvh"] + (["gpu_lbvh"] if bp.has_gpu() else []):
        pairs = bp.find_pairs(uniform_small, method)
        assert pairs.dtype == np.uint32 and pairs.ndim == 2 and pairs.shape[1] == 2
        assert pairs.flags["C_CONTIGUOUS"] and pairs.flags["WRITEABLE"]
        # The library's vector itself, kept alive by a capsule: no copy into NumPy's memory.
        assert not pairs.flags["OWNDATA"] and type(pairs.base).__name__ == "PyCapsule"
        assert np.all(pairs[:, 0] < pairs[:, 1])
        keys = pairs[:, 0].astype(np.uint64) << np.uint64(32) | pairs[:, 1]
        assert np.all(np.diff(keys.astype(np.int64)) > 0)


def test_generated_scene_is_a_float32_array_without_copies():
    boxes = bp.generate_scene("uniform", 100)
    assert boxes.dtype == np.float32 and boxes.shape == (100, 6)
    assert boxes.flags["C_CONTIGUOUS"] and type(boxes.base).__name__ == "PyCapsule"


def test_float32_c_contiguous_input_is_read_in_place(uniform_small):
    assert bp.as_boxes(uniform_small) is uniform_small
    readonly = uniform_small.copy()
    readonly.flags.writeable = False
    assert bp.as_boxes(readonly) is readonly


@pytest.mark.parametrize(
    "convert",
    [
        lambda b: b.astype(np.float64),
        lambda b: np.asfortranarray(b),
        lambda b: b.tolist(),
        lambda b: np.concatenate([b, b], axis=1)[:, :6],  # a strided view
        lambda b: b.astype(b.dtype.newbyteorder()),
    ],
    ids=["float64", "fortran", "list", "strided", "byteswapped"],
)
def test_other_dtypes_and_layouts_are_converted_once(convert, uniform_small):
    other = convert(uniform_small)
    converted = bp.as_boxes(other)
    assert converted is not other and converted.dtype == np.float32
    assert converted.flags["C_CONTIGUOUS"] and converted.shape == uniform_small.shape
    np.testing.assert_array_equal(bp.find_pairs(other), bp.find_pairs(uniform_small))


@pytest.mark.parametrize("method", method_params(["brute_force", "sweep_and_prune", "gpu_lbvh"]))
def test_empty_and_single_box(method):
    for empty in ([], np.empty((0, 6), np.float32)):
        pairs = bp.find_pairs(empty, method)
        assert pairs.shape == (0, 2) and pairs.dtype == np.uint32
    one = bp.find_pairs([[0, 0, 0, 1, 1, 1]], method)
    assert one.shape == (0, 2)
    # Closed boxes: touching faces overlap; duplicates overlap.
    touching = [[0, 0, 0, 1, 1, 1], [1, 0, 0, 2, 1, 1], [0, 0, 0, 1, 1, 1], [3, 3, 3, 4, 4, 4]]
    assert bp.find_pairs(touching, method).tolist() == [[0, 1], [0, 2], [1, 2]]


@pytest.mark.parametrize(
    "shape", [(10, 5), (10, 7), (60,), (2, 10, 6), (0, 5)], ids=lambda s: str(s)
)
def test_wrong_shapes_raise_value_error(shape):
    with pytest.raises(ValueError, match=r"boxes must be an \(n, 6\) array of minx miny minz"):
        bp.find_pairs(np.zeros(shape, np.float32))


def test_unconvertible_input_raises_type_error():
    with pytest.raises(TypeError, match="float32"):
        bp.find_pairs([["a", "b", "c", "d", "e", "f"]])
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        bp.find_pairs(None)  # a 0-d array


@pytest.mark.parametrize("method", method_params(["sweep_and_prune", "kd_tree", "gpu_lbvh"]))
@pytest.mark.parametrize(
    "bad, message",
    [
        ([np.nan, 0, 0, 1, 1, 1], "box 3: min.x is NaN"),
        ([0, 0, 0, 1, np.inf, 1], "box 3: max.y is infinite"),
        ([0, 0, 2, 1, 1, 1], r"box 3: min.z \(2\) > max.z \(1\)"),
    ],
    ids=["nan", "inf", "min>max"],
)
def test_invalid_boxes_raise_value_error_naming_the_box(method, bad, message):
    boxes = bp.generate_scene("uniform", 10).copy()
    boxes[3] = bad
    with pytest.raises(ValueError, match=message) as info:
        bp.find_pairs(boxes, method)
    assert info.value.box == 3 and info.value.code == "invalid_box" and info.value.line is None


def test_unknown_method_and_misplaced_device():
    with pytest.raises(ValueError, match="unknown method 'nope' .*sweep_and_prune"):
        bp.find_pairs([[0, 0, 0, 1, 1, 1]], "nope")
    with pytest.raises(ValueError, match="device= applies to gpu_lbvh only"):
        bp.find_pairs([[0, 0, 0, 1, 1, 1]], "kd_tree", device=0)
    if bp.has_gpu():
        with pytest.raises(TypeError):
            bp.find_pairs([[0, 0, 0, 1, 1, 1]], "gpu_lbvh", device=1.5)
    else:
        with pytest.raises(NotImplementedError, match="no GPU support"):
            bp.find_pairs([[0, 0, 0, 1, 1, 1]], "gpu_lbvh")


@pytest.mark.parametrize("method", method_params(["uniform_grid", "gpu_lbvh"]))
def test_concurrent_calls_from_threads(method, uniform_small):
    expected = bp.find_pairs(uniform_small)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: bp.find_pairs(uniform_small, method), range(8)))
    for pairs in results:
        np.testing.assert_array_equal(pairs, expected)


def test_index_pairs_and_set_versus_set(uniform_small):
    a, b = uniform_small[:700], uniform_small[700:]
    expected = sorted(
        (i, j) for i in range(len(a)) for j in np.nonzero(
            np.all((a[i, :3] <= b[:, 3:]) & (b[:, :3] <= a[i, 3:]), axis=1))[0]
    )
    for method in ["brute_force", "rstar_tree"] + (["gpu_lbvh"] if bp.has_gpu() else []):
        index = bp.Index(uniform_small, method)
        assert len(index) == len(uniform_small) and index.method == method
        np.testing.assert_array_equal(index.pairs(), bp.find_pairs(uniform_small))
        got = bp.find_pairs_against(a, b, method)
        assert got.dtype == np.uint32 and [tuple(p) for p in got.tolist()] == expected


def test_scene_files_round_trip(tmp_path, uniform_small):
    path = tmp_path / "boxes.txt"
    bp.write_scene(str(path), uniform_small[:50])
    np.testing.assert_array_equal(bp.read_scene(str(path)), uniform_small[:50])
    with pytest.raises(OSError):
        bp.read_scene(str(tmp_path / "missing.txt"))
    (tmp_path / "bad.txt").write_text("0 0 0 1 1 1\n0 0 0 1 x 1\n")
    with pytest.raises(ValueError) as info:
        bp.read_scene(str(tmp_path / "bad.txt"))
    assert info.value.line == 2 and info.value.code == "parse_error"


def test_generators_are_seeded():
    a = bp.generate_scene("clustered", 300, seed=1)
    np.testing.assert_array_equal(a, bp.generate_scene("clustered", 300, seed=1))
    assert not np.array_equal(a, bp.generate_scene("clustered", 300, seed=2))
    with pytest.raises(ValueError, match="unknown generator"):
        bp.generate_scene("nope", 10)


def test_long_calls_release_the_gil():
    """Python keeps running beside a long find_pairs: the call does not hold the GIL."""
    boxes = bp.generate_scene("uniform", 12000)

    def spin(seconds):
        count, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            count += 1
        return count

    rate = spin(0.05) / 0.05  # loop iterations per second with the interpreter to ourselves
    done = threading.Event()
    worker = threading.Thread(target=lambda: (bp.find_pairs(boxes, "brute_force"), done.set()))
    count, start = 0, time.perf_counter()
    worker.start()
    while not done.is_set():
        count += 1
        time.perf_counter()
    elapsed = time.perf_counter() - start
    worker.join()
    # Holding the GIL would let this loop run one switch interval (5 ms) at most.
    assert elapsed < 0.1 or count > 0.1 * rate * elapsed, (count, rate, elapsed)
