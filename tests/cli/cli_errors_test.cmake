# The `broadphase` tool never fakes success (issue 14): bad options, missing required options,
# failed writes, inputs that are not regular files, out-of-range numbers and running out of
# memory all end with exit 2 and a message saying what was wrong, never exit 0 and never an
# abort. CPU methods only, so that it runs the same with or without a GPU build.
# Run as: cmake -DTOOL=... -DWORK=... [-DSANITIZE=address,...] -P cli_errors_test.cmake
file(MAKE_DIRECTORY ${WORK})

# check(NAME EXPECT_RC REGEX args...): runs the tool, asserts its exit code and that stdout +
# stderr match REGEX (empty: anything).
function(check name expect_rc regex)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 120)
  if(NOT "${rc}" STREQUAL "${expect_rc}")
    message(FATAL_ERROR "${name}: broadphase ${ARGN} exited ${rc}, expected ${expect_rc}:\n${out}\n${err}")
  endif()
  if(regex AND NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "${name}: broadphase ${ARGN}: output does not match '${regex}':\n${out}\n${err}")
  endif()
endfunction()

# check_stdout_full(NAME args...): standard output on a full disk: non-zero, with a message.
function(check_stdout_full name)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_FILE /dev/full
                  ERROR_VARIABLE err TIMEOUT 120)
  if("${rc}" STREQUAL "0" OR NOT err MATCHES "cannot write standard output")
    message(FATAL_ERROR "${name}: broadphase ${ARGN} > /dev/full exited ${rc}: '${err}'")
  endif()
endfunction()

set(camera 1.3,0.9,1.8,0.6,0.5,0.5,0,1,0,30,1.5,0.01,10)
file(WRITE ${WORK}/rays.txt "-1 0.5 0.5 1 0 0 10\n0.5 -1 0.5 0 1 0 inf\n")

# Test 1: a misspelled or unknown option is an error naming it and the command's options.
check("misspelled --scen" 2 "unknown option '--scen'.*did you mean --scene.*--method"
      pairs --scen x.txt --method brute_force)
check("unknown option" 2 "unknown option '--frobnicate'" validate --frobnicate)
check("bench option" 2 "unknown option '--repeats'.*--repeat R"
      bench --scene uniform:100 --repeats 3)
check("bench cpu option" 2 "unknown option '--scene'" bench cpu --scene uniform:100)
check("bench unknown command" 2 "unknown option '--bogus'" bench --bogus)
check("bench old modes" 2 "--cpu and --frames cannot be combined" bench --cpu --frames 3)
check("stray argument" 2 "unexpected argument 'extra'"
      pairs --scene uniform:10 --method brute_force extra)
check("repeated option" 2 "given twice"
      pairs --scene uniform:10 --scene uniform:20 --method brute_force)
check("missing value" 2 "--out needs a value" pairs --scene uniform:10 --method brute_force --out)
check("flag with a value" 2 "--validation takes no value"
      pairs --scene uniform:10 --method brute_force --validation=yes)
check("gpu option on a CPU method" 2 "--policy is for --method gpu_lbvh"
      events --scenes uniform:100 --frames 2 --method kd_tree --policy refit)
check("--code on a CPU method" 2 "--code is for --method gpu_lbvh only, not kd_tree"
      pairs --scene uniform:100 --method kd_tree --code morton63)
check("events: scenes only after --scenes" 2 "unexpected argument 'uniform:10'"
      events uniform:10 --scenes uniform:10 --method kd_tree)

