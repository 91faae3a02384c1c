# Front door. `make quickstart` and `make test` work on a fresh Debian 12 machine: each first installs
# whatever dependency is missing (scripts/install-deps.sh, the same script the Dockerfile uses).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ccache (a test dependency) makes a rebuild in another clone or worktree of the tree cheap.
CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
endif

.PHONY: all deps build test quickstart bench clean

all: build

deps:
	@sh scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

quickstart: build
	cd $(BUILD) && ./bin/tsumd quickstart

bench: build
	bench/workload.sh $(BUILD)/bin/tsum-train

clean:
	rm -rf $(BUILD)
