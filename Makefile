# Front door. `make quickstart` and `make test` work on a fresh Debian 12 machine: each first installs
# whatever dependency is missing (scripts/install-deps.sh, the same script the Dockerfile uses).
BUILD ?= build
# Build jobs: ninja's own default (3 on 2 cores, cores + 2 above), which keeps a core busy while another job
# waits on the disk, and keeps the build its share of a machine that has other work (issue 39).
JOBS ?=
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ccache (a test dependency) makes a rebuild in another clone or worktree of the tree cheap.
CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
# The precompiled headers (cmake/Pch.cmake, workload/CMakeLists.txt) are cached only with these. Depend mode takes
# a file's headers from the compiler's own -MD list, so a miss costs no extra preprocessor run (a libtorch file's
# is seconds; ccache's manual puts a miss at 5-20% over the compiler otherwise, 1-3% in depend mode).
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_DEPEND ?= 1
endif
# Suites CTest runs at once. Most of them wait on engines, guests and networks more than they compute; the two
# that train hardest take two slots (PROCESSORS 2), so they never overlap (tests/CMakeLists.txt).
CTEST_JOBS ?= 3

.PHONY: all deps build test quickstart bench fuzz clean image workload-image docker-engine docker-stop

all: build

deps:
	@sh scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) $(if $(JOBS),-j $(JOBS))

# The build, with the guest roots the suites boot made beside it, then CTest (scripts/make-test.sh).
test: deps $(BUILD)/build.ninja
	sh scripts/make-test.sh $(BUILD) $(CTEST_JOBS) $(JOBS)

quickstart: build
	cd $(BUILD) && ./bin/tsumd quickstart

bench: build
	bench/workload.sh $(BUILD)/bin/tsum-train

# A fuzzing round: every libFuzzer target (clang, ASan, UBSan; tests/fuzz) for FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz: deps
	FUZZ_BUILD=$(BUILD)/fuzz sh bench/fuzz.sh $(FUZZ_SECONDS)

# Docker (docs/docker.md). Each uses the engine DOCKER_HOST names, else the system engine if it answers, else
# starts a private one under $(DOCKER_STATE) and leaves it running (`make docker-stop` stops it).
#   make image            tsum:latest from ./Dockerfile, built from source in the engine, FROM $(BASE_IMAGE)
#                         (TSUM_GPU=cuda: the CUDA build, tag it with IMAGE=tsum-cuda:latest)
#   make workload-image   tsum-train:latest: the stock Debian 12 root plus the trainer bundle
DOCKER_STATE ?= $(BUILD)/cache/docker
BASE_IMAGE ?= debian:12
TSUM_GPU ?= cpu
IMAGE ?= tsum:latest
DOCKER_BUILD_FLAGS ?= --network host
DOCKER_IMAGES = BUILD=$(BUILD) TSUM_DOCKER_STATE=$(DOCKER_STATE) BASE_IMAGE=$(BASE_IMAGE) TSUM_GPU=$(TSUM_GPU) \
  TSUM_SERVER_IMAGE=$(IMAGE) DOCKER_BUILD_FLAGS="$(DOCKER_BUILD_FLAGS)" sh scripts/docker-images.sh

image:
	$(DOCKER_IMAGES) tsum

workload-image: build
	$(DOCKER_IMAGES) workload

docker-engine:
	@sh scripts/docker-engine.sh start $(DOCKER_STATE)

docker-stop:
	sh scripts/docker-engine.sh stop $(DOCKER_STATE)

clean:
	-[ ! -d $(DOCKER_STATE) ] || sh scripts/docker-engine.sh stop $(DOCKER_STATE)
	rm -rf $(BUILD)
