# Finds the product's dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(OpenMP REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)

# libjpeg-turbo's TurboJPEG API (libturbojpeg0-dev): pkg-config's libturbojpeg module gives
# hints, the header and library themselves are required.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_TURBOJPEG QUIET libturbojpeg)
endif()
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h HINTS ${PC_TURBOJPEG_INCLUDE_DIRS} REQUIRED)
find_library(TURBOJPEG_LIBRARY NAMES turbojpeg HINTS ${PC_TURBOJPEG_LIBRARY_DIRS} REQUIRED)
add_library(epoch_turbojpeg INTERFACE IMPORTED)
set_target_properties(epoch_turbojpeg PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TURBOJPEG_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "${TURBOJPEG_LIBRARY}")

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

set(EPOCH_WITH_ONEDNN 0)
if(EPOCH_ONEDNN)
  find_package(dnnl REQUIRED)
  set(EPOCH_WITH_ONEDNN 1)
endif()
message(STATUS "epoch: oneDNN ${EPOCH_WITH_ONEDNN}")
