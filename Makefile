# The two commands a newcomer needs: `make train` and `make test`. `make` builds build/epoch.
BUILD_DIR ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps configure build train test test-asan bench clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

train: build
	./$(BUILD_DIR)/epoch train

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the CPU unit tests.
test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEPOCH_SANITIZE=ON \
	  -DEPOCH_CUDA=OFF -DEPOCH_BUILD_BENCHMARKS=OFF -DCMAKE_CXX_FLAGS=-O1
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j $(JOBS) -L cpu -LE slow

clean:
	rm -rf $(BUILD_DIR) build-asan
