// NumPy arrays in and out of the Python module without needless copies: inputs are viewed in
// place when they already are float32, C-contiguous and aligned (converted once otherwise),
// and results are std::vectors moved into a capsule that the returned array keeps as its base.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::python {

namespace py = pybind11;

/// A float32 array that is C-contiguous and aligned; NumPy converts other inputs once.
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast |
                                          py::detail::npy_api::NPY_ARRAY_ALIGNED_>;

// The library's row types are plain floats, so an (n, k) float32 array is viewed as n of them.
static_assert(std::is_standard_layout_v<Box> && sizeof(Box) == 6 * sizeof(float) &&
              alignof(Box) == alignof(float));
static_assert(std::is_standard_layout_v<Vec3> && sizeof(Vec3) == 3 * sizeof(float) &&
              alignof(Vec3) == alignof(float));
static_assert(std::is_standard_layout_v<Ray> && sizeof(Ray) == 7 * sizeof(float) &&
              alignof(Ray) == alignof(float));
static_assert(sizeof(Pair) == 2 * sizeof(std::uint32_t) && alignof(Pair) == alignof(std::uint32_t));

/// `object` as an (n, columns) float32 C-contiguous array: the same array when it already is
/// one, else one converted copy. An empty sequence is (0, columns). Raises TypeError
/// when NumPy cannot convert it, ValueError naming `what` and `layout` for any other shape.
inline FloatArray as_rows(const py::handle& object, py::ssize_t columns, const char* what,
                          const char* layout) {
    FloatArray rows = FloatArray::ensure(object);
    if (!rows) {
        throw py::type_error(std::string(what) + " must be convertible to a float32 array (got " +
                             std::string(py::str(py::type::handle_of(object))) + ")");
    }
    if (rows.ndim() == 1 && rows.shape(0) == 0)
        return FloatArray(std::vector<py::ssize_t>{0, columns});
    if (rows.ndim() != 2 || rows.shape(1) != columns) {
        std::string shape = "(";
        for (py::ssize_t d = 0; d < rows.ndim(); ++d)
            shape += (d ? ", " : "") + std::to_string(rows.shape(d));
        shape += rows.ndim() == 1 ? ",)" : ")";
        throw py::value_error(std::string(what) + " must be an (n, " + std::to_string(columns) +
                              ") array of " + layout + " rows; got shape " + shape);
    }
    return rows;
}

/// The rows of `rows` as `T` (6 floats: Box, 3: Vec3, 7: Ray), in place.
template <class T>
std::span<const T> rows_as(const FloatArray& rows) {
    static_assert(sizeof(T) % sizeof(float) == 0);
    return {reinterpret_cast<const T*>(rows.data()), static_cast<std::size_t>(rows.shape(0))};
}

/// An array of element type E and `shape` over the storage of `values` (moved, not copied): the
/// vector lives in a capsule that the array holds as its base.
template <class E, class T>
py::array_t<E> take(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
    static_assert(sizeof(T) % sizeof(E) == 0 && std::is_trivially_copyable_v<T>);
    if (values.empty()) return py::array_t<E>(std::move(shape));
    auto owned = std::make_unique<std::vector<T>>(std::move(values));
    const E* data = reinterpret_cast<const E*>(owned->data());
    py::capsule base(owned.get(), [](void* p) { delete static_cast<std::vector<T>*>(p); });
    owned.release();
    return py::array_t<E>(std::move(shape), data, base);
}

/// Sorted pairs as an (m, 2) uint32 array, without a copy.
inline py::array_t<std::uint32_t> pairs_array(std::vector<Pair>&& pairs) {
    const auto m = static_cast<py::ssize_t>(pairs.size());
    return take<std::uint32_t>(std::move(pairs), {m, 2});
}

/// Boxes as an (n, 6) float32 array, without a copy.
inline py::array_t<float> boxes_array(std::vector<Box>&& boxes) {
    const auto n = static_cast<py::ssize_t>(boxes.size());
    return take<float>(std::move(boxes), {n, 6});
}

}  // namespace broadphase::python
