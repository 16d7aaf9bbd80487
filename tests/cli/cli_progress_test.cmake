# The terminal progress of the tool's long commands (validate, events; tools/progress.hpp):
# nothing at all on a standard error that is not a terminal, one line rewritten in place and
# erased at the end on one (a pseudo-terminal through script(1)), and standard output the same
# bytes either way. Run as: cmake -DTOOL=... -DWORK=... [-DGPU=ON] -P cli_progress_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(validate_cmd validate --scene uniform:3000 --methods brute_force,kd_tree,sweep_and_prune)
set(events_cpu_cmd events --scenes clustered:3000 --frames 5 --method kd_tree)
set(events_gpu_cmd events --scenes clustered:3000 --frames 5 --method gpu_lbvh)
set(commands validate events_cpu)
if(GPU)
  list(APPEND commands events_gpu)
endif()

# Timings differ from run to run: "0.012 s" becomes "T s".
function(without_times var text)
  string(REGEX REPLACE "[0-9]+\\.[0-9]+ s" "T s" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# Test 1: standard error piped (not a terminal), standard output to a pipe and to a file:
# standard error stays empty, the file holds what the pipe got.
foreach(name ${commands})
  execute_process(COMMAND ${TOOL} ${${name}_cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "" OR out STREQUAL "")
    message(FATAL_ERROR "${name} not on a terminal (exit ${rc}) wrote to standard error:\n'${err}'")
  endif()
  execute_process(COMMAND ${TOOL} ${${name}_cmd} RESULT_VARIABLE rc
                  OUTPUT_FILE ${WORK}/${name}_file.txt ERROR_FILE ${WORK}/${name}_err.txt TIMEOUT 300)
  file(READ ${WORK}/${name}_file.txt file_out)
  file(READ ${WORK}/${name}_err.txt file_err)
  if(name STREQUAL "validate")
    without_times(out "${out}")
    without_times(file_out "${file_out}")
  endif()
  if(NOT rc EQUAL 0 OR NOT file_err STREQUAL "" OR NOT file_out STREQUAL out)
    message(FATAL_ERROR "${name} into files (exit ${rc}): standard error '${file_err}', "
                        "output differs from the pipe's")
  endif()
  set(${name}_out "${out}")
endforeach()

find_program(SCRIPT script)
if(NOT SCRIPT)
  message(STATUS "cli_progress: no script(1); the terminal checks are skipped")
  return()
endif()

# run_on_terminal(NAME REDIRECT): runs command NAME with standard error (and, unless REDIRECT
# names a file for it, standard output) on a pseudo-terminal; the terminal's bytes in
# ${NAME}_terminal.
function(run_on_terminal name redirect)
  string(JOIN " " line ${${name}_cmd})
  execute_process(COMMAND ${SCRIPT} -qec "'${TOOL}' ${line} ${redirect}" /dev/null
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} on a terminal failed (exit ${rc}):\n${out}${err}")
  endif()
  set(${name}_terminal "${out}" PARENT_SCOPE)
endfunction()

# Test 2: standard error on a terminal, standard output into a file: the terminal shows each
# method of validate in turn (brute force named as the O(n^2) reference) and the frames done of
# events, and is left with the line erased ("\r", blanks, "\r" at the very end); the file holds
# the same bytes as without a terminal.
set(validate_expect "^\rvalidate uniform:3000: \\[1/3\\] brute_force \\(reference\\), O\\(n\\^2\\) pair tests\r +\r\rvalidate uniform:3000: \\[2/3\\] kd_tree\r.*\\[3/3\\] sweep_and_prune")
set(events_cpu_expect "^\revents kd_tree: 1 of 5 frames")
set(events_gpu_expect "^\revents gpu_lbvh: 2 of 5 frames")
foreach(name ${commands})
  file(REMOVE ${WORK}/${name}_tty.txt)
  run_on_terminal(${name} "> '${WORK}/${name}_tty.txt'")
  if(NOT ${name}_terminal MATCHES "${${name}_expect}" OR NOT ${name}_terminal MATCHES "\r +\r$")
    message(FATAL_ERROR "${name} on a terminal: no progress, or not erased at the end:\n'${${name}_terminal}'")
  endif()
  file(READ ${WORK}/${name}_tty.txt got)
  if(name STREQUAL "validate")
    without_times(got "${got}")
  endif()
  if(NOT got STREQUAL ${name}_out)
    message(FATAL_ERROR "${name}: standard output with a terminal standard error differs:\n'${got}'")
  endif()
endforeach()

# Test 3: standard output on the same terminal: each progress line is erased before a line of
# output ("\r", the line, "\r", blanks, "\r"), never has output glued after it, and once those
# erased lines are taken out the terminal holds exactly the output without a terminal.
foreach(name ${commands})
  run_on_terminal(${name} "")
  string(REPLACE "\r\n" "\n" text "${${name}_terminal}")  # the terminal's own "\r\n" for "\n"
  string(REGEX REPLACE "(\r[^\r\n]*)+\r +\r" "" text "${text}")
  if(name STREQUAL "validate")
    without_times(text "${text}")
  endif()
  if(NOT text STREQUAL ${name}_out)
    message(FATAL_ERROR "${name}: output on a terminal differs once the erased progress is taken "
                        "out:\n'${text}'")
  endif()
endforeach()
message(STATUS "cli_progress: all checks passed")
