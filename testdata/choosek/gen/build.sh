#!/bin/sh
# Rebuilds testdata/choosek/vectors.tsv from github/rust-gems' crate
# consistent-choose-k.
#   sh testdata/choosek/gen/build.sh /path/to/rust-gems > testdata/choosek/vectors.tsv
# The argument is a checkout of github.com/github/rust-gems (vectors were
# made at commit a7aecfb, crates/consistent-choose-k); rustc 1.95 builds the
# three source modules the generator includes, with no other crate.
set -eu
src=$(cd "$1" && pwd)/crates/consistent-choose-k
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/main.rs" "$work/main.rs"
ln -s "$src" "$work/consistent-choose-k"
rustc --edition 2021 -O -o "$work/gen" "$work/main.rs" 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
"$work/gen"
