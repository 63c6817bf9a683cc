#!/usr/bin/env bash
# Runs the library's benchmarks and the comparison with peer libraries in one
# go, then writes BENCHMARKS.md at the repository root: ratios chash / peer,
# the targets and where each stands, quality and findings, the machine, and
# benchstat's summary of every benchmark.
#
#   benchmarks/run.sh              full run (6 passes, -benchtime 300ms, about 20 minutes)
#   benchmarks/run.sh -quick       smoke test (1 pass, -benchtime 20ms, 20,000 quality keys);
#                                  writes to a temporary file unless -out is given
#   benchmarks/run.sh -count N -benchtime D -out FILE
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

count=6
benchtime=300ms
keys=200000
out="$root/BENCHMARKS.md"
short=""
quick=""
outset=""
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) quick=1 count=1 benchtime=20ms keys=20000 short=-short ;;
	-count) count=$2; shift ;;
	-benchtime) benchtime=$2; shift ;;
	-out) out=$(realpath -m "$2"); outset=1; shift ;;
	*) echo "usage: $0 [-quick] [-count N] [-benchtime D] [-out FILE]" >&2; exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d)
if [ -n "$quick" ] && [ -z "$outset" ]; then
	out="$tmp/BENCHMARKS.md"
fi
args=(-run '^$' -count 1 -benchtime "$benchtime")
settings="$count alternating passes of go test -benchtime $benchtime $short"

# One pass of each suite per count, alternating, so that chash, its peers
# and the bare hash are measured under the same machine load.
for i in $(seq "$count"); do
	echo "== pass $i of $count: library benchmarks" >&2
	go test "${args[@]}" -bench '^Benchmark(Hash|Lookup|Build|ParallelLookup)$' . | tee -a "$tmp/root.txt" >&2
	echo "== pass $i of $count: comparison benchmarks" >&2
	(cd benchmarks && go test "${args[@]}" $short -bench . .) | tee -a "$tmp/cmp.txt" >&2
done

stat=""
if [ -z "$quick" ]; then
	echo "== benchstat" >&2
	if (cd benchmarks && go run golang.org/x/perf/cmd/benchstat@latest "$tmp/root.txt" &&
		go run golang.org/x/perf/cmd/benchstat@latest "$tmp/cmp.txt") >"$tmp/stat.txt" 2>"$tmp/stat.err"; then
		stat="$tmp/stat.txt"
	else
		echo "benchstat unavailable, table written without it:" >&2
		cat "$tmp/stat.err" >&2
	fi
fi

echo "== report, quality and findings" >&2
cmd="benchmarks/run.sh"
if [ "$count" != 6 ] || [ "$benchtime" != 300ms ]; then
	cmd="benchmarks/run.sh -count $count -benchtime $benchtime"
fi
(cd benchmarks && go run ./cmd/report -root "$tmp/root.txt" -cmp "$tmp/cmp.txt" -benchstat "$stat" \
	-keys "$keys" -notes notes.md -settings "$settings" -command "$cmd" -out "$out")
echo "wrote $out" >&2
