# `broadphase devices --kernels` (issue "Light to start and to test"): each kernel's first use,
# one line per kernel with its create, dispatch and total milliseconds, costliest first, then the
# sum. Only a few cheap kernels are measured (--kernels-filter), and no figure is checked against
# a bound: the lines, their numbers and the exit status are. A filter that matches no kernel is an
# error (exit 2), so that a misspelt name never passes for a measurement; the options that go
# with --kernels are usage errors without it.
# Run as: cmake -DTOOL=... -P cli_devices_kernels_test.cmake
function(run_tool out_var expected_rc)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "broadphase ${ARGN}: exit ${rc}, not ${expected_rc}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

set(number "[0-9]+\\.[0-9][0-9]")
set(columns " +${number} +${number} +${number}\n")

# Test 1: cold (the default, whatever BROADPHASE_PIPELINE_CACHE says): the scan kernels, a line
# each with three numbers, sorted by total, and their sum; the device lines come first.
run_tool(out 0 devices --kernels --kernels-filter scan)
if(NOT out MATCHES "^chosen device: ")
  message(FATAL_ERROR "devices --kernels: the device lines should come first:\n${out}")
endif()
if(NOT out MATCHES "kernels: cold first use [^\n]*pipeline cache off\\)\n")
  message(FATAL_ERROR "devices --kernels: the figures should be said to be cold:\n${out}")
endif()
foreach(kernel scan_local scan_add)
  if(NOT out MATCHES "\n  ${kernel}${columns}")
    message(FATAL_ERROR "devices --kernels: no line for ${kernel}:\n${out}")
  endif()
endforeach()
if(NOT out MATCHES "\n  sum \\(2 kernels\\)${columns}$")
  message(FATAL_ERROR "devices --kernels: the sum of the 2 scan kernels should end it:\n${out}")
endif()
string(REGEX MATCHALL "\n  scan_[a-z_]+ +${number} +${number} +[0-9.]+" rows "${out}")
set(previous "")
foreach(row ${rows})
  string(REGEX REPLACE ".* ([0-9.]+)$" "\\1" total "${row}")
  if(NOT previous STREQUAL "" AND total GREATER previous)
    message(FATAL_ERROR "devices --kernels: not sorted by total, costliest first:\n${out}")
  endif()
  set(previous ${total})
endforeach()

# Test 2: --warm, one kernel: said to be measured with the caches as they are.
run_tool(out 0 devices --kernels --warm --kernels-filter count_args)
if(NOT out MATCHES "with the caches as they are" OR NOT out MATCHES "\n  count_args${columns}"
   OR NOT out MATCHES "\n  sum \\(1 kernel\\)${columns}$")
  message(FATAL_ERROR "devices --kernels --warm --kernels-filter count_args:\n${out}")
endif()

# Test 3: a filter that matches nothing is an error naming the filter.
run_tool(err 2 devices --kernels --kernels-filter no_such_kernel)
if(NOT err MATCHES "broadphase devices: no kernel's name contains 'no_such_kernel'")
  message(FATAL_ERROR "devices --kernels with an unmatched filter: '${err}'")
endif()

# Test 4: --kernels-filter and --warm without --kernels are usage errors.
foreach(option --warm "--kernels-filter;scan")
  run_tool(err 2 devices ${option})
  if(NOT err MATCHES "goes with --kernels")
    message(FATAL_ERROR "devices ${option} without --kernels: '${err}'")
  endif()
endforeach()
