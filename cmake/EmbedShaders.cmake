# Compiles GLSL compute shaders with glslc at build time and embeds the SPIR-V in the library
# as uint32_t arrays (no shader file is read at run time). Each shader STAGE/NAME.comp becomes
# `broadphase::shaders::NAME` (a std::span<const uint32_t>) declared in shaders.hpp. Each NAME
# in the list `split_names` is compiled a second time with -DTREE_SPLIT as NAME_split: its tree
# arrays split over several descriptors (shaders/lbvh/tree_parts.glsl). shaders.hpp also declares
# `broadphase::shaders::all_kernels`, every embedded kernel by name (all_kernels.cpp).
function(broadphase_embed_shaders out_var split_names)
  set(gen_dir ${PROJECT_BINARY_DIR}/shaders)
  file(MAKE_DIRECTORY ${gen_dir})
  set(sources "")
  set(decls "")
  set(entries "")
  set(variants "")
  # By kernel name, whatever stage folder holds the shader: the order of all_kernels.
  set(named "")
  foreach(shader ${ARGN})
    get_filename_component(file_name ${shader} NAME)
    list(APPEND named "${file_name}|${shader}")
  endforeach()
  list(SORT named)
  foreach(entry ${named})
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 1 shader)
    get_filename_component(name ${shader} NAME_WE)
    list(APPEND variants "${shader}|${name}|")
    if(name IN_LIST split_names)
      list(APPEND variants "${shader}|${name}_split|-DTREE_SPLIT")
    endif()
  endforeach()
  foreach(variant ${variants})
    string(REPLACE "|" ";" parts "${variant}")
    list(GET parts 0 shader)
    list(GET parts 1 name)
    list(GET parts 2 define)
    set(defines "")
    if(define)
      set(defines ${define})
    endif()
    set(spv_inc ${gen_dir}/${name}.spv.inc)
    set(cpp ${gen_dir}/${name}.spv.cpp)
    add_custom_command(
      OUTPUT ${spv_inc}
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -mfmt=num ${defines}
              -I ${PROJECT_SOURCE_DIR}/include -I ${PROJECT_SOURCE_DIR}/shaders
              -MD -MF ${spv_inc}.d -o ${spv_inc} ${shader}
      DEPENDS ${shader}
      DEPFILE ${spv_inc}.d
      COMMENT "glslc ${name}.comp"
      VERBATIM)
    file(WRITE ${cpp}.in
      "#include \"shaders.hpp\"\nnamespace broadphase::shaders {\nstatic const std::uint32_t k_${name}[] = {\n#include \"${name}.spv.inc\"\n};\nconst std::span<const std::uint32_t> ${name}{k_${name}};\n}\n")
    configure_file(${cpp}.in ${cpp} COPYONLY)
    set_source_files_properties(${cpp} PROPERTIES OBJECT_DEPENDS ${spv_inc})
    list(APPEND sources ${cpp})
    string(APPEND decls "extern const std::span<const std::uint32_t> ${name};\n")
    string(APPEND entries "    {\"${name}\", ${name}},\n")
  endforeach()
  file(WRITE ${gen_dir}/shaders.hpp.in
    "// Generated: SPIR-V of every shaders/STAGE/*.comp, compiled by glslc at build time.\n#pragma once\n#include <cstdint>\n#include <span>\nnamespace broadphase::shaders {\n${decls}\n/// An embedded kernel: its name (NAME or NAME_split) and its SPIR-V.\nstruct EmbeddedKernel {\n    const char* name;\n    std::span<const std::uint32_t> spirv;\n};\n/// Every embedded kernel, in the order of the declarations above (filled before main: not for\n/// use by other static initializers).\nextern const std::span<const EmbeddedKernel> all_kernels;\n}\n")
  configure_file(${gen_dir}/shaders.hpp.in ${gen_dir}/shaders.hpp COPYONLY)
  # The registry: spans copied from the other generated files (initialized at start-up).
  set(registry ${gen_dir}/all_kernels.cpp)
  file(WRITE ${registry}.in
    "#include \"shaders.hpp\"\nnamespace broadphase::shaders {\nstatic const EmbeddedKernel k_all_kernels[] = {\n${entries}};\nconst std::span<const EmbeddedKernel> all_kernels{k_all_kernels};\n}\n")
  configure_file(${registry}.in ${registry} COPYONLY)
  list(APPEND sources ${registry})
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
