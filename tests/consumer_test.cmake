# Builds and runs tests/consumer against this source tree in one mode, with the GPU library on,
# as a separate CMake project with its own binary folder. MODE:
#   subdirectory  add_subdirectory, in a unity build of batches of 8 sources (CMake's default);
#   fetchcontent  FetchContent from the source tree, in a unity build with every source of a
#                 library in one batch (batch size 0): no two sources may define the same
#                 internal name.
#                 Engines often build their dependencies as unity builds (CMAKE_UNITY_BUILD),
#                 and a unity build of the library takes half the time; each source compiled on
#                 its own is the project's own build (scripts/build.sh), which ctest runs in;
#   package       BUILD_TREE (the build ctest runs in, already built) is installed, the installed
#                 tree moved elsewhere (the package must be relocatable), and then consumed
#                 through find_package(broadphase CONFIG) and through its pkg-config file, and
#                 the installed tool is run.
# MPIEXEC (the build tree has the MPI component; mpiexec's path): the consumer builds
# distributed.cpp too, in the package and subdirectory modes, and runs it on two ranks.
# Run as: cmake -DSOURCE=... -DWORK=... -DMODE=... [-DGENERATOR=...] [-DBUILD_TREE=...] [-DENGINES=ON]
#         [-DMPIEXEC=...] -P consumer_test.cmake
include(ProcessorCount)
ProcessorCount(jobs)
file(REMOVE_RECURSE ${WORK})

# step(WHAT command...): runs a command, fails the test with its output if it fails.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer (${MODE}): ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  if(what MATCHES "^run")
    message("${what}: ${out}${err}")
  endif()
endfunction()

set(extra "")
if(MODE STREQUAL "package")
  # The libraries and tool this build tree already built (compiling them again would add
  # minutes to every test run and check nothing more); the default component only, not the
  # Python module.
  if(NOT BUILD_TREE)
    message(FATAL_ERROR "consumer (package): BUILD_TREE, the build to install, is not set")
  endif()
  step("install broadphase" ${CMAKE_COMMAND} --install ${BUILD_TREE} --prefix ${WORK}/installed
       --component Unspecified)
  file(RENAME ${WORK}/installed ${WORK}/moved)
  set(extra -DCMAKE_PREFIX_PATH=${WORK}/moved)
elseif(MODE STREQUAL "subdirectory")
  set(extra -DCMAKE_UNITY_BUILD=ON)
elseif(MODE STREQUAL "fetchcontent")
  # The engine adapters as a subproject are the subdirectory mode's: here they are left out,
  # which also checks that a subproject builds without them.
  set(extra -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0
            -DBROADPHASE_BUILD_BULLET=OFF -DBROADPHASE_BUILD_FCL=OFF -DBROADPHASE_BUILD_MPI=OFF)
endif()
# ENGINES (the build tree has the Bullet and FCL adapters): the consumer builds and runs
# engines.cpp too, in the package and subdirectory modes.
if(ENGINES AND NOT MODE STREQUAL "fetchcontent")
  list(APPEND extra -DCONSUMER_ENGINES=ON)
  set(run_engines TRUE)
endif()

if(MPIEXEC AND NOT MODE STREQUAL "fetchcontent")
  list(APPEND extra -DCONSUMER_MPI=ON)
  set(run_mpi TRUE)
endif()

set(bin ${WORK}/consumer-build)
step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${bin}
     -G "${GENERATOR}" -DBROADPHASE_SOURCE=${SOURCE} -DCONSUMER_MODE=${MODE} ${extra})
step("build the consumer" ${CMAKE_COMMAND} --build ${bin} -j ${jobs})
step("run the consumer" ${bin}/consumer)
if(run_engines)
  step("run the engines' consumer" ${bin}/engines)
endif()
if(run_mpi)
  step("run the MPI consumer on 2 ranks" ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ${MPIEXEC} -n 2 --oversubscribe ${bin}/distributed)
endif()

if(MODE STREQUAL "package")
  # The same program compiled by hand with the flags of the installed pkg-config file.
  file(GLOB pc_file ${WORK}/moved/*/pkgconfig/broadphase.pc ${WORK}/moved/*/*/pkgconfig/broadphase.pc)
  if(NOT pc_file)
    message(FATAL_ERROR "consumer (package): no broadphase.pc installed")
  endif()
  get_filename_component(pc_dir ${pc_file} DIRECTORY)
  step("compile with pkg-config" sh -c
       "PKG_CONFIG_PATH=${pc_dir} c++ ${SOURCE}/tests/consumer/main.cpp -o ${WORK}/consumer_pc \
        $(PKG_CONFIG_PATH=${pc_dir} pkg-config --cflags --libs broadphase)")
  step("run the pkg-config build" ${WORK}/consumer_pc)
  step("run the installed tool" ${WORK}/moved/bin/broadphase scene --scene uniform:3)
  # expect_unfound(NAME PREFIX COMPONENT MESSAGE): a project requiring COMPONENT of the package
  # under PREFIX fails to configure, find_package's error naming it with MESSAGE.
  function(expect_unfound name prefix component message)
    file(WRITE ${WORK}/${name}/CMakeLists.txt
         "cmake_minimum_required(VERSION 3.20)\nproject(${name} CXX)\n"
         "find_package(broadphase CONFIG REQUIRED COMPONENTS cpu ${component})\n")
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/${name} -B ${WORK}/${name}/build
                            -DCMAKE_PREFIX_PATH=${prefix}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "component ${component}: ${message}")
      message(FATAL_ERROR "consumer (package): component ${component} is not named:\n${out}\n${err}")
    endif()
  endfunction()
  # A required component that does not exist is named in find_package's error.
  expect_unfound(missing ${WORK}/moved no_such_part "no such component")
  # A component the installed build left out is named with the reason: this package as a build
  # without the Bullet adapter and the MPI component installs it (its config file's
  # broadphase_HAS_BULLET and broadphase_HAS_MPI false).
  file(COPY ${WORK}/moved/ DESTINATION ${WORK}/without_bullet)
  file(GLOB_RECURSE config_file ${WORK}/without_bullet/*/broadphaseConfig.cmake)
  file(READ ${config_file} config)
  string(REGEX REPLACE "set\\(broadphase_HAS_BULLET [A-Za-z0-9]+\\)"
         "set(broadphase_HAS_BULLET FALSE)" config "${config}")
  string(REGEX REPLACE "set\\(broadphase_HAS_MPI [A-Za-z0-9]+\\)"
         "set(broadphase_HAS_MPI FALSE)" config "${config}")
  file(WRITE ${config_file} "${config}")
  expect_unfound(left_out ${WORK}/without_bullet bullet
                 "this broadphase was built without its Bullet adapter")
  expect_unfound(left_out_mpi ${WORK}/without_bullet mpi
                 "this broadphase was built without its MPI component")
endif()
