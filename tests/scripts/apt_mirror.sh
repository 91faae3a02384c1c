#!/bin/sh
# scripts/apt-mirror.sh reads the machine's apt sources: deb822 paragraphs (bookworm main, not security or
# updates, not disabled, first of several URIs), one-line entries with options, TSUM_MIRROR first, Debian's own
# when nothing matches.
set -eu
script="$(dirname "$0")/../../scripts/apt-mirror.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() {  # expect WANT APT_DIR
  got=$(APT_DIR="$2" sh "$script")
  if [ "$got" != "$1" ]; then echo "FAIL: $2: got '$got', want '$1'"; fail=1; else echo "ok: $got"; fi
}
mkdir -p "$dir/a/sources.list.d" "$dir/b/sources.list.d" "$dir/c/sources.list.d" "$dir/none"
cat >"$dir/a/sources.list.d/debian.sources" <<'X'
Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb-src deb
# a comment inside the paragraph
URIs: http://mirror.example/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
X
expect http://mirror.example/debian "$dir/a"
printf '%s\n' '# deb http://commented.example/debian bookworm main' \
  'deb [arch=amd64 signed-by=/k.gpg] http://updates.example/debian bookworm-updates main' \
  'deb-src http://src.example/debian bookworm main' \
  'deb [arch=amd64] http://one.example/debian bookworm contrib main' >"$dir/b/sources.list"
expect http://one.example/debian "$dir/b"
printf 'Types: deb\nURIs: http://contrib-only.example/debian\nSuites: bookworm\nComponents: contrib\n' \
  >"$dir/c/sources.list.d/x.sources"
expect http://deb.debian.org/debian "$dir/c"
expect http://deb.debian.org/debian "$dir/none"
got=$(TSUM_MIRROR=http://named.example/debian APT_DIR="$dir/a" sh "$script")
[ "$got" = http://named.example/debian ] && echo "ok: TSUM_MIRROR" || { echo "FAIL: TSUM_MIRROR gave $got"; fail=1; }
exit $fail
