#!/bin/sh
# Packs tsum-train and tsum-gpustat with every shared library they load and the dynamic loader into one
# self-contained tar.gz, so `install` on a stock machine is a download and an unpack: no package manager, no
# matching glibc, no network beyond the daemon.
#   scripts/make-bundle.sh TSUM_TRAIN TSUM_GPUSTAT OUT.tar.gz
# Layout (one top directory):
#   tsum/bin/tsum-train      sh wrapper: runs libexec/tsum-train through the bundled loader and libraries
#   tsum/bin/tsum-gpustat    the same for tsum-gpustat (it dlopens the host's libnvidia-ml, if any)
#   tsum/libexec/            the real executables
#   tsum/lib/                ld-linux-x86-64.so.2 and every library `ldd` resolves, under their sonames
#   tsum/MANIFEST            one line per file: sha256 and path
# The archive is reproducible (sorted names, fixed mtime and owner), so an unchanged build keeps its hash.
# TSUM_BUNDLE_HOST_LIBS=1 packs the executables alone, run with the machine's own loader and libraries: for
# machines whose image already has them (a GPU image with a CUDA PyTorch, whose libraries would make the bundle
# gigabytes: scripts/gpu-run.sh).
set -eu
train=${1:?usage: make-bundle.sh TSUM_TRAIN TSUM_GPUSTAT OUT.tar.gz}
gpustat=${2:?}
out=${3:?}
stage=$(mktemp -d "${out%/*}/.bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
top="$stage/tsum"
mkdir -p "$top/bin" "$top/lib" "$top/libexec"

for exe in "$train" "$gpustat"; do
  name=$(basename "$exe")
  cp "$exe" "$top/libexec/$name"
  if [ "${TSUM_BUNDLE_HOST_LIBS:-0}" = 1 ]; then
    # shellcheck disable=SC2016  # $0 and $@ are the wrapper's own
    printf '#!/bin/sh\n# Runs %s with the libraries of this machine.\nexec "$(dirname "$0")/../libexec/%s" "$@"\n' \
      "$name" "$name" > "$top/bin/$name"
    chmod 755 "$top/bin/$name"
    continue
  fi
  # ldd lines: "libx.so.1 => /path/libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
  ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\// { n = split($1, p, "/"); print p[n], $1 }' |
    while read -r soname path; do
      [ -e "$top/lib/$soname" ] || cp -L "$path" "$top/lib/$soname"
    done
  cat > "$top/bin/$name" <<WRAP
#!/bin/sh
# Runs $name with the libraries of its bundle, whatever the machine's own are.
here=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$here/lib/ld-linux-x86-64.so.2" --library-path "\$here/lib" "\$here/libexec/$name" "\$@"
WRAP
  chmod 755 "$top/bin/$name"
done
[ "${TSUM_BUNDLE_HOST_LIBS:-0}" = 1 ] || [ -e "$top/lib/ld-linux-x86-64.so.2" ] ||
  { echo "make-bundle: ldd named no ld-linux-x86-64.so.2" >&2; exit 1; }
strip --strip-debug "$top/libexec/"* 2>/dev/null || true
(cd "$stage" && find tsum -type f ! -name MANIFEST | sort | xargs sha256sum > tsum/MANIFEST)
tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - tsum | gzip -n -1 > "$out.tmp"
mv "$out.tmp" "$out"
