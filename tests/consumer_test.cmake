# Builds and runs tests/consumer against this source tree in one mode, with the GPU library on,
# as a separate CMake project with its own binary folder. MODE: subdirectory, fetchcontent, or
# package: broadphase is built, installed, the installed tree moved elsewhere (the package must
# be relocatable), and then consumed through find_package(broadphase CONFIG) and through its
# pkg-config file, and the installed tool is run.
# Run as: cmake -DSOURCE=... -DWORK=... -DMODE=... [-DGENERATOR=...] -P consumer_test.cmake
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
  set(lib ${WORK}/broadphase-build)
  step("configure broadphase" ${CMAKE_COMMAND} -S ${SOURCE} -B ${lib} -G "${GENERATOR}"
       -DCMAKE_BUILD_TYPE=Debug -DBROADPHASE_BUILD_TESTS=OFF -DBROADPHASE_BUILD_EXAMPLES=OFF
       -DBROADPHASE_BUILD_PYTHON=OFF
       -DCMAKE_INSTALL_PREFIX=${WORK}/installed)
  step("build broadphase" ${CMAKE_COMMAND} --build ${lib} -j ${jobs})
  step("install broadphase" ${CMAKE_COMMAND} --install ${lib})
  file(RENAME ${WORK}/installed ${WORK}/moved)
  set(extra -DCMAKE_PREFIX_PATH=${WORK}/moved)
endif()

set(bin ${WORK}/consumer-build)
step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${bin}
     -G "${GENERATOR}" -DBROADPHASE_SOURCE=${SOURCE} -DCONSUMER_MODE=${MODE} ${extra})
step("build the consumer" ${CMAKE_COMMAND} --build ${bin} -j ${jobs})
step("run the consumer" ${bin}/consumer)

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
endif()
