# Installation and the CMake package: find_package(MoEComm) gives
#   MoEComm::MoECommDialect  the dialect library (C++), needs MLIR 22
#   MoEComm::MoECommPasses   passes and moecomm-pipeline (when built)
#   MoEComm::MoECommInitAll  mlir::moecomm::registerAllDialects/registerAllPasses
#                            (moecomm/InitAllDialects.h, InitAllPasses.h): the moecomm dialect and passes
#                            plus the upstream ones they use, as in moecomm-opt
#   MoEComm::MoEComm-C       the C API: dialect, passes, moecomm-pipeline
#                            (moecomm-c/*.h; one shared library, MLIR's C API
#                            inside, nothing else to link)
#   MoEComm::moecomm_runtime the runtime library (C ABI), when built
#   MoEComm::moecomm_mpi     the runtime plus MPI, for users of moecomm_mpi.h
#                            (when the MPI backend is built; the consuming
#                            project enables C, which FindMPI needs)
#   MoEComm::moecomm_reference  the single-process oracle (moecomm/Reference/Reference.h)
#   MoEComm::moecomm-opt     the tool, an imported executable
#   moecomm_add_aot_graph()  (AddMoECommGraph.cmake) compiles a graph at build
#                            time with MoEComm::moecomm-opt and the
#                            mlir-translate and llc this build used
# The compiler's targets and moecomm_add_aot_graph come only with
# MOECOMM_ENABLE_COMPILER. The installed programs and libraries find their
# libraries without LD_LIBRARY_PATH (cmake/InstallRPath.cmake).
include(CMakePackageConfigHelpers)

set(MOECOMM_EXPORTED_TARGETS)
foreach(target MoECommDialect MoECommPasses MoECommInitAll MoEComm-C
               moecomm_runtime moecomm_model moecomm_mpi moecomm_reference
               moecomm-opt)
  if(TARGET ${target})
    list(APPEND MOECOMM_EXPORTED_TARGETS ${target})
  endif()
endforeach()

install(TARGETS ${MOECOMM_EXPORTED_TARGETS}
  EXPORT MoECommTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

if(MOECOMM_ENABLE_COMPILER)
  # Headers: the sources and the TableGen-generated .inc files.
  foreach(root ${MOECOMM_SOURCE_DIR}/dialect/include ${MOECOMM_BINARY_DIR}/dialect/include
               ${MOECOMM_SOURCE_DIR}/passes/include ${MOECOMM_BINARY_DIR}/passes/include)
    install(DIRECTORY ${root}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
      FILES_MATCHING PATTERN "*.h" PATTERN "*.inc" PATTERN "*.td"
      PATTERN "CMakeFiles" EXCLUDE)
  endforeach()
endif()
# The runtime's C headers and, in subfolders, the C++ headers of the runtime,
# model and reference libraries.
install(DIRECTORY ${MOECOMM_SOURCE_DIR}/runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(MOECOMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/MoEComm)
install(EXPORT MoECommTargets NAMESPACE MoEComm:: DESTINATION ${MOECOMM_INSTALL_CMAKEDIR})
configure_package_config_file(${MOECOMM_SOURCE_DIR}/cmake/MoECommConfig.cmake.in
  ${MOECOMM_BINARY_DIR}/MoECommConfig.cmake
  INSTALL_DESTINATION ${MOECOMM_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${MOECOMM_BINARY_DIR}/MoECommConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${MOECOMM_BINARY_DIR}/MoECommConfig.cmake
              ${MOECOMM_BINARY_DIR}/MoECommConfigVersion.cmake
        DESTINATION ${MOECOMM_INSTALL_CMAKEDIR})
# moecomm_add_aot_graph, which MoECommConfig.cmake includes.
if(MOECOMM_ENABLE_COMPILER)
  install(FILES ${MOECOMM_SOURCE_DIR}/cmake/AddMoECommGraph.cmake
                ${MOECOMM_SOURCE_DIR}/cmake/EmbedGraphSource.cmake
          DESTINATION ${MOECOMM_INSTALL_CMAKEDIR})
endif()