# Test 2: required options; no silent default scene (validate alone runs the demo and says so).
check("pairs without --scene" 2 "--scene S is required" pairs --method brute_force)
check("pairs without --method" 2 "--method M is required" pairs --scene uniform:10)
check("query without --boxes" 2 "--boxes Q is required" query --scene uniform:10 --method kd_tree)
check("raycast without --scene" 2 "--scene S is required" raycast --rays ${WORK}/rays.txt --method kd_tree)
check("cull without --scene" 2 "--scene S is required" cull --camera ${camera})
check("events without --method" 2 "--method M is required" events --scenes uniform:10 --frames 2)
check("scene without --scene" 2 "--scene S is required" scene)
check("bench without --scene" 2 "--scene S is required" bench frames --frames 2)
check("validate demo" 0 "no --scene given: using the default demo scene uniform:20000.*all methods agree"
      validate --reference kd_tree --methods octree)

# Test 3: every write is checked: --out on a full disk, and standard output on one.
file(WRITE ${WORK}/a_file "")
check("bench --out-dir under a file" 2 "cannot create '${WORK}/a_file/plots'"
      bench cpu --scenes uniform --sizes 100 --methods kd_tree --out-dir ${WORK}/a_file/plots)
check("pairs --out" 2 "cannot write '/dev/full'"
      pairs --scene uniform:1000 --method kd_tree --out /dev/full)
check("query --out" 2 "cannot write '/dev/full'"
      query --scene uniform:1000 --boxes uniform:20 --method kd_tree --out /dev/full)
check("raycast --out" 2 "cannot write '/dev/full'"
      raycast --scene uniform:1000 --rays ${WORK}/rays.txt --method kd_tree --out /dev/full)
check("events --out" 2 "cannot write '/dev/full'"
      events --scenes uniform:500 --frames 3 --method kd_tree --out /dev/full)
check("cull --out" 2 "cannot write '/dev/full'"
      cull --scene uniform:1000 --camera ${camera} --method brute_force --out /dev/full)
check("validate --out" 2 "cannot write '/dev/full'"
      validate --scene uniform:500 --methods kd_tree --out /dev/full)
check("scene --out" 2 "cannot write '/dev/full'" scene --scene uniform:100 --out /dev/full)
check("--out in no folder" 2 "cannot write '${WORK}/no/such/dir/p.txt'"
      pairs --scene uniform:100 --method kd_tree --out ${WORK}/no/such/dir/p.txt)
check_stdout_full("pairs > /dev/full" pairs --scene uniform:1000 --method kd_tree)
check_stdout_full("validate > /dev/full" validate --scene uniform:500 --methods kd_tree)
check_stdout_full("events > /dev/full" events --scenes uniform:500 --frames 3 --method kd_tree)
check_stdout_full("scene > /dev/full" scene --scene uniform:100)
check_stdout_full("--help > /dev/full" --help)
# A command that fails does not leave a half-written --out file behind.
check("no file on failure" 2 "" pairs --scene uniform:100 --method no_such --out ${WORK}/never.txt)
if(EXISTS ${WORK}/never.txt)
  message(FATAL_ERROR "a failed pairs left ${WORK}/never.txt behind")
endif()
# and a good one writes what stdout would have shown.
check("pairs --out ok" 0 "" pairs --scene uniform:300 --method kd_tree --out ${WORK}/p.txt)
execute_process(COMMAND ${TOOL} pairs --scene uniform:300 --method brute_force OUTPUT_VARIABLE ref)
file(READ ${WORK}/p.txt got)
if(NOT got STREQUAL ref OR got STREQUAL "")
  message(FATAL_ERROR "pairs --out wrote '${got}', stdout shows '${ref}'")
endif()

# Test 4: inputs that are not regular files are refused, naming the file.
check("--rays a directory" 2 "'${WORK}': a directory, not a regular file"
      raycast --scene uniform:100 --rays ${WORK} --method kd_tree)
check("--rays /dev/zero" 2 "'/dev/zero': a character device, not a regular file"
      raycast --scene uniform:100 --rays /dev/zero --method kd_tree)
