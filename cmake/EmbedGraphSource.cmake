# cmake -DSOURCE=<graph.mlir> -DOUTPUT=<file.ll> -P EmbedGraphSource.cmake
#
# Writes LLVM IR defining the graph's text as the exported symbols
# moecomm_aot_graph_source ([N x i8]) and moecomm_aot_graph_source_size (i64
# N), linked into an ahead-of-time library (moecomm_add_aot_graph; moecomm-aot
# writes the same), so that moecomm-run --aot can check the graph it is given
# against the one the library was built from before calling it.
file(READ "${SOURCE}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
if(size EQUAL 0)
  set(init "zeroinitializer")
else()
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\\\1" escaped "${hex}")
  set(init "c\"${escaped}\"")
endif()
file(WRITE "${OUTPUT}"
  "@moecomm_aot_graph_source = constant [${size} x i8] ${init}\n"
  "@moecomm_aot_graph_source_size = constant i64 ${size}\n")
