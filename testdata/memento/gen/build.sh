#!/bin/sh
# Builds and runs the generator of ../vectors.tsv against a checkout of the
# authors' C++ sources: ./build.sh /path/to/cpp-consistent-hashing-algorithms
# (needs g++ and libxxhash-dev).
set -eu
src=${1:?usage: build.sh /path/to/cpp-consistent-hashing-algorithms}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
g++ -O2 -std=c++17 -I"$src" -o "$out/gen" "$here/gen.cpp" -lxxhash
"$out/gen" > "$here/../vectors.tsv"
rm -rf "$out"
