# Finds the product's dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(OpenMP REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)

set(EPOCH_WITH_ONEDNN 0)
if(EPOCH_ONEDNN)
  find_package(dnnl REQUIRED)
  set(EPOCH_WITH_ONEDNN 1)
endif()
message(STATUS "epoch: oneDNN ${EPOCH_WITH_ONEDNN}")
