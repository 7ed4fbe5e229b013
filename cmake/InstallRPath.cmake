# Run paths of the installed programs and shared libraries, so that they
# start without LD_LIBRARY_PATH from any prefix:
#  * our own libraries (libmoecomm_runtime.so) through $ORIGIN, relative to
#    the program, so the installed tree can be moved;
#  * everything else they link from outside this build (LLVM/MLIR's
#    libMLIR.so and libLLVM.so, CUDA's and NCCL's libraries) where this build
#    found it (CMAKE_INSTALL_RPATH_USE_LINK_PATH; the system's default
#    directories are left out).
# Setting CMAKE_INSTALL_RPATH also keeps LLVM's llvm_setup_rpath (called by
# add_llvm_executable for moecomm-opt) from installing its own, which is
# $ORIGIN/../lib only and cannot find libMLIR.so. Include this before any
# target is created: the variables initialize each target's properties.
file(RELATIVE_PATH MOECOMM_INSTALL_BIN_TO_LIB
  ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set(CMAKE_INSTALL_RPATH "\$ORIGIN/${MOECOMM_INSTALL_BIN_TO_LIB}")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