check("--scene /dev/zero" 2 "'/dev/zero': a character device" pairs --scene /dev/zero --method kd_tree)
check("--boxes a directory" 2 "a directory" query --scene uniform:100 --boxes ${WORK} --method kd_tree)
find_program(MKFIFO mkfifo)
if(MKFIFO)
  file(REMOVE ${WORK}/fifo)
  execute_process(COMMAND ${MKFIFO} ${WORK}/fifo)
  check("--scene a FIFO" 2 "a FIFO, not a regular file" pairs --scene ${WORK}/fifo --method kd_tree)
endif()

# Test 5: numbers are parsed strictly and range-checked.
check("--frames too many" 2 "99999999999 is out of range \\(allowed: \\[1, 100000\\]\\)"
      events --scenes uniform:100 --frames 99999999999 --method kd_tree)
check("--frames garbage" 2 "'3x' is not an integer" events --scenes uniform:100 --frames 3x --method kd_tree)
check("--frames 0" 2 "out of range" events --scenes uniform:100 --frames 0 --method kd_tree)
check("bench cpu --sizes" 2 "'abc' is not an integer" bench cpu --sizes 10,abc)
check("bench cpu --max-seconds" 2 "--max-seconds: 'nan' is not a finite number"
      bench cpu --max-seconds nan)
check("bench rays --rays" 2 "" bench rays --rays 0 --scene uniform:100)
check("bench --repeat" 2 "" bench --scene uniform:100 --repeat 5x)

# Test 6: validate --methods with an unknown method is a usage error, not a disagreement.
check("validate unknown method" 2 "unknown method 'nosuch'"
      validate --scene uniform:100 --methods octree,nosuch)
check("validate unknown reference" 2 "unknown method 'nope'"
      validate --scene uniform:100 --reference nope)

