#!/bin/sh
# Packs what scripts/gpu-check.sh needs besides a CUDA PyTorch, for a GPU machine that has no Debian packages and no
# network (a lent machine whose image has CUDA, PyTorch, CMake and ninja only): from this Debian machine's packages,
# the header-only libraries (nlohmann_json, doctest, Boost's Beast and Asio) and libjpeg-turbo and zlib (headers and
# libraries) under DIR/prefix, and Fashion-MNIST under DIR/data; with TSUMD (a tsumd built here), DIR/tsumd.tar.xz:
# it, stripped, with the loader and every library it loads, and curl for the agent (scripts/gpu-run.sh). About
# 40 MB, 58 MB with tsumd. Run from the repository's root.
#   scripts/gpu-deps.sh [DIR]     (default .gpu, which git ignores)
#   TSUMD=build/bin/tsumd scripts/gpu-deps.sh
set -eu
dir=${1:-.gpu}
p="$dir/prefix"
rm -rf "$dir"
mkdir -p "$p/include" "$p/lib/cmake/doctest" "$p/share/cmake" "$dir/data"
# nlohmann_json: the package's CMake config finds its prefix from where it lies.
cp -r /usr/include/nlohmann "$p/include/"
cp -r /usr/share/cmake/nlohmann_json "$p/share/cmake/"
# doctest: its package's config names /usr, so a config of our own.
cp -r /usr/include/doctest "$p/include/"
cat > "$p/lib/cmake/doctest/doctestConfig.cmake" <<'CFG'
add_library(doctest::doctest INTERFACE IMPORTED)
get_filename_component(_doctest_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_doctest_prefix}/include")
CFG
# Boost: the headers of Beast and Asio that serve's and load's HTTP take (header-only), as the compiler lists them
# for the files that include them (about 1,000 headers, 7 MB).
for f in workload/serve/serve.cpp workload/serve/serve_limits.cpp workload/infer/http_client.cpp workload/infer/load_gen.cpp \
         workload/infer/load_requests.cpp \
         tests/workload/test_serve.cpp; do
  g++ -std=c++20 -DBOOST_ASIO_NO_DEPRECATED -M -MT x -I. -Itests/workload "$f"
done | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u | while read -r h; do
  rel=${h#/usr/include/}
  mkdir -p "$p/include/$(dirname "$rel")"
  cp "$h" "$p/include/$rel"
done
# libjpeg-turbo and zlib: headers, and the libraries under their link and run-time names.
multiarch=$(gcc -print-multiarch)
for h in turbojpeg.h zlib.h zconf.h; do
  cp "$(find /usr/include -maxdepth 2 -name "$h" | head -n 1)" "$p/include/"
done
cp -L "/usr/lib/$multiarch/libturbojpeg.so" "$p/lib/libturbojpeg.so"
cp -L "/usr/lib/$multiarch/libturbojpeg.so.0" "$p/lib/libturbojpeg.so.0"
cp -L "/usr/lib/$multiarch/libz.so" "$p/lib/libz.so"
cp -r /usr/share/datasets/fashion-mnist "$dir/data/"
if [ -n "${TSUMD:-}" ]; then
  stage=$(mktemp -d)
  mkdir -p "$stage/tsumd/bin" "$stage/tsumd/lib" "$stage/tsumd/libexec"
  strip -o "$stage/tsumd/libexec/tsumd" "$TSUMD"
  cp /usr/bin/curl "$stage/tsumd/libexec/curl"
  for exe in "$TSUMD" /usr/bin/curl; do
    ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
      cp -L "$lib" "$stage/tsumd/lib/"
    done
  done
  for name in tsumd curl; do  # run with these libraries, whatever the machine's own are
    # shellcheck disable=SC2016  # $0 and $@ are the wrapper's own
    printf '#!/bin/sh\nhere=$(cd "$(dirname "$0")/.." && pwd)\nexec "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" "$here/libexec/%s" "$@"\n' \
      "$name" > "$stage/tsumd/bin/$name"
    chmod 755 "$stage/tsumd/bin/$name"
  done
  tar -C "$stage" -cJf "$dir/tsumd.tar.xz" tsumd
  rm -rf "$stage"
fi
du -sh "$dir"
