#!/bin/sh
# Rebuilds testdata/fliphash/vectors.tsv from Datadog's fliphash crate.
#   sh testdata/fliphash/gen/build.sh /path/to/fliphash-rs > testdata/fliphash/vectors.tsv
# The argument is a checkout of github.com/DataDog/fliphash-rs (vectors were
# made at commit 00c0ad0); rustc 1.95 builds it with no other crate.
set -eu
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/main.rs" "$work/main.rs"
ln -s "$src" "$work/fliphash-rs"
rustc --edition 2021 -O -o "$work/gen" "$work/main.rs" 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
"$work/gen"