# Test 7: memory. A generator count that cannot fit is refused up front; 100000 identical boxes
# (5e9 pairs, 40 GB) under a 1.5 GB address space end in an out-of-memory error naming the
# method, not std::bad_alloc's abort (exit 134). Sanitizers reserve terabytes of address space
# and abort on allocation failure instead of throwing, so this part needs a plain build.
if(NOT SANITIZE)
  string(REPEAT "0 0 0 1 1 1\n" 100000 same)
  file(WRITE ${WORK}/identical.txt "${same}")
  foreach(method kd_tree sweep_and_prune)
    execute_process(COMMAND sh -c "ulimit -v 1500000 && exec \"$0\" \"$@\"" ${TOOL}
                    pairs --scene ${WORK}/identical.txt --method ${method}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(NOT rc EQUAL 2 OR NOT err MATCHES "out of memory finding the pairs of ${method} over 100000 boxes")
      message(FATAL_ERROR "pairs --method ${method} on identical boxes under ulimit -v: exit ${rc}: '${err}'")
    endif()
  endforeach()
  execute_process(COMMAND sh -c "ulimit -v 1500000 && exec \"$0\" \"$@\"" ${TOOL}
                  pairs --scene uniform:600000000 --method kd_tree
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "uniform:600000000: 600000000 boxes are 14.4 GB.*more than")
    message(FATAL_ERROR "pairs on uniform:600000000 under ulimit -v: exit ${rc}: '${err}'")
  endif()
endif()

# Test 8: --help alone lists the commands, the scene syntax and every method of the registry;
# COMMAND --help (or help COMMAND) prints that command's options and no other's; exit 0.
check("--help" 0 "usage: broadphase \\[options\\] COMMAND.*pairs.*validate.*bench.*Methods: brute_force.*lbvh"
      --help)
check("help" 0 "usage: broadphase \\[options\\] COMMAND" help)
check("no command" 2 "usage: broadphase \\[options\\] COMMAND")
check("unknown command" 2 "unknown command 'paris' \\(did you mean pairs\\?\\)" paris --scene uniform:10)
# check_help(COMMAND HAS LACKS): COMMAND --help and help COMMAND name HAS, never LACKS.
function(check_help command has lacks)
  foreach(form "${command};--help" "help;${command}")
    execute_process(COMMAND ${TOOL} ${form} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "usage: broadphase ${command} \\[options\\]"
       OR NOT out MATCHES "${has}" OR out MATCHES "${lacks}")
      message(FATAL_ERROR "broadphase ${form} (exit ${rc}) should name ${has}, not ${lacks}:\n${out}${err}")
    endif()
  endforeach()
endfunction()
check_help(pairs "--against B" "--frames|--camera|--max-seconds")
check_help(events "--scenes S0 S1.*--rebuild-ratio R" "--against|--boxes|--sizes")
check_help(cull "--camera C.*--order exact\\|approx" "--methods|--frames|--code")
check_help(bench "commands:.*pairs.*cull.*frames.*rays.*cpu" "--max-seconds|--seed|--pair-stack")
# check_bench_help(COMMAND HAS LACKS): bench COMMAND --help names HAS, never LACKS.
function(check_bench_help command has lacks)
  execute_process(COMMAND ${TOOL} bench ${command} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "usage: broadphase bench ${command} \\[options\\]"
     OR NOT out MATCHES "${has}" OR out MATCHES "${lacks}")
    message(FATAL_ERROR "broadphase bench ${command} --help (exit ${rc}) should name ${has}, not ${lacks}:\n${out}${err}")
  endif()
endfunction()
check_bench_help(pairs "--pair-append automatic\\|subgroup\\|atomic.*--pair-budget N" "--camera|--seed|--sizes")
check_bench_help(cull "--camera C.*--order exact\\|approx.*--views V" "--code|--frames|--sizes")
check_bench_help(frames "--frames F.*--policy ratio\\|refit\\|rebuild.*--back-to-back" "--repeat|--seed|--camera")
check_bench_help(rays "--rays R.*--seed X.*--query-budget N" "--frames|--camera|--pair-stack")
check_bench_help(cpu "--max-seconds S.*--out-dir DIR" "--scene |--device|--json")
check_help(validate "--reference M.*brute_force" "--camera|--frames|--against")
check_stdout_full("pairs --help > /dev/full" pairs --help)

# Test 9: values are checked when the command line is read, each error naming the option:
# numbers whole and in range, never read as octal, and names of methods, codes and policies
# (with the nearest known name for a misspelling).
check("--repeat 3x" 2 "--repeat: '3x' is not an integer" bench --scene uniform:100 --repeat 3x)
check("--repeat -5" 2 "--repeat: -5 is out of range \\(allowed: \\[1, 1000\\]\\)"
      bench --scene uniform:100 --repeat -5)
check("--frames abc" 2 "--frames: 'abc' is not an integer" events --scenes uniform:10 --frames abc --method kd_tree)
check("bench frames --frames range" 2 "--frames: 20000 is out of range \\(allowed: \\[1, 10000\\]\\)"
      bench frames --frames 20000 --scene uniform:10)
check("--seed" 2 "--seed: 4294967296 is out of range" bench rays --rays 10 --scene uniform:10 --seed 4294967296)
check("--rebuild-ratio 0" 2 "--rebuild-ratio: 0 is out of range"
      events --scenes uniform:10 --frames 2 --method gpu_lbvh --rebuild-ratio 0)
check("--max-seconds 1e7" 2 "--max-seconds: 1e7 is out of range" bench cpu --max-seconds 1e7)
check("--sizes 0" 2 "--sizes: 0 is out of range" bench cpu --sizes 0)
check("--method misspelled" 2 "--method: unknown method 'kd_tre' \\(did you mean kd_tree\\?\\)"
      pairs --scene uniform:10 --method kd_tre)
check("--code" 2 "--code: unknown code 'morton64' \\(did you mean morton63\\?\\)"
      pairs --scene uniform:10 --method gpu_lbvh --code morton64)
check("--policy" 2 "--policy: unknown policy 'always'"
      events --scenes uniform:10 --frames 2 --method gpu_lbvh --policy always)
check("--order" 2 "--order: unknown order 'near'" cull --scene uniform:10 --camera ${camera} --order near)
check("cull --method" 2 "unknown cull method 'kd_tree'" cull --scene uniform:10 --camera ${camera} --method kd_tree)
check("--camera" 2 "--camera: .*13 comma-separated numbers" cull --scene uniform:10 --camera 1,2,3)
check("--scenes generator" 2 "--scenes: unknown generator 'unifrom' \\(did you mean uniform\\?\\)"
      bench cpu --scenes unifrom)
check("bench cpu --methods gpu" 2 "--methods: unknown method 'gpu_lbvh'" bench cpu --methods gpu_lbvh)
check("bench rays option" 2 "unknown option '--no-refine'.*rays takes.*--query-budget N"
      bench rays --rays 10 --scene uniform:10 --no-refine)
check("--sort-path" 2 "--sort-path: unknown sort path 'onesweeep' \\(did you mean onesweep\\?\\)"
      bench pairs --scene uniform:10 --sort-path onesweeep)
# The previous release's spellings (bench --cpu, --cull, --frames F, --rays R) still work, each
# with one line on standard error naming the new spelling (the output checked is standard
# output, then standard error).
check("old bench --cpu" 0 "\\| uniform \\| 100 \\|.*`bench --cpu` is deprecated.*use `bench cpu`"
      bench --cpu --scenes uniform --sizes 100 --methods kd_tree --out-dir ${WORK}/old_plots)
check("old bench --frames" 2 "`bench --frames` is deprecated.*use `bench frames --frames`.*--scene S is required"
      bench --frames 2)
check("old bench --rays" 2 "`bench --rays` is deprecated.*use `bench rays --rays`.*--rays: 0 is out of range"
      bench --rays 0 --scene uniform:10)
check("old bench --cull" 2 "`bench --cull` is deprecated.*use `bench cull`.*--order: unknown order 'near'"
      bench --cull --scene uniform:10 --order near)
# Leading zeros are decimal: 010 frames are ten frames (octal would stop at frame 7).
check("--frames 010" 0 "\nframe 9\n" events --scenes uniform:200 --frames 010 --method kd_tree)

# Test 10: the version, from the version header generated from the project's version.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../../CMakeLists.txt project_line
     REGEX "^project\\(broadphase VERSION [0-9.]+")
