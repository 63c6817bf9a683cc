#!/bin/sh
# Builds and runs the generator of ../vectors.tsv against a checkout of the
# authors' sources: ./build.sh /path/to/cpp-anchorhash (needs g++ on an
# x86-64 CPU with SSE4.2, for the crc32 instruction the reference uses).
set -eu
src=${1:?usage: build.sh /path/to/cpp-anchorhash}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
g++ -O2 -std=c++17 -I"$src" -o "$out/gen" "$here/gen.cpp" "$src/mem/AnchorHash.cpp"
"$out/gen" > "$here/../vectors.tsv"
rm -rf "$out"
