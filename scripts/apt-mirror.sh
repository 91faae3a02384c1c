#!/bin/sh
# Prints the Debian archive this machine's apt fetches bookworm's main from, so that debootstrap (and the guests
# and images it makes, whose sources.list names it) use the same mirror as apt: a machine whose apt goes to a
# local mirror reaches no other host. First found: $TSUM_MIRROR; a deb822 paragraph of $APT_DIR/sources.list.d/
# *.sources (Types deb, Suites bookworm, Components main, not Enabled: no); a one-line
# "deb [options] URI bookworm ... main" of $APT_DIR/sources.list or sources.list.d/*.list; Debian's own.
# APT_DIR defaults to /etc/apt (tests point it at fixtures).
set -eu
if [ -n "${TSUM_MIRROR:-}" ]; then
  echo "$TSUM_MIRROR"
  exit 0
fi
dir=${APT_DIR:-/etc/apt}
found=$(
  for f in "$dir"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm( |$)/ && comps ~ /(^| )main( |$)/ && enabled != "no" && uris != "")
          { split(uris, u, " "); print u[1]; found = 1; exit }
        types = suites = comps = uris = enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "") }
      key == "types" { types = $0 } key == "suites" { suites = $0 } key == "components" { comps = $0 }
      key == "uris" { uris = $0 } key == "enabled" { enabled = tolower($0) }
      END { if (!found) flush() }' "$f"
  done | head -n 1
)
if [ -z "$found" ]; then
  found=$(
    for f in "$dir"/sources.list "$dir"/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      awk '$1 == "deb" {
             i = 2
             if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
             uri = $(i); suite = $(i + 1)
             for (j = i + 2; j <= NF; j++) if ($j == "main" && suite == "bookworm") { print uri; exit }
           }' "$f"
    done | head -n 1
  )
fi
echo "${found:-http://deb.debian.org/debian}"