string(REGEX REPLACE ".*VERSION ([0-9.]+).*" "\\1" project_version "${project_line}")
string(REPLACE "." "\\." version_regex "${project_version}")
check("--version" 0 "^broadphase ${version_regex} \\(" --version)
check("version" 0 "^broadphase ${version_regex} \\(" version)

# Test 11: the tool names a mistake with the library's words. A --scene that is no file and reads
# as NAME:COUNT with an unknown NAME gets generate_scene's "unknown generator" (with the known
# names), as the C++ and Python APIs say it; a path that looks like a file still "cannot open".
check("--scene unknown generator" 2
      "^broadphase: --scene: unknown generator 'unifrom' \\(known: uniform, clustered, [a-z_, ]+\\)\n$"
      pairs --method kd_tree --scene unifrom:100)
check("--scene unknown generator, seed" 2 "--scene: unknown generator 'clusterd' \\(known: "
      pairs --method kd_tree --scene clusterd:100:7)
check("--boxes unknown generator" 2 "--boxes: unknown generator 'unifrom' \\(known: "
      query --scene uniform:10 --boxes unifrom:5 --method kd_tree)
check("--against unknown generator" 2 "--against: unknown generator 'unifrom' \\(known: "
      pairs --scene uniform:10 --against unifrom:5 --method kd_tree)
check("--scenes unknown generator" 2 "--scenes: unknown generator 'unifrom' \\(known: "
      events --scenes unifrom:10 --frames 2 --method kd_tree)
check("--scene a missing file" 2 "cannot open '${WORK}/no_such.txt': No such file"
      pairs --method kd_tree --scene ${WORK}/no_such.txt)
