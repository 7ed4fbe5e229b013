# moecomm_add_aot_graph(<target> SOURCE <graph.mlir> [PIPELINE "<options>"])
#
# Compiles an MoE graph ahead of time: moecomm-opt --moecomm-pipeline=<options>
# (collective level -> LLVM dialect), mlir-translate --mlir-to-llvmir, llc to
# a position-independent object, linked into the shared library <target>
# together with moecomm_runtime. Functions with `llvm.emit_c_interface` are
# callable from C as _mlir_ciface_<name> (moecomm-run --aot runs them). The
# graph's text is exported as moecomm_aot_graph_source(_size), which
# moecomm-run --aot checks the graph it is given against.
# The command-line equivalent is `moecomm-aot` (tools/moecomm-aot).
#
# Works in this build and from find_package(MoEComm) alike: it uses the
# targets by their exported names (MoEComm::moecomm-opt and
# MoEComm::moecomm_runtime, aliases in this build) and MOECOMM_MLIR_TRANSLATE
# and MOECOMM_LLC (cmake/MLIRSetup.cmake, or MoECommConfig.cmake).
set(_MOECOMM_ADD_AOT_GRAPH_DIR ${CMAKE_CURRENT_LIST_DIR})
function(moecomm_add_aot_graph target)
  cmake_parse_arguments(ARG "" "SOURCE;PIPELINE" "" ${ARGN})
  if(NOT ARG_SOURCE)
    message(FATAL_ERROR "moecomm_add_aot_graph(${target}): SOURCE is required")
  endif()
  get_filename_component(source ${ARG_SOURCE} ABSOLUTE)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}.aot)
  add_custom_command(
    OUTPUT ${dir}/${target}.o
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND MoEComm::moecomm-opt ${source}
            "--moecomm-pipeline=${ARG_PIPELINE}" -o ${dir}/${target}.llvm.mlir
    COMMAND ${MOECOMM_MLIR_TRANSLATE} --mlir-to-llvmir ${dir}/${target}.llvm.mlir
            -o ${dir}/${target}.ll
    COMMAND ${MOECOMM_LLC} -O2 -filetype=obj -relocation-model=pic
            ${dir}/${target}.ll -o ${dir}/${target}.o
    DEPENDS MoEComm::moecomm-opt ${source}
    COMMENT "Compiling MoE graph ${ARG_SOURCE} ahead of time (${target})"
    VERBATIM)
  # The graph's text goes into the library too (EmbedGraphSource.cmake):
  # moecomm-run --aot checks the graph it is given against it.
  add_custom_command(
    OUTPUT ${dir}/${target}.source.o
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${CMAKE_COMMAND} -DSOURCE=${source}
            -DOUTPUT=${dir}/${target}.source.ll
            -P ${_MOECOMM_ADD_AOT_GRAPH_DIR}/EmbedGraphSource.cmake
    COMMAND ${MOECOMM_LLC} -filetype=obj -relocation-model=pic
            ${dir}/${target}.source.ll -o ${dir}/${target}.source.o
    DEPENDS ${source} ${_MOECOMM_ADD_AOT_GRAPH_DIR}/EmbedGraphSource.cmake
    COMMENT "Embedding MoE graph ${ARG_SOURCE} (${target})"
    VERBATIM)
  add_library(${target} SHARED ${dir}/${target}.o ${dir}/${target}.source.o)
  # Only an object file: link with the C compiler's driver, or C++'s in a
  # project without C (the runtime brings its own C++ dependencies).
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST languages)
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  else()
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  endif()
  target_link_libraries(${target} PRIVATE MoEComm::moecomm_runtime)
  # No run path to the runtime, in the build tree either: the library is
  # loaded into a process that already holds the runtime (moecomm-run, or any
  # program, which must link it to bind a communicator) and the loader
  # matches it by soname; a recorded directory would tie the library to one
  # build or installation prefix (as moecomm-aot's libraries are not).
  set_target_properties(${target} PROPERTIES SKIP_BUILD_RPATH ON)
endfunction()
