#!/bin/sh
# Makes tsum's Docker images in the engine DOCKER_HOST names (or one this script finds or starts).
#   scripts/docker-images.sh engine     prints the DOCKER_HOST to use: $DOCKER_HOST if set (it must answer),
#                                       else the system engine's /var/run/docker.sock if it answers, else a
#                                       private engine under $TSUM_DOCKER_STATE (scripts/docker-engine.sh; left
#                                       running, stop it with `scripts/docker-engine.sh stop DIR`)
#   scripts/docker-images.sh base       tsum-base:bookworm: `docker import` of the stock Debian 12 root
#                                       ($TSUM_GUEST_ROOTFS, made by scripts/guest-rootfs.sh when missing)
#   scripts/docker-images.sh workload   tsum-train:latest (docker/workload.Dockerfile): the base plus the trainer
#                                       bundle $TSUM_BUNDLE, ENTRYPOINT tsum-train; rebuilt when the bundle or
#                                       docker/workload.Dockerfile changes
#   scripts/docker-images.sh example    tsum-example-pytorch:latest (examples/pytorch-mnist: the base plus
#                                       Debian's python3-torch, minutes of apt-get); rebuilt only when its
#                                       Dockerfile, its train.py or the base changes (a label holds their hash)
#   scripts/docker-images.sh tsum       $TSUM_SERVER_IMAGE (tsum:latest) from the repository's Dockerfile, built
#                                       from source in the engine, FROM $BASE_IMAGE (debian:12); docs/docker.md
# Environment (defaults): BUILD (build), TSUM_DOCKER_STATE ($BUILD/cache/docker), TSUM_GUEST_ROOTFS
# ($BUILD/cache/guest-bookworm.tar), TSUM_BUNDLE ($BUILD/bundle/tsum-bundle.tar.gz), BASE_IMAGE (debian:12),
# TSUM_GPU (cpu | cuda), TSUM_SERVER_IMAGE (tsum:latest), DOCKER_BUILD_FLAGS (--network host: the build's RUN
# steps use the host's network, so apt-get works also on an engine without a bridge).
# Concurrent callers for one engine wait on a lock (at most 25 minutes), so one build serves them all.
# Progress goes to stderr; stdout carries only what the command prints (engine: the DOCKER_HOST).
set -eu
usage="usage: docker-images.sh engine|base|workload|example|tsum"
cmd=${1:?$usage}
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
state=${TSUM_DOCKER_STATE:-$build/cache/docker}
rootfs=${TSUM_GUEST_ROOTFS:-$build/cache/guest-bookworm.tar}
bundle=${TSUM_BUNDLE:-$build/bundle/tsum-bundle.tar.gz}
base_image=tsum-base:bookworm
workload_image=tsum-train:latest
example_image=tsum-example-pytorch:latest

docker=/usr/bin/docker
# The classic builder: it is in every engine and needs no buildx plugin or entitlements for --network host.
export DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}"
[ -x "$docker" ] || docker=$(command -v docker || true)
[ -n "$docker" ] || { echo "docker-images: the docker CLI is missing: install docker.io" >&2; exit 1; }

say() { echo "docker-images: $*" >&2; }

