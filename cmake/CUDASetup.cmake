# CUDA and NCCL for the GPU backend (runtime/lib/cuda, backend `nccl`).
#
# With MOECOMM_ENABLE_CUDA (default ON) the CUDA language is enabled only when
# nvcc works and NCCL (nccl.h + libnccl) is found; otherwise the GPU backend
# is skipped with a message and everything else builds as before. Sets:
#   MOECOMM_HAVE_NCCL            ON when the backend is built
#   MOECOMM_NCCL_INCLUDE_DIR / MOECOMM_NCCL_LIBRARY
#   target moecomm::nccl         (imported) and CUDA::cudart (FindCUDAToolkit)
#
# Cache variables:
#   MOECOMM_CUDA_ARCHITECTURES   CMAKE_CUDA_ARCHITECTURES when that is not set;
#                                default "90" (H100/H200: sm_90 SASS plus
#                                compute_90 PTX, which newer GPUs JIT). Add
#                                more for other GPUs, e.g. "80;90;100" (each
#                                adds build time)
#   MOECOMM_REQUIRE_CUDA         fail the configuration instead of skipping
#                                the backend (used by scripts/gpu-check)
#   MOECOMM_NCCL_ROOT            where to look for NCCL besides the toolkit
set(MOECOMM_CUDA_ARCHITECTURES "90" CACHE STRING
    "CUDA architectures of the GPU backend (CMAKE_CUDA_ARCHITECTURES)")
option(MOECOMM_REQUIRE_CUDA "Fail if the CUDA/NCCL backend cannot be built" OFF)
set(MOECOMM_NCCL_ROOT "" CACHE PATH "Extra prefix to search for NCCL")

set(MOECOMM_HAVE_NCCL OFF)

function(moecomm_cuda_unavailable why)
  if(MOECOMM_REQUIRE_CUDA)
    message(FATAL_ERROR "MOECOMM_REQUIRE_CUDA is ON but ${why}")
  endif()
  message(STATUS "GPU backend (nccl) not built: ${why}")
endfunction()

if(NOT MOECOMM_ENABLE_CUDA)
  message(STATUS "GPU backend (nccl) not built: MOECOMM_ENABLE_CUDA is OFF")
  return()
endif()

if(MOECOMM_SANITIZE)
  # The sanitizer flags are global compile options that nvcc rejects.
  moecomm_cuda_unavailable("MOECOMM_SANITIZE builds the CPU backends only")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # Before check_language/enable_language: CMake's own default may name an
  # architecture that CUDA 13 no longer supports.
  set(CMAKE_CUDA_ARCHITECTURES ${MOECOMM_CUDA_ARCHITECTURES})
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  moecomm_cuda_unavailable("no working CUDA compiler (nvcc) was found")
  return()
endif()

# NCCL ships with the toolkit here (/usr/local/cuda); also honour NCCL_HOME
# and MOECOMM_NCCL_ROOT.
get_filename_component(_moecomm_cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
get_filename_component(_moecomm_cuda_root "${_moecomm_cuda_bin}" DIRECTORY)
find_path(MOECOMM_NCCL_INCLUDE_DIR nccl.h
  HINTS ${MOECOMM_NCCL_ROOT} $ENV{NCCL_HOME} ${_moecomm_cuda_root}
  PATH_SUFFIXES include)
find_library(MOECOMM_NCCL_LIBRARY nccl
  HINTS ${MOECOMM_NCCL_ROOT} $ENV{NCCL_HOME} ${_moecomm_cuda_root}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
if(NOT MOECOMM_NCCL_INCLUDE_DIR OR NOT MOECOMM_NCCL_LIBRARY)
  moecomm_cuda_unavailable("NCCL was not found (nccl.h: ${MOECOMM_NCCL_INCLUDE_DIR}, libnccl: ${MOECOMM_NCCL_LIBRARY}); set MOECOMM_NCCL_ROOT")
  return()
endif()

enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# One shared CUDA runtime for the library, its tests and benchmarks.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
find_package(CUDAToolkit REQUIRED)
if(CUDAToolkit_VERSION VERSION_LESS 12.0)
  moecomm_cuda_unavailable("CUDA ${CUDAToolkit_VERSION} is older than 12.0")
  return()
endif()

file(STRINGS "${MOECOMM_NCCL_INCLUDE_DIR}/nccl.h" _moecomm_nccl_code
     REGEX "^#define NCCL_VERSION_CODE [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _moecomm_nccl_code "${_moecomm_nccl_code}")
if(NOT _moecomm_nccl_code OR _moecomm_nccl_code LESS 21800)
  # ncclCommSplit appeared in NCCL 2.18.
  moecomm_cuda_unavailable("NCCL ${_moecomm_nccl_code} is older than 2.18 (ncclCommSplit)")
  return()
endif()

if(NOT TARGET moecomm::nccl)
  add_library(moecomm::nccl SHARED IMPORTED GLOBAL)
  set_target_properties(moecomm::nccl PROPERTIES
    IMPORTED_LOCATION "${MOECOMM_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MOECOMM_NCCL_INCLUDE_DIR}")
endif()

set(MOECOMM_HAVE_NCCL ON)
message(STATUS "GPU backend (nccl): CUDA ${CUDAToolkit_VERSION}, NCCL code ${_moecomm_nccl_code}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
