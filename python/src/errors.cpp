// The translator from LibraryError (a broadphase::Error) to Python exceptions.
#include "errors.hpp"

#include <Python.h>

namespace broadphase::python {

namespace {

// broadphase.GpuError; one reference kept for the life of the process.
PyObject* gpu_error_type = nullptr;

PyObject* exception_type(ErrorCode code) {
    switch (code) {
        case ErrorCode::invalid_box:
        case ErrorCode::parse_error:
        case ErrorCode::invalid_argument:
            return PyExc_ValueError;
        case ErrorCode::io_error:
            return PyExc_OSError;
        case ErrorCode::unsupported:
            return PyExc_NotImplementedError;
        case ErrorCode::out_of_memory:
            return PyExc_MemoryError;
        case ErrorCode::vulkan_error:
        case ErrorCode::limit_exceeded:
            return gpu_error_type;
        case ErrorCode::invariant_violated:  // a bug in the library, not in the input
            return PyExc_RuntimeError;
    }
    return PyExc_RuntimeError;
}

py::object optional_int(const std::optional<std::size_t>& value) {
    if (!value) return py::none();
    return py::int_(*value);
}

void set_python_error(const Error& error) {
    PyObject* type = exception_type(error.code);
    auto exception =
        py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", error.message.c_str()));
    if (!exception) return;  // the call set its own error
    try {
        exception.attr("code") = error_code_name(error.code);  // broadphase/types.hpp
        exception.attr("box") = optional_int(error.box);
        exception.attr("line") = optional_int(error.line);
    } catch (py::error_already_set& e) {
        e.restore();
        return;
    }
    PyErr_SetObject(type, exception.ptr());
}

}  // namespace

void register_errors(py::module_& m) {
    if (!gpu_error_type) {
        gpu_error_type = PyErr_NewExceptionWithDoc(
            "broadphase.GpuError",
            "A Vulkan call failed, a device limit was exceeded, or the validation layer "
            "reported errors.",
            PyExc_RuntimeError, nullptr);
        if (!gpu_error_type) throw py::error_already_set();
    }
    m.attr("GpuError") = py::handle(gpu_error_type);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const LibraryError& e) {
            set_python_error(e.error());
        }
    });
}

}  // namespace broadphase::python
