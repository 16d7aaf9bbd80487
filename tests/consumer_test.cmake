# Builds and runs tests/consumer against this source tree in one mode (MODE: subdirectory or
# fetchcontent), with the GPU library on, as a separate CMake project with its own binary folder.
# Run as: cmake -DSOURCE=... -DWORK=... -DMODE=... [-DGENERATOR=...] -P consumer_test.cmake
file(REMOVE_RECURSE ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${WORK} -G "${GENERATOR}"
          -DBROADPHASE_SOURCE=${SOURCE} -DCONSUMER_MODE=${MODE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer (${MODE}): configure failed:\n${out}\n${err}")
endif()
include(ProcessorCount)
ProcessorCount(jobs)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} -j ${jobs}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer (${MODE}): build failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${WORK}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer (${MODE}): the program failed (exit ${rc})")
endif()
