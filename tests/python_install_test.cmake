# `cmake --install` puts the Python package broadphase into <prefix>/PYTHON_DIR/broadphase
# (python/CMakeLists.txt): a built tree is installed into a temporary prefix, the prefix moved,
# and the package imported from there by PYTHONPATH alone (no user site folder) finds the pairs
# of four boxes (two CPU methods, the same answer).
# Run as: cmake -DBUILD=... -DWORK=... -DPYTHON=... -DPYTHON_DIR=... -P python_install_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# step(WHAT command...): runs a command, fails the test with its output if it fails; the
# output in step_out.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY ${WORK})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "python_install: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

step("install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/installed)
file(RENAME ${WORK}/installed ${WORK}/moved)
set(package ${WORK}/moved/${PYTHON_DIR}/broadphase)
file(GLOB extension ${package}/_broadphase*.so)
if(NOT EXISTS ${package}/__init__.py OR NOT extension)
  message(FATAL_ERROR "python_install: no package in ${package} (__init__.py and _broadphase*.so)")
endif()

set(program [=[
import broadphase, sys
boxes = [[0, 0, 0, 1, 1, 1], [0.5, 0.5, 0.5, 2, 2, 2], [3, 3, 3, 4, 4, 4], [1, 1, 1, 1, 1, 1]]
print(broadphase.__file__)
print(broadphase.find_pairs(boxes, method="kd_tree").tolist())
print(broadphase.find_pairs(boxes, method="brute_force").tolist())
]=])
step("import" ${CMAKE_COMMAND} -E env PYTHONPATH=${WORK}/moved/${PYTHON_DIR}
     PYTHONDONTWRITEBYTECODE=1 ${PYTHON} -s -c "${program}")
set(expect "${package}/__init__.py\n[[0, 1], [0, 3], [1, 3]]\n[[0, 1], [0, 3], [1, 3]]\n")
if(NOT step_out STREQUAL expect)
  message(FATAL_ERROR "python_install: the installed package answered\n'${step_out}'\nnot\n'${expect}'")
endif()
message(STATUS "python_install: ${step_out}")
