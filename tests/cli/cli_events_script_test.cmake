# End-to-end test of `broadphase events --script` (issue 10): a script of static and dynamic
# bodies added, removed, moved and refiltered prints the events worked out by hand; every CPU
# method prints the same as brute force on a long generated script, moved in place and rebuilt;
# bad scripts end with exit 2 and an error naming the file and line. With GPU (a build with GPU
# support), gpu::ProxyScene (--method gpu_lbvh) prints the same as brute force on every script.
# Run as: cmake -DTOOL=... -DWORK=... [-DGPU=ON] -P cli_events_script_test.cmake
file(MAKE_DIRECTORY ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)

function(run_tool out_var expect_ok)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "broadphase ${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
  if(NOT expect_ok AND NOT rc EQUAL 2)
    message(FATAL_ERROR "broadphase ${ARGN} should have failed with exit 2, not ${rc}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

set(cpu_methods brute_force sweep_and_prune uniform_grid octree loose_octree rtree_linear
    rtree_quadratic rstar_tree rtree_nearest_x rtree_str rtree_hilbert kd_tree dynamic_aabb_tree
    static_aabb_tree sphere_bvh lbvh)
# The methods that answer the generated scripts: the CPU ones, and the GPU's proxy scene.
set(script_methods ${cpu_methods})
if(GPU)
  list(APPEND script_methods gpu_lbvh)
endif()

# Test 1: bad scripts end with exit 2 and "FILE:LINE: what", before any output.
# bad(NAME TEXT REGEX): a script with TEXT fails with a message matching REGEX.
function(bad name text regex)
  file(WRITE ${WORK}/${name}.txt "${text}")
  run_tool(err FALSE events --script ${WORK}/${name}.txt --method dynamic_aabb_tree)
  if(NOT err MATCHES "^broadphase events: ${regex}" OR err MATCHES "frame [0-9]")
    message(FATAL_ERROR "script ${name}: the error should match '${regex}': '${err}'")
  endif()
endfunction()
set(body "0 0 0 1 1 1")
bad(no_frame "# no frame first\n\n+ 1 ${body}\nframe\n"
    "[^ ]*no_frame.txt:3: a script starts with a line \"frame\", found '\\+'")
bad(empty "# nothing\n" "[^ ]*empty.txt: no frame \\(a script starts with a line \"frame\"\\)")
bad(unknown_id "frame\n+ 1 ${body}\nframe\nm 2 ${body}\n" "[^ ]*unknown_id.txt:4: unknown ID 2 \\(never added\\)")
bad(added_twice "frame\n+ 1 ${body}\nframe\ns 1 ${body}\n"
    "[^ ]*added_twice.txt:4: ID 1 is added twice \\(live since line 2\\)")
bad(removed "frame\n+ 1 ${body}\n- 1\nf 1 1 1 0\n"
    "[^ ]*removed.txt:4: ID 1 is not live \\(removed at line 3\\)")
bad(fields "frame\n+ 1 0 0 0 1 1\n" "[^ ]*fields.txt:2: expected \"\\+ ID minx miny minz maxx maxy maxz \\[category mask group\\]\", found 7 fields")
bad(command "frame\n* 1\n" "[^ ]*command.txt:2: unknown command '\\*' \\(frame, \\+, s, -, m or f\\)")
bad(frame_arg "frame 0\n" "[^ ]*frame_arg.txt:1: frame takes nothing after it, found '0'")
bad(number "frame\n+ 1 0 0 0 1 x 1\n" "[^ ]*number.txt:2: 'x' is not a number")
bad(box "frame\n+ 1 ${body}\nframe\nm 1 0 2 0 1 1 1\n"
    "[^ ]*box.txt:4: the box of ID 1: min.y \\(2\\) > max.y \\(1\\)")
bad(nan "frame\ns 1 0 0 0 nan 1 1\n" "[^ ]*nan.txt:2: the box of ID 1: max.x is NaN")
bad(id "frame\n+ 4294967296 ${body}\n" "[^ ]*id.txt:2: '4294967296' is not an ID")
bad(mask "frame\n+ 1 ${body} 1 0x100000000 0\n" "[^ ]*mask.txt:2: '0x100000000' is not a mask")
bad(group "frame\n+ 1 ${body}\nf 1 1 1 1.5\n" "[^ ]*group.txt:3: '1.5' is not a group")
run_tool(err FALSE events --script ${WORK}/does_not_exist.txt --method brute_force)
if(NOT err MATCHES "cannot open '.*does_not_exist.txt'")
  message(FATAL_ERROR "a missing script should be named: '${err}'")
endif()
file(WRITE ${WORK}/ok.txt "frame\n+ 1 ${body}\nframe\n")
run_tool(err FALSE events --script ${WORK}/ok.txt --scenes uniform:10 --method brute_force)
if(NOT err MATCHES "--scenes and --script cannot be combined")
  message(FATAL_ERROR "--scenes with --script: '${err}'")
endif()
run_tool(err FALSE events --script ${WORK}/ok.txt --frames 3 --method brute_force)
if(NOT err MATCHES "--frames is for --scenes, not --script")
  message(FATAL_ERROR "--frames with --script: '${err}'")
endif()
run_tool(err FALSE events --method brute_force)
if(NOT err MATCHES "--scenes S0 S1 ... or --script FILE is required")
  message(FATAL_ERROR "events without frames: '${err}'")
endif()
run_tool(err FALSE events --script ${WORK}/ok.txt --method kd_tree --device 0)
if(NOT err MATCHES "--device is for --method gpu_lbvh only")
  message(FATAL_ERROR "--device with a CPU method: '${err}'")
endif()
execute_process(COMMAND ${TOOL} events --help OUTPUT_VARIABLE help)
if(NOT help MATCHES "--script FILE" OR NOT help MATCHES "\"frame\" starts a frame")
  message(FATAL_ERROR "events --help does not document --script:\n${help}")
endif()

# A long script from a seeded linear congruential generator: FRAMES frames of up to 8
# commands on ids 0..39 (a quarter of the adds static), boxes in [0, 7)^3 of sides up to 2,
# 0x/decimal filters when FILTERS. Written to PATH.
function(generate_script path seed frames filters)
  set(state ${seed})
  set(live "")
  set(text "# generated, seed ${seed}\n")
  macro(next_random modulus out)
    math(EXPR state "(${state} * 1103515245 + 12345) % 2147483648")
    math(EXPR ${out} "(${state} / 65536) % ${modulus}")
  endmacro()
  macro(random_box out)
    set(${out} "")
    foreach(axis 0 1 2)
      next_random(50 lo)
      next_random(21 size)
      math(EXPR hi "${lo} + ${size}")
      string(APPEND ${out} " ${lo}e-1")
      set(hi_${axis} "${hi}e-1")
    endforeach()
    string(APPEND ${out} " ${hi_0} ${hi_1} ${hi_2}")
  endmacro()
  macro(random_filter out)
    next_random(3 c)
    next_random(4 m)
    next_random(4 g)
    list(GET categories ${c} category)
    list(GET masks ${m} mask)
    list(GET groups ${g} group)
    set(${out} " ${category} ${mask} ${group}")
  endmacro()
  set(categories 1 2 4)
  set(masks 0xFFFFFFFF 0xfffffffd 5 4294967295)
  set(groups 0 0 1 -1)
  math(EXPR last "${frames} - 1")
  foreach(frame RANGE ${last})
    string(APPEND text "frame\n")
    next_random(9 ops)
    if(ops EQUAL 0)
      continue()
    endif()
    foreach(op RANGE 1 ${ops})
      list(LENGTH live count)
      next_random(10 kind)
      if(count EQUAL 0 OR kind LESS 4)
        next_random(40 id)
        list(FIND live ${id} at)
        if(NOT at EQUAL -1)
          continue()
        endif()
        list(APPEND live ${id})
        next_random(4 static)
        set(command "+")
        if(static EQUAL 0)
          set(command "s")
        endif()
        random_box(box)
        set(filter "")
        if(filters)
          next_random(2 with)
          if(with EQUAL 1)
            random_filter(filter)
          endif()
        endif()
        string(APPEND text "${command} ${id}${box}${filter}\n")
      else()
        next_random(${count} at)
        list(GET live ${at} id)
        if(kind LESS 6)
          list(REMOVE_AT live ${at})
          string(APPEND text "- ${id}\n")
        elseif(kind LESS 9 OR NOT filters)
          random_box(box)
          string(APPEND text "m ${id}${box}\n")
        else()
          random_filter(filter)
          string(APPEND text "f ${id}${filter}\n")
        endif()
      endif()
    endforeach()
  endforeach()
  file(WRITE ${path} "${text}")
endfunction()

# Test 2: default filters, every CPU method, in place and rebuilt: the same as brute force.
generate_script(${WORK}/unfiltered.txt 7 120 FALSE)
run_tool(ref TRUE events --script ${WORK}/unfiltered.txt --method brute_force)
string(REGEX MATCHALL "\n[+]" began "${ref}")
string(REGEX MATCHALL "\n-" ended "${ref}")
list(LENGTH began began_count)
list(LENGTH ended ended_count)
if(NOT ref MATCHES "^frame 1\n" OR NOT ref MATCHES "\nframe 119\n" OR began_count LESS 20
   OR ended_count LESS 20)
  message(FATAL_ERROR "generated script: too few events (${began_count} began, ${ended_count} ended):\n${ref}")
endif()
foreach(method ${script_methods})
  set(modes "" --rebuild)
  if(method STREQUAL gpu_lbvh)
    set(modes "")
  endif()
  foreach(mode ${modes})
    run_tool(got TRUE events --script ${WORK}/unfiltered.txt --method ${method} ${mode})
    expect_equal("${got}" "${ref}" "events --script --method ${method} ${mode} differs from brute_force")
  endforeach()
endforeach()
run_tool(ignored TRUE events --script ${WORK}/unfiltered.txt --method brute_force --out ${WORK}/out.txt)
file(READ ${WORK}/out.txt got)
expect_equal("${got}" "${ref}" "events --script --out differs from standard output")

# Test 3: a small script worked out by hand: statics never pair, touching faces overlap, a
# filter change, a negative group, a body removed and added under the same id in one frame
# (its pairs end and begin), everything removed, an empty frame, events in the script's ids
# sorted (its handles run in another order).
file(WRITE ${WORK}/hand.txt [=[
# A ground and a wall (static), bodies that come, go, move and change filters.
frame
s 100 -10 -1 -10 10 0 10    # ground
s 101 -10 -1 -10 -9 5 10    # wall: overlaps the ground, but static bodies never pair
+ 7 0 0 0 1 1 1             # rests on the ground (touching faces overlap)
+ 3 0.5 0.5 0.5 1.5 1.5 1.5
+ 42 5 5 5 6 6 6

frame
m 42 0.9 0.9 0.9 2 2 2      # 42 reaches 7
- 3
frame
f 7 2 0xFFFFFFFD 0          # 7: category 2, meets all but category 2
+ 3 0.8 0.8 0.8 1.6 1.6 1.6 2 0xFFFFFFFF 0   # category 2: overlaps 7, filtered out
m 101 -1 -1 -10 0 5 10      # the wall moves next to 7
+ 8 -0.5 0 0 0 1 1 1 0xffffffff -1
frame
f 7 2 0xFFFFFFFD -1         # the same negative group as 8: never meet
- 42
+ 42 0.9 0.9 0.9 2 2 2      # removed and added in one frame: its pairs end and begin
frame
- 7
- 8
- 3
- 42
frame
+ 1 0 -0.5 0 1 0.5 1
+ 2 0.5 0 0 1.5 1 1 4 4 0   # meets category 4 only
frame
frame
f 2 4 0xFFFFFFFF 0
]=])
set(hand_expected [=[
frame 1
+ 7 42
- 3 7
frame 2
+ 3 42
+ 7 8
+ 7 101
+ 8 100
+ 8 101
frame 3
+ 3 42
+ 7 42
- 3 42
- 7 8
- 7 42
frame 4
- 3 42
- 7 42
- 7 100
- 7 101
- 8 100
- 8 101
frame 5
+ 1 100
+ 1 101
frame 6
frame 7
+ 1 2
+ 2 100
]=])
# Runs as METHOD[,OPTION]: a list of lists would flatten.
set(hand_runs brute_force brute_force,--rebuild dynamic_aabb_tree sweep_and_prune
    dynamic_aabb_tree,--rebuild)
if(GPU)
  list(APPEND hand_runs gpu_lbvh)
endif()
foreach(run_spec ${hand_runs})
  string(REPLACE "," ";" run "${run_spec}")
  run_tool(got TRUE events --script ${WORK}/hand.txt --method ${run})
  expect_equal("${got}" "${hand_expected}" "events --script hand.txt --method ${run}:\n${got}\nexpected:\n${hand_expected}")
endforeach()

# Test 4: random filters and filter changes: every CPU method prints brute force's events.
generate_script(${WORK}/filtered.txt 11 120 TRUE)
run_tool(ref TRUE events --script ${WORK}/filtered.txt --method brute_force)
if(NOT ref MATCHES "\n[+] [0-9]+ [0-9]+\n")
  message(FATAL_ERROR "generated script with filters: no events:\n${ref}")
endif()
foreach(method ${script_methods})
  run_tool(got TRUE events --script ${WORK}/filtered.txt --method ${method})
  expect_equal("${got}" "${ref}" "events --script (filters) --method ${method} differs from brute_force")
endforeach()

message(STATUS "cli_events_script: all checks passed")
