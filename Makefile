# The project's two commands: `make run` and `make test` (README.md). Both install missing Debian packages first.
BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
# Warnings are errors in CI (CI=true is set there). Elsewhere the flag is not passed at all, so a build folder keeps
# what it was configured with: `make run` after `CI=true make test` reuses that build instead of rebuilding it.
WERROR_FLAG := $(if $(filter true 1,$(CI)),-DGEOMX_WERROR=ON,)
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test fuzz sanitize clean

all: build

deps:
	bash scripts/install-deps.sh

# A configured build folder is not configured again unless flags ask for it (CI, CMAKE_FLAGS, another BUILD_TYPE):
# re-running CMake moves pkg-config's flags of libzmq around and recompiles comm/ for nothing. `cmake --build`
# re-runs CMake by itself when a CMakeLists.txt changed.
configure: deps
	@if [ -f $(BUILD)/build.ninja ] && [ -z "$(WERROR_FLAG)$(CMAKE_FLAGS)" ] && \
	    [ "$(BUILD_TYPE)" = "$$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' $(BUILD)/CMakeCache.txt)" ]; then \
	  echo "configure: $(BUILD) is already configured"; \
	else \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(WERROR_FLAG) $(CMAKE_FLAGS); \
	fi

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Trains the quick-start recipe: GeoMX's CNN on Fashion-MNIST over a local two-data-centre topology. Builds only the
# geomx binary (the test suites are built by `make test`).
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target geomx
	./$(BUILD)/geomx train recipes/quickstart_2dc.yaml

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# libFuzzer targets (docs/fuzzing.md): clang build in build-fuzz, each target run for FUZZ_SECONDS on a scratch copy
# of its corpus; fails when one finds a crash.
FUZZ_SECONDS ?= 60
fuzz:
	bash scripts/install-deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

# The suites under the sanitizers (docs/sanitizers.md): ASan + UBSan over the whole suite in build-asan, TSan over the
# comm tests and the every-role-as-threads cluster tests in build-tsan (GCC, CUDA off; the runtimes come with g++).
# Fails on a failing test or any sanitizer report. SANITIZE_PARTS picks parts: asan, asan-comm (the comm tests
# only), tsan.
SANITIZE_PARTS ?= asan tsan
sanitize: deps
	JOBS=$(JOBS) SANITIZE_PARTS="$(SANITIZE_PARTS)" bash scripts/sanitize.sh

clean:
	rm -rf $(BUILD)
