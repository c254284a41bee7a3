# CTest's deps_listed (cmake -DSOURCE_DIR=<repo> -P cmake/CheckPackageList.cmake): a guard
# against a dependency the build looks for but the set-up does not install.
# 1. Only cmake/Dependencies.cmake (and cmake/Cuda.cmake, for the optional CUDA toolkit, which
#    is not a Debian package) may look for dependencies.
# 2. Every Debian package that Dependencies.cmake names (epoch_need, epoch_openmp_package) is in
#    scripts/debian-packages.txt.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository> -P CheckPackageList.cmake")
endif()

set(problems)

file(GLOB_RECURSE cmake_files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/CMakeLists.txt ${SOURCE_DIR}/cmake/*.cmake ${SOURCE_DIR}/src/*CMakeLists.txt
          ${SOURCE_DIR}/tests/*CMakeLists.txt ${SOURCE_DIR}/bench/*CMakeLists.txt)
# The recursive glob of the top CMakeLists.txt also reaches ignored folders (a local venv's
# packages, build trees): only the project's own files count.
list(FILTER cmake_files EXCLUDE REGEX "(^|/)(\\.[^/]*|build[^/]*)/")
foreach(f ${cmake_files})
  if(f STREQUAL "cmake/Dependencies.cmake" OR f STREQUAL "cmake/Cuda.cmake"
     OR f STREQUAL "cmake/CheckPackageList.cmake")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${f} lookups REGEX "^[ \t]*(find_package|find_path|find_library|pkg_check_modules)[ \t]*\\(")
  foreach(line ${lookups})
    string(STRIP "${line}" line)
    list(APPEND problems "${f} looks for a dependency outside cmake/Dependencies.cmake: ${line}")
  endforeach()
endforeach()

file(STRINGS ${SOURCE_DIR}/scripts/debian-packages.txt list_lines)
set(listed)
foreach(line ${list_lines})
  string(REGEX REPLACE "#.*" "" line "${line}")
  string(STRIP "${line}" line)
  if(line)
    list(APPEND listed ${line})
  endif()
endforeach()

file(READ ${SOURCE_DIR}/cmake/Dependencies.cmake deps)
set(named)
string(REGEX MATCHALL "epoch_need\\([A-Za-z0-9_]+ [^)]+\\)" needs "${deps}")
foreach(call ${needs})
  string(REGEX REPLACE "epoch_need\\([A-Za-z0-9_]+ ([^)]+)\\)" "\\1" packages "${call}")
  separate_arguments(packages UNIX_COMMAND "${packages}")
  list(APPEND named ${packages})
endforeach()
string(REGEX MATCHALL "set\\(epoch_openmp_package [^)]+\\)" openmp "${deps}")
foreach(call ${openmp})
  string(REGEX REPLACE "set\\(epoch_openmp_package ([^)]+)\\)" "\\1" package "${call}")
  list(APPEND named ${package})
endforeach()
list(FILTER named EXCLUDE REGEX "^\\$")  # ${epoch_openmp_package}, counted through its set()
list(REMOVE_DUPLICATES named)
list(LENGTH named named_count)
if(named_count LESS 10)
  list(APPEND problems "found only ${named_count} packages named in cmake/Dependencies.cmake: the pattern no longer matches its epoch_need calls")
endif()
foreach(package ${named})
  if(NOT package IN_LIST listed)
    list(APPEND problems "cmake/Dependencies.cmake needs the Debian package ${package}, which scripts/debian-packages.txt does not list")
  endif()
endforeach()

if(problems)
  list(JOIN problems "\n" text)
  message(FATAL_ERROR "${text}")
endif()
message(STATUS "deps_listed: ${named_count} packages named by the build, all in scripts/debian-packages.txt")
