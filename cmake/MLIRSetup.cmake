# Finds Debian's MLIR 22 and sets up TableGen and the add_mlir_* helpers.
# Everything links the shared libMLIR.so / libLLVM.so: a tool links in seconds
# instead of ~30 s and 130 MB against the static archives.
find_package(MLIR REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
message(STATUS "Using MLIR from ${MLIR_DIR}")

set(MLIR_LINK_MLIR_DYLIB ON)
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")

include(TableGen)
include(AddLLVM)
include(AddMLIR)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})
add_definitions(${LLVM_DEFINITIONS})

find_program(MOECOMM_LIT lit HINTS ${LLVM_TOOLS_BINARY_DIR} /usr/lib/llvm-22/bin REQUIRED)
set(LLVM_EXTERNAL_LIT ${MOECOMM_LIT})
set(MOECOMM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})
find_program(MOECOMM_MLIR_TRANSLATE mlir-translate HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
find_program(MOECOMM_LLC llc HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/AddMoECommGraph.cmake)