check("--scene a missing file with a colon" 2 "cannot open 'boxes:1.txt': No such file"
      pairs --method kd_tree --scene boxes:1.txt)
check("--scene a missing file in a folder" 2 "cannot open 'data:1/boxes': No such file"
      pairs --method kd_tree --scene data:1/boxes)
# A file whose name reads like a generator spec is read as the file it is.
file(MAKE_DIRECTORY ${WORK}/named)
file(WRITE ${WORK}/named/unifrom:2 "0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n")
execute_process(COMMAND ${TOOL} pairs --method kd_tree --scene unifrom:2 WORKING_DIRECTORY ${WORK}/named
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "0 1\n")
  message(FATAL_ERROR "pairs --scene unifrom:2 (a file) exited ${rc}: '${out}' '${err}'")
endif()

# Test 12: an empty scene (a generator of 0 boxes, an empty file) is no error, and not silent
# either: exit 0, the empty results, and one note on standard error naming the scene.
file(WRITE ${WORK}/empty.txt "# no boxes\n")
# check_empty(NAME OPTION SPEC STDOUT args...): exit 0, standard output STDOUT exactly, and
# standard error the one note on OPTION SPEC.
function(check_empty name option spec expect_out)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 120)
  set(note "broadphase: ${option} ${spec} has no boxes: an empty scene, so the results are empty\n")
  if(NOT rc EQUAL 0 OR NOT out STREQUAL "${expect_out}" OR NOT err STREQUAL "${note}")
    message(FATAL_ERROR "${name}: broadphase ${ARGN} exited ${rc}, expected 0, '${expect_out}' "
                        "and the note '${note}':\n'${out}'\n'${err}'")
  endif()
endfunction()
check_empty("pairs uniform:0" --scene uniform:0 "" pairs --scene uniform:0 --method kd_tree)
check_empty("pairs empty file" --scene ${WORK}/empty.txt ""
            pairs --scene ${WORK}/empty.txt --method sweep_and_prune)
check_empty("pairs --against empty" --against uniform:0 ""
            pairs --scene uniform:10 --against uniform:0 --method kd_tree)
check_empty("query empty --boxes" --boxes ${WORK}/empty.txt ""
            query --scene uniform:10 --boxes ${WORK}/empty.txt --method kd_tree)
check_empty("query empty --scene" --scene uniform:0 "0:\n1:\n"
            query --scene uniform:0 --boxes uniform:2 --method kd_tree)
check_empty("raycast empty --scene" --scene ${WORK}/empty.txt "0: -\n1: -\n"
            raycast --scene ${WORK}/empty.txt --rays ${WORK}/rays.txt --method kd_tree)
check_empty("cull empty --scene" --scene uniform:0 ""
            cull --scene uniform:0 --camera ${camera} --method brute_force)
check_empty("events empty --scenes" --scenes uniform:0 "frame 1\nframe 2\n"
            events --scenes uniform:0 --frames 3 --method kd_tree)
check_empty("scene uniform:0" --scene uniform:0 "" scene --scene uniform:0)
check("validate empty" 0 "kd_tree +0 pairs .*all methods agree.*broadphase: --scene uniform:0 has no boxes"
      validate --scene uniform:0 --methods kd_tree)

