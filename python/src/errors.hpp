// The library's error values as Python exceptions, with the library's messages: invalid boxes,
// parse errors and bad arguments raise ValueError, I/O errors OSError, unsupported operations
// NotImplementedError, exhausted memory MemoryError, Vulkan errors and device limits
// broadphase.GpuError (a RuntimeError), broken invariants (a library bug) RuntimeError. Each
// exception carries `code` (the ErrorCode's name) and `box` / `line` (the offending box or query
// id and file line, or None).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <utility>

#include "broadphase/types.hpp"

namespace broadphase::python {

namespace py = pybind11;

/// A library Error on its way to Python; thrown from C++ (with or without the GIL held) and
/// turned into the Python exception by the translator that register_errors installs.
class LibraryError : public std::exception {
public:
    explicit LibraryError(Error error) : error_(std::move(error)) {}
    const char* what() const noexcept override { return error_.message.c_str(); }
    const Error& error() const { return error_; }

private:
    Error error_;
};

[[noreturn]] inline void raise(Error error) {
    throw LibraryError(std::move(error));
}

[[noreturn]] inline void raise(ErrorCode code, std::string message) {
    throw LibraryError(Error{code, std::move(message)});
}

/// The value of `result`, or raises its error.
template <class T>
T unwrap(Result<T>&& result) {
    if (!result) raise(result.error());
    return std::move(result).value();
}

/// Raises the error of a failed `status`.
inline void check(const Status& status) {
    if (!status) raise(status.error());
}

/// Adds broadphase.GpuError to `m` and installs the translator of LibraryError.
void register_errors(py::module_& m);

}  // namespace broadphase::python
