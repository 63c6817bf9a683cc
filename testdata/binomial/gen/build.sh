#!/bin/sh
# Builds and runs the generator of ../vectors.tsv against a checkout of the
# authors' Java sources: ./build.sh /path/to/java-consistent-hashing-algorithms
# (needs a JDK, 17 or later). Only two of its files are compiled: the
# engine and its interface; stub/HashFunction.java stands in for the
# reference's hash interface, whose implementations need other libraries.
set -eu
src=${1:?usage: build.sh /path/to/java-consistent-hashing-algorithms}
here=$(cd "$(dirname "$0")" && pwd)
j=$src/src/main/java/ch/supsi/dti/isin
out=$(mktemp -d)
javac -d "$out" "$here/BinomialVectors.java" "$here/stub/HashFunction.java" \
	"$j/consistenthash/binomial/BinomialEngine.java" "$j/consistenthash/BucketBasedEngine.java"
java -cp "$out" BinomialVectors > "$here/../vectors.tsv"
rm -rf "$out"