# Test 13: --out - is standard output, for every command that takes --out: the same text as
# without --out, no file named "-", and no "wrote ..." line.
file(REMOVE_RECURSE ${WORK}/dash)
file(MAKE_DIRECTORY ${WORK}/dash)
foreach(command_line
    "scene;--scene;uniform:3"
    "pairs;--scene;uniform:300;--method;kd_tree"
    "pairs;--scene;uniform:300;--against;uniform:30;--method;kd_tree"
    "query;--scene;uniform:300;--boxes;uniform:5;--method;kd_tree"
    "raycast;--scene;uniform:300;--rays;${WORK}/rays.txt;--method;kd_tree"
    "cull;--scene;uniform:300;--camera;${camera};--method;brute_force"
    "events;--scenes;uniform:300;--frames;3;--method;kd_tree")
  execute_process(COMMAND ${TOOL} ${command_line} RESULT_VARIABLE rc OUTPUT_VARIABLE want)
  execute_process(COMMAND ${TOOL} ${command_line} --out - WORKING_DIRECTORY ${WORK}/dash
                  RESULT_VARIABLE rc_dash OUTPUT_VARIABLE got ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT rc_dash EQUAL 0 OR want STREQUAL "" OR NOT got STREQUAL want
     OR NOT err STREQUAL "" OR EXISTS ${WORK}/dash/-)
    message(FATAL_ERROR "broadphase ${command_line} --out - exited ${rc_dash}, wrote '${got}' "
                        "(without --out: '${want}'), said '${err}'")
  endif()
endforeach()
execute_process(COMMAND ${TOOL} validate --scene uniform:300 --methods kd_tree --out -
                WORKING_DIRECTORY ${WORK}/dash RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "scene uniform:300: 300 boxes.*all methods agree"
   OR EXISTS ${WORK}/dash/-)
  message(FATAL_ERROR "validate --out - exited ${rc}: '${out}'")
endif()
check_stdout_full("scene --out - > /dev/full" scene --scene uniform:100 --out -)
check_stdout_full("pairs --out - > /dev/full" pairs --scene uniform:1000 --method kd_tree --out -)
check_help(pairs "--out FILE +write to FILE instead of standard output;[ \n]+-[ \n]+is[ \n]+standard"
           "--frames")

# Test 13b: bench cpu --table - writes the table to standard output once, where it is printed
# anyway as it is measured.
execute_process(COMMAND ${TOOL} bench cpu --scenes uniform --sizes 100 --methods kd_tree
                        --table - --out-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET)
string(REGEX MATCHALL "\\| scene \\| N \\| pairs \\|" headers "${out}")
list(LENGTH headers tables)
if(NOT rc EQUAL 0 OR NOT tables EQUAL 1)
  message(FATAL_ERROR "bench cpu --table -: exit ${rc}, ${tables} tables:\n${out}")
endif()

# Test 14: the examples read their command lines the same way (when they are built beside the
# tool): --help exits 0, a bad number or an unknown option exits 2 naming it, before any GPU work.
get_filename_component(build_dir ${TOOL} DIRECTORY)
foreach(example renderer/broadphase_renderer simulation/broadphase_simulation)
  if(EXISTS ${build_dir}/examples/${example})
    set(TOOL ${build_dir}/examples/${example})
    check("${example} --help" 0 "usage: broadphase_.* \\[options\\].*--device" --help)
    check("${example} unknown" 2 "unknown option '--devise' \\(did you mean --device\\?\\)" --devise 0)
    if(example MATCHES "renderer")
      check("${example} --size" 2 "--size: '12x' is not an integer" --size 12x)
      check("${example} --camera" 2 "--camera: .*13 comma-separated numbers" --camera 1,2)
    else()
      check("${example} --boxes" 2 "--boxes: -5 is out of range" --boxes -5)
      check("${example} --frames" 2 "--frames: 'abc' is not an integer" --frames abc)
      check("${example} twice" 2 "--batch is given twice" --batch 2 --batch 3)
      # --check's method is checked before any GPU work: a misspelling gets the nearest name,
      # a structure that cannot move boxes the library's reason.
      check("${example} --check misspelled" 2
            "--check: unknown method 'dynamic_aabb_tre' \\(did you mean dynamic_aabb_tree\\?\\)"
            --spawn 1 --check dynamic_aabb_tre)
      check("${example} --check static" 2
            "--check: .*method of the dynamic bodies, 'kd_tree', is not a dynamic structure"
            --spawn 1 --check kd_tree)
    endif()
  endif()
endforeach()
message(STATUS "cli_errors: all checks passed")
