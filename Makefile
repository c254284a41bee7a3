# The two commands a newcomer needs: `make train` and `make test`. `make` builds everything;
# `make train` builds only the epoch binary. TRAIN_ARGS are added to `epoch train` (e.g.
# TRAIN_ARGS="--epochs 1"), CTEST_ARGS to ctest (e.g. CTEST_ARGS="-LE slow").
BUILD_DIR ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
TRAIN_ARGS ?=
CTEST_ARGS ?=

.PHONY: all deps configure build build-epoch train test test-asan test-tsan fuzz bench clean \
	fresh-check

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-epoch: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target epoch

train: build-epoch
	./$(BUILD_DIR)/epoch train $(TRAIN_ARGS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# A minimal Debian 12 root (debootstrap, as root) under $(BUILD_DIR)/fresh-machine, a `git
# archive` of HEAD copied in, and the README's two commands run inside it with chroot
# (scripts/fresh-machine-check.sh; FRESH_ARGS are passed on, e.g. FRESH_ARGS=--keep).
FRESH_ARGS ?=
fresh-check:
	bash scripts/fresh-machine-check.sh --out $(BUILD_DIR)/fresh-machine $(FRESH_ARGS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the CPU unit tests.
test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEPOCH_SANITIZE=ON \
	  -DEPOCH_CUDA=OFF -DEPOCH_BUILD_BENCHMARKS=OFF -DCMAKE_CXX_FLAGS=-O1
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j $(JOBS) -L cpu -LE slow

# ThreadSanitizer over the input pipeline's own threads (the loader's workers, the decoded-image
# cache), repeated. libgomp is not instrumented, so OpenMP stays at one thread and only the
# tests that start std::threads run.
test-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEPOCH_CUDA=OFF \
	  -DEPOCH_BUILD_BENCHMARKS=OFF "-DCMAKE_CXX_FLAGS=-O1 -fsanitize=thread" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread
	cmake --build build-tsan -j $(JOBS) --target data_tests
	OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/data_tests \
	  --gtest_filter='LoaderTest.*:ImageFolderTest.*' --gtest_repeat=5 --gtest_brief=1

# libFuzzer runs of the parsers (JPEG/PNG, IDX, safetensors, CIFAR-10, checkpoints, the report's
# config.json, metrics.jsonl and study.json, model files), built with clang, ASan and UBSan in build-fuzz:
# FUZZ_SECONDS per target, starting from the seed corpora in tests/fuzz/corpus (copied to
# build-fuzz/corpus/<target>, where new inputs accumulate across runs). A finding stops the run
# and leaves its input in build-fuzz/artifacts/<target>/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_decode_image fuzz_idx fuzz_safetensors fuzz_cifar10 fuzz_checkpoint fuzz_report \
	fuzz_model_file

# (-march=x86-64-v3: clang has no `#pragma GCC target`, so the instruction-set levels of the
# CPU layer's kernels, which fuzz_checkpoint and fuzz_report link, take their features from
# -march there; the fuzzers run on the machines that build them.)
fuzz: deps
	@command -v clang++ >/dev/null || { echo "make fuzz needs clang: apt-get install clang"; exit 1; }
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DEPOCH_FUZZ=ON -DEPOCH_CUDA=OFF \
	  -DEPOCH_ONEDNN=OFF -DEPOCH_BUILD_BENCHMARKS=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/artifacts/$$t; \
	  cp tests/fuzz/corpus/$$t/* build-fuzz/corpus/$$t/; \
	  echo "== $$t: $(FUZZ_SECONDS) s"; \
	  dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  build-fuzz/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/$$t/ $$dict \
	    build-fuzz/corpus/$$t; \
	done

clean:
	rm -rf $(BUILD_DIR) build-asan build-fuzz
