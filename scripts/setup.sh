#!/usr/bin/env bash
# Installs the Debian packages broadphase needs (idempotent: installs only what is missing).
# Needs root, or sudo.
#
#   bash scripts/setup.sh          # everything: build, tests, sanitizers, Python, docs, examples,
#                                  # the Bullet and FCL adapters, the MPI component
#   bash scripts/setup.sh --tool   # only what the library and the tool need (scripts/run.sh)
set -euo pipefail

packages=(
  cmake g++ make            # build
  libcli11-dev              # the tool's and examples' command-line parser
  libpng-dev zlib1g-dev     # compressed PNG plots (tools/plot.cpp)
  libvulkan-dev             # Vulkan loader and headers
  glslc                     # GLSL -> SPIR-V at build time (shaderc)
  mesa-vulkan-drivers       # lavapipe: a conformant Vulkan 1.3 device on the CPU
)
[ "${1:-}" = --tool ] || packages+=(
  libgtest-dev              # tests
  vulkan-validationlayers   # Khronos validation layer, on in every GPU test
  clang libclang-rt-dev     # libFuzzer runs of the parsers (scripts/sanitize.sh)
  python3-dev python3-setuptools python3-wheel python3-pip  # the Python module (python/)
  pybind11-dev python3-numpy                         # its bindings and arrays
  python3-pytest python3-matplotlib                  # its tests and example plot
  doxygen                   # API reference from the /// comments (the docs target)
  libcgal-demo              # its data archive holds the Stanford bunny (renderer showcase)
  libbullet-dev libfcl-dev  # the engine adapters broadphase::bullet and broadphase::fcl
  libopenmpi-dev openmpi-bin  # broadphase::mpi (scenes split over MPI ranks) and mpirun
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
