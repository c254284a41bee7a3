# Finds the product's dependencies, all from Debian 12 packages (scripts/debian-packages.txt,
# installed by scripts/install-deps.sh). Every look-up names the package that provides it; what
# is missing is reported together, in one line naming the packages, instead of CMake's own
# errors from deep inside a package's config file.
set(EPOCH_MISSING_PACKAGES)

# epoch_need(<found> <debian-package>...): records the packages as missing unless <found> (a
# variable name) is true.
macro(epoch_need found)
  if(NOT ${found})
    list(APPEND EPOCH_MISSING_PACKAGES ${ARGN})
  endif()
endmacro()

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(epoch_openmp_package libomp-dev)
else()
  set(epoch_openmp_package g++)
endif()
find_package(OpenMP QUIET)
epoch_need(OpenMP_CXX_FOUND ${epoch_openmp_package})
find_package(ZLIB QUIET)
epoch_need(ZLIB_FOUND zlib1g-dev)
find_package(PNG QUIET)
epoch_need(PNG_FOUND libpng-dev)
find_package(fmt QUIET)
epoch_need(fmt_FOUND libfmt-dev)
find_package(nlohmann_json QUIET)
epoch_need(nlohmann_json_FOUND nlohmann-json3-dev)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp)
epoch_need(CLI11_INCLUDE_DIR libcli11-dev)

# libjpeg-turbo's TurboJPEG API: pkg-config's libturbojpeg module gives hints, the header and
# library themselves are what is needed.
find_package(PkgConfig QUIET)
epoch_need(PKG_CONFIG_FOUND pkg-config)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_TURBOJPEG QUIET libturbojpeg)
endif()
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h HINTS ${PC_TURBOJPEG_INCLUDE_DIRS})
find_library(TURBOJPEG_LIBRARY NAMES turbojpeg HINTS ${PC_TURBOJPEG_LIBRARY_DIRS})
if(TURBOJPEG_INCLUDE_DIR AND TURBOJPEG_LIBRARY)
  set(epoch_turbojpeg_found TRUE)
  add_library(epoch_turbojpeg INTERFACE IMPORTED)
  set_target_properties(epoch_turbojpeg PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TURBOJPEG_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${TURBOJPEG_LIBRARY}")
endif()
epoch_need(epoch_turbojpeg_found libturbojpeg0-dev)

# MPI for data-parallel training (Open MPI; always built, a plain run never calls it), and its
# launcher for the multi-process tests and `mpirun -np N epoch train`.
find_package(Threads QUIET)
epoch_need(Threads_FOUND g++)
set(MPI_CXX_SKIP_MPICXX ON)  # the C API from C++, not the deprecated C++ bindings
find_package(MPI QUIET COMPONENTS CXX)
epoch_need(MPI_CXX_FOUND libopenmpi-dev)
find_program(EPOCH_MPIRUN NAMES mpirun mpiexec)
epoch_need(EPOCH_MPIRUN openmpi-bin)

# Fuzzing (make fuzz): libFuzzer comes with clang; every target is instrumented for coverage
# and built with AddressSanitizer and UndefinedBehaviorSanitizer.
option(EPOCH_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)
if(EPOCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "EPOCH_FUZZ needs clang for libFuzzer: -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# oneDNN. Debian's dnnl-config.cmake requires OpenCL (its GPU runtime) with a hard REQUIRED,
# while libdnnl-dev only recommends the package: look for OpenCL first.
set(EPOCH_WITH_ONEDNN 0)
if(EPOCH_ONEDNN)
  find_package(OpenCL QUIET)
  epoch_need(OpenCL_FOUND ocl-icd-opencl-dev)
  if(OpenCL_FOUND)
    find_package(dnnl QUIET)
    epoch_need(dnnl_FOUND libdnnl-dev)
  else()
    find_path(EPOCH_DNNL_HEADER oneapi/dnnl/dnnl.hpp)  # to name both packages in one go
    epoch_need(EPOCH_DNNL_HEADER libdnnl-dev)
  endif()
  set(EPOCH_WITH_ONEDNN 1)
endif()
message(STATUS "epoch: oneDNN ${EPOCH_WITH_ONEDNN}")

if(EPOCH_BUILD_TESTS)
  find_package(GTest QUIET)
  epoch_need(GTest_FOUND libgtest-dev libgmock-dev)
endif()
if(EPOCH_BUILD_BENCHMARKS AND NOT EPOCH_SANITIZE)
  find_package(benchmark QUIET)
  epoch_need(benchmark_FOUND libbenchmark-dev)
endif()

if(EPOCH_MISSING_PACKAGES)
  list(REMOVE_DUPLICATES EPOCH_MISSING_PACKAGES)
  list(JOIN EPOCH_MISSING_PACKAGES " " epoch_missing)
  # The leading space keeps CMake from wrapping the line.
  message(FATAL_ERROR " epoch: missing Debian packages: ${epoch_missing} "
                      "(run `make deps`, or `sudo apt-get install ${epoch_missing}`)")
endif()
