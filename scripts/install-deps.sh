#!/bin/sh
# Installs, with apt-get, whatever of tsum's Debian 12 build and test dependencies is missing.
# Used by `make test`, `make quickstart` and the Dockerfile. Safe to run again: it only installs what is absent.
#   TSUM_DEPS=all (default)  build + run + test dependencies (make test, make quickstart)
#   TSUM_DEPS=build          build + run (the Dockerfile's build stage)
#   TSUM_DEPS=runtime-image  only the shared libraries and tools tsumd and tsum-train need (the runtime image)
#   TSUM_TORCH=external      leave Debian's CPU libtorch out (a CUDA build brings its own libtorch:
#                            scripts/install-cuda-libtorch.sh)
set -eu

build="build-essential cmake ninja-build pkg-config git ca-certificates
  libboost1.81-dev libcurl4-openssl-dev libssl-dev libxml2-dev nlohmann-json3-dev libsqlite3-dev doctest-dev librapidcheck-dev
  libtorch-dev libgloo-dev libopenblas0-openmp zlib1g-dev libturbojpeg0-dev libcctz-dev libyaml-cpp-dev libtomlplusplus-dev nodejs npm"
runtime="dataset-fashion-mnist curl ca-certificates gzip procps sqlite3"
libs="libtorch1.13 libopenblas0-openmp libsqlite3-0 libssl3 libcurl4 libxml2 zlib1g libturbojpeg0 libcctz2 tzdata"
# Tests: the independent reference implementations and the real peers the tests talk to; Chromium for the
# dashboard's browser test; clang and its libFuzzer runtime for the fuzz targets (bench/fuzz.sh).
tests="python3-torch python3-jsonschema python3-botocore python3-jwt python3-google-auth python3-hcloud python3-toml python3-yaml python3-azure azure-cli python3-kubernetes
  kubernetes-client cloud-init iproute2 iptables libnetfilter-queue-dev
  openssh-server openssh-client openssl chromium docker.io debootstrap docker-registry ccache
  clang libclang-rt-14-dev"

if [ "${TSUM_TORCH:-debian}" = external ]; then
  build=$(echo "$build" | sed 's/libtorch-dev//')
  libs=$(echo "$libs" | sed 's/libtorch1.13//')
fi

case "${TSUM_DEPS:-all}" in
  runtime-image) want="$runtime $libs" ;;
  build) want="$build $runtime" ;;
  *) want="$build $runtime $tests" ;;
esac

# A package counts as present when it is installed, or, for node, npm and kubectl, when the command exists (a
# node from elsewhere, e.g. NodeSource's nodejs, bundles npm and conflicts with Debian's npm package).
present() {
  case "$1" in
    npm) command -v npm >/dev/null 2>&1 && return 0 ;;
    nodejs) command -v node >/dev/null 2>&1 && return 0 ;;
    # Debian's kubectl; another kubectl (Google's or Kubernetes' own package) owns the same path and serves too.
    kubernetes-client) command -v kubectl >/dev/null 2>&1 && return 0 ;;
  esac
  dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=""
for p in $want; do
  present "$p" || missing="$missing $p"
done
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ -n "$missing" ]; then
  echo "install-deps: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends $missing
else
  echo "install-deps: all present"
fi

# libtorch links the generic libblas.so.3; Debian's reference BLAS is about 2.7x slower on the MNIST CNN than
# OpenBLAS. Make sure the alternative points at OpenBLAS (it wins by priority unless someone pinned it).
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p')
case "$blas" in
  *openblas*) ;;
  *) $sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 ||
       echo "install-deps: warning: libblas.so.3 is $blas, not OpenBLAS; training will be slow" >&2 ;;
esac
