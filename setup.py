"""pip install of the Python module `broadphase`: setuptools drives the project's own CMake
build (python/CMakeLists.txt, pybind11 and NumPy from Debian's packages) for the interpreter
running pip, and packages python/broadphase with the built extension.

    /usr/bin/python3 -m pip install --no-build-isolation --break-system-packages .

(or, in a venv made with `/usr/bin/python3 -m venv --system-site-packages VENV`,
`VENV/bin/pip install --no-build-isolation .`). BROADPHASE_BUILD_GPU=OFF in the environment
builds without the Vulkan LBVH; CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs. The CMake
build folder is kept in build-pip/ between installs.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(broadphase VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    """The extension broadphase._broadphase, built by CMake (target broadphase_python)."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
        gpu = os.environ.get("BROADPHASE_BUILD_GPU", "ON")
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={'Debug' if self.debug else 'Release'}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DBROADPHASE_BUILD_GPU={gpu}",
            "-DBROADPHASE_BUILD_PYTHON=ON",
            "-DBROADPHASE_BUILD_TESTS=OFF",
            "-DBROADPHASE_BUILD_TOOLS=OFF",
            "-DBROADPHASE_BUILD_EXAMPLES=OFF",
            "-DBROADPHASE_INSTALL=OFF",
        ]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(configure, check=True)
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", "broadphase_python", "-j", jobs],
            check=True,
        )
        built = sorted((build_dir / "python" / "broadphase").glob("_broadphase*.so"))
        if not built:
            raise RuntimeError(f"the CMake build left no _broadphase module in {build_dir}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="broadphase",
    version=project_version(),
    description="Overlapping axis-aligned boxes: CPU broadphase structures and a Vulkan GPU LBVH",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.9",
    install_requires=["numpy"],
    package_dir={"": "python"},
    packages=["broadphase"],
    ext_modules=[CMakeExtension("broadphase._broadphase")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
    zip_safe=False,
)
