#!/bin/sh
# Makes (once) the stock Debian 12 root file system that test guests boot from: debootstrap --variant=minbase
# plus only what a stock cloud image has that the agent needs (curl, ca-certificates), packed as a tarball.
#   scripts/guest-rootfs.sh OUT.tar [EXTRA_PACKAGE,...]
# OUT.tar is reused when it exists (delete it to rebuild). Downloaded .debs are kept in $TSUM_CACHE_DIR/debs
# (default: the directory of OUT.tar), so a second flavour (e.g. with openssh-server) downloads only what is new.
# Needs root and a Debian mirror: the one this machine's apt uses (scripts/apt-mirror.sh; TSUM_MIRROR to name
# another), through apt's own HTTP proxy when it has one. Concurrent callers wait on a lock, so one download
# serves every guest.
set -eu
out=${1:?usage: guest-rootfs.sh OUT.tar [EXTRA,...]}
extra=${2:-}
[ -s "$out" ] && exit 0
mkdir -p "$(dirname "$out")"
dir=$(cd "$(dirname "$out")" && pwd)
cache=${TSUM_CACHE_DIR:-$dir}/debs
mkdir -p "$cache"
exec 9>"$out.lock"
flock -w 900 9 || { echo "guest-rootfs: timed out waiting for another build of $out" >&2; exit 1; }
[ -s "$out" ] && exit 0
root=$(mktemp -d "$dir/rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
include=curl,ca-certificates${extra:+,$extra}
mirror=$(sh "$(dirname "$0")/apt-mirror.sh")
if [ -z "${http_proxy:-}" ] && command -v apt-config >/dev/null 2>&1; then
  eval "$(apt-config shell http_proxy Acquire::http::Proxy)"
  [ -z "${http_proxy:-}" ] || export http_proxy
fi
# debootstrap configures the extra packages in an order that varies between runs; a postinst that needs another
# package configured first (munge's calls adduser and su) can fail one run and pass the next: three tries.
try=1
until debootstrap --variant=minbase --include="$include" --cache-dir="$cache" bookworm "$root" "$mirror" \
    >"$out.log" 2>&1; do
  if [ "$try" -ge 3 ]; then
    echo "guest-rootfs: debootstrap failed $try times; see $out.log:" >&2
    tail -n 5 "$out.log" >&2
    exit 1
  fi
  try=$((try + 1))
  echo "guest-rootfs: debootstrap failed, trying again ($try of 3)" >&2
  rm -rf "$root" && mkdir -p "$root"
done
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -cf "$out.tmp" . && mv "$out.tmp" "$out"
echo "guest-rootfs: $out ($(du -h "$out" | cut -f1))"
