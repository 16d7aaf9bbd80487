# Shared by the cli_*_test.cmake scripts: one-line checks that end the script with a message.
# Quoted values are compared as strings, never read as variable names.
cmake_policy(SET CMP0054 NEW)

# Fails with `what` unless the strings `actual` and `expected` are equal.
function(expect_equal actual expected what)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}")
  endif()
endfunction()