answers() { DOCKER_HOST=$1 timeout 10 "$docker" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

ensure_engine() {
  if [ -n "${DOCKER_HOST:-}" ]; then
    answers "$DOCKER_HOST" || { say "DOCKER_HOST=$DOCKER_HOST does not answer"; exit 1; }
  elif [ -S /var/run/docker.sock ] && answers unix:///var/run/docker.sock; then
    DOCKER_HOST=unix:///var/run/docker.sock
  else
    DOCKER_HOST=$(sh "$here/scripts/docker-engine.sh" start "$state")
    # Ours now: the tests stop a private engine only if a test started it (tests/support/docker_env.h).
    rm -f "$state/started-by-test"
    say "using the private engine in $state (stop: scripts/docker-engine.sh stop $state)"
  fi
  export DOCKER_HOST
}

has_image() { "$docker" image inspect "$1" >/dev/null 2>&1; }

label() { "$docker" image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

ensure_base() {
  has_image "$base_image" && return 0
  if [ ! -s "$rootfs" ]; then
    say "making the Debian 12 root $rootfs (debootstrap, a few minutes)"
    mkdir -p "$(dirname "$rootfs")"
    sh "$here/scripts/guest-rootfs.sh" "$rootfs" >&2
  fi
  say "importing $rootfs as $base_image"
  "$docker" import --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --message "tsum: debootstrap --variant=minbase bookworm (scripts/guest-rootfs.sh)" "$rootfs" "$base_image" >/dev/null
}

ensure_workload() {
  [ -s "$bundle" ] ||
    { say "the trainer bundle $bundle is missing: build it (make build; target tsum-bundle, scripts/make-bundle.sh)"; exit 1; }
  sum=$(sha256sum "$bundle" | cut -d' ' -f1)
  recipe=$(sha256sum "$here/docker/workload.Dockerfile" | cut -d' ' -f1)
  if has_image "$workload_image" && [ "$(label "$workload_image" org.tsum.bundle-sha256)" = "$sum" ] &&
    [ "$(label "$workload_image" org.tsum.dockerfile-sha256)" = "$recipe" ]; then return 0; fi
  ensure_base
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/tsum-workload.XXXXXX")
  trap 'rm -rf "$ctx"' EXIT
  ln "$bundle" "$ctx/tsum-bundle.tar.gz" 2>/dev/null || cp "$bundle" "$ctx/tsum-bundle.tar.gz"
  say "building $workload_image from $bundle"
  "$docker" build -q -f "$here/docker/workload.Dockerfile" --build-arg "BASE_IMAGE=$base_image" \
    --build-arg "BUNDLE_SHA256=$sum" --build-arg "DOCKERFILE_SHA256=$recipe" -t "$workload_image" "$ctx" >/dev/null
  rm -rf "$ctx"
  trap - EXIT
  "$docker" run --rm --network none "$workload_image" --help >/dev/null ||
    { say "$workload_image does not run tsum-train --help"; exit 1; }
}

# The example job's image, keyed by its inputs: what its Dockerfile copies (train.py), the Dockerfile, the base.
ensure_example() {
  ensure_base
  dir=$here/examples/pytorch-mnist
  key=$( (cat "$dir/Dockerfile" "$dir/train.py"; "$docker" image inspect -f '{{.Id}}' "$base_image") |
    sha256sum | cut -d' ' -f1)
  if has_image "$example_image" && [ "$(label "$example_image" org.tsum.inputs-sha256)" = "$key" ]; then return 0; fi
  say "building $example_image from $dir (apt-get of python3-torch: minutes, once per engine and inputs)"
  # shellcheck disable=SC2086 # DOCKER_BUILD_FLAGS is a list of flags
  "$docker" build -q ${DOCKER_BUILD_FLAGS:---network host} --build-arg "BASE=$base_image" \
    --label "org.tsum.inputs-sha256=$key" -t "$example_image" "$dir" >/dev/null
}

# The base for the Dockerfile: BASE_IMAGE if the engine has it or can pull it; for the default debian:12 on a
# machine that reaches no registry, the debootstrap root (tsum-base:bookworm) instead.
pick_build_base() {
  want=${BASE_IMAGE:-debian:12}
  if has_image "$want" || timeout 300 "$docker" pull -q "$want" >/dev/null 2>&1; then
    echo "$want"
  elif [ "$want" = debian:12 ]; then
    say "the engine has no debian:12 and cannot pull it; using the debootstrap root $base_image"
    ensure_base
    echo "$base_image"
  else
    say "the engine has no $want and cannot pull it"
    exit 1
  fi
}

build_tsum() {
  base=$(pick_build_base)
  image=${TSUM_SERVER_IMAGE:-tsum:latest}
  say "building $image (TSUM_GPU=${TSUM_GPU:-cpu}, BASE_IMAGE=$base) from $here/Dockerfile"
  # The build's npm ci uses the registry this machine's npm is configured with.
  registry=$(npm config get registry 2>/dev/null || true)
  # shellcheck disable=SC2086 # DOCKER_BUILD_FLAGS is a list of flags
  "$docker" build ${DOCKER_BUILD_FLAGS:---network host} --build-arg "BASE_IMAGE=$base" \
    --build-arg "TSUM_GPU=${TSUM_GPU:-cpu}" ${registry:+--build-arg "npm_config_registry=$registry"} \
    -t "$image" "$here" >&2
  "$docker" run --rm --network none "$image" --help >/dev/null ||
    { say "$image does not run tsumd --help"; exit 1; }
  say "built $image"
}

# One image maker per engine at a time.
lock_engine() {
  exec 8>"${TMPDIR:-/tmp}/tsum-docker-images.$(printf %s "$DOCKER_HOST" | cksum | cut -d' ' -f1).lock"
  flock -w 1500 8 || { say "timed out waiting for another docker-images.sh on $DOCKER_HOST"; exit 1; }
}

case "$cmd" in
  engine) ensure_engine; echo "$DOCKER_HOST" ;;
  base) ensure_engine; lock_engine; ensure_base ;;
  workload) ensure_engine; lock_engine; ensure_workload ;;
  example) ensure_engine; lock_engine; ensure_example ;;
  tsum) ensure_engine; lock_engine; build_tsum ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
