#!/usr/bin/env bash
# The first stage of scripts/test.sh, where every test runs once:
# 1. a g++ build with AddressSanitizer and UndefinedBehaviorSanitizer (-O1 -g1, warnings as
#    errors, asserts on) of the libraries, the tool, the CPU and GPU suites, the tool's tests and
#    the fuzz targets' stand-alone driver, then every ctest entry of it except those
#    labelled `release` (the consumer projects and the Python module, which need an
#    uninstrumented build: scripts/test.sh runs them next): any ASan or UBSan report, or a leak
#    outside the Vulkan driver, fails the test it is in;
# 2. a clang build of the fuzz targets against libFuzzer (also ASan + UBSan), each fuzzed for a
#    bounded time from its seed corpus in tests/fuzz/corpus/;
# 3. a ThreadSanitizer build (no GPU part) of the engine adapters' tests, running the ones that
#    query one adapter from several threads at once: any data race fails them.
# Build folders: BROADPHASE_ASAN_DIR (default build-asan), BROADPHASE_FUZZ_DIR (build-fuzz),
# BROADPHASE_TSAN_DIR (build-tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
asan_dir=${BROADPHASE_ASAN_DIR:-build-asan}
fuzz_dir=${BROADPHASE_FUZZ_DIR:-build-fuzz}
tsan_dir=${BROADPHASE_TSAN_DIR:-build-tsan}
jobs=$(nproc)
# -g1: line tables only. Every report's stack still names function, file and line, and the
# build takes about a third less time than with -g (structure_test.cpp: 49 -> 33 s).
# Unity builds (CMake's batches of 8 sources): about half the compile time from scratch.
sanitize_flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
                -DBROADPHASE_SANITIZE=address,undefined -DCMAKE_UNITY_BUILD=ON)
# The CPU suite as 6 processes, not one per test case (tests/CMakeLists.txt): the same cases.
# The examples and the MPI component (whose tests run under mpirun, where Open MPI's own
# allocations would fill the leak checker's report) are built and tested in the Release stage
# (scripts/test.sh): the sanitizers check the library, its tool and its tests here.
asan_flags=(-DBROADPHASE_CPU_TEST_SHARDS=6 -DBROADPHASE_WERROR=ON -DBROADPHASE_BUILD_EXAMPLES=OFF
            -DBROADPHASE_BUILD_MPI=OFF)

# halt at the first report, with its stack; leaks that lie in the Vulkan loader, lavapipe, LLVM
# or the validation layer only are suppressed (the file says which), ours are not.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
# The loader unloads lavapipe at vkDestroyInstance; what the driver allocated once and keeps in
# its own statics then looks leaked, from an unloaded (<unknown module>) stack that no
# suppression can name. Preloading lavapipe keeps it resident (and its statics reachable) in the
# test processes only; it exports nothing but its vk_icd* entry points, so nothing else changes.
# (verify_asan_link_order=0: the preloaded driver comes before the ASan runtime in the library
# list, harmless as it defines no malloc.)
# The validation layer is unloaded the same way; tests/sanitizers/keep_layer_resident.c, also
# preloaded, keeps it (with synchronization validation it keeps the most in its statics).
lvp=$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -n 1)
mkdir -p "$asan_dir"
cc -O2 -shared -fPIC -o "$asan_dir/keep_layer_resident.so" tests/sanitizers/keep_layer_resident.c -ldl
preload="$(cd "$asan_dir" && pwd)/keep_layer_resident.so"
[ -n "$lvp" ] && [ -e "$lvp" ] && preload="$lvp $preload"
test_env=(ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" LD_PRELOAD="$preload")

echo "sanitize: address,undefined build in $asan_dir"
cmake -S . -B "$asan_dir" "${sanitize_flags[@]}" "${asan_flags[@]}" >/dev/null
cmake --build "$asan_dir" -j "$jobs"
env "${test_env[@]}" ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" -LE release

echo "sanitize: libFuzzer build in $fuzz_dir"
cmake -S . -B "$fuzz_dir" "${sanitize_flags[@]}" -DCMAKE_CXX_COMPILER=clang++ \
  -DBROADPHASE_LIBFUZZER=ON -DBROADPHASE_BUILD_GPU=OFF -DBROADPHASE_BUILD_EXAMPLES=OFF >/dev/null
fuzz_targets=()
for name in scene_text obj scene_spec camera rays proxy_script; do fuzz_targets+=(--target "broadphase_fuzz_$name"); done
cmake --build "$fuzz_dir" -j "$jobs" "${fuzz_targets[@]}"
ctest --test-dir "$fuzz_dir" -L fuzz --output-on-failure -j "$jobs"

echo "sanitize: thread build in $tsan_dir"
cmake -S . -B "$tsan_dir" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  -DCMAKE_UNITY_BUILD=ON -DBROADPHASE_SANITIZE=thread -DBROADPHASE_BUILD_GPU=OFF -DBROADPHASE_BUILD_EXAMPLES=OFF \
  -DBROADPHASE_WERROR=ON >/dev/null
# (the target list read whole first: grep -q would end the pipe early, a failure under pipefail)
listed=$(cmake --build "$tsan_dir" --target help)
tsan_targets=()
tsan_build=()
for engine in bullet fcl; do
  if grep -q " broadphase_${engine}_tests\$" <<<"$listed"; then
    tsan_targets+=("broadphase_${engine}_tests")
    tsan_build+=(--target "broadphase_${engine}_tests")
  fi
done
if [ ${#tsan_targets[@]} -gt 0 ]; then
  cmake --build "$tsan_dir" -j "$jobs" "${tsan_build[@]}"
  for t in "${tsan_targets[@]}"; do
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$tsan_dir/tests/$t" \
      --gtest_filter='*Concurrent*'
  done
fi
