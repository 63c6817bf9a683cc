#!/bin/sh
# Rebuilds testdata/jumpbackanchor/vectors.tsv from hash4j's sources.
#   sh testdata/jumpbackanchor/gen/build.sh /path/to/hash4j > testdata/jumpbackanchor/vectors.tsv
# The argument is a checkout of github.com/dynatrace-oss/hash4j (vectors were
# made at commit 41d814f); javac 17 compiles only the classes the generator
# reaches from hash4j's src/main/java (no Gradle, no dependencies).
set -eu
src=$(cd "$1" && pwd)/src/main/java
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy without module-info.java, so that javac compiles the classes
# without the module's dependencies.
cp -R "$src" "$work/src"
rm -f "$work/src/module-info.java"
javac -nowarn -d "$work/classes" -sourcepath "$work/src" "$here/JumpBackAnchorVectors.java" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
java -cp "$work/classes" JumpBackAnchorVectors
