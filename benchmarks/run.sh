#!/usr/bin/env bash
# Runs the library's benchmarks and the comparison with peer libraries in one
# go, then writes this machine's section of benchmarks/BENCHMARKS.md: ratios
# chash / peer, the targets and where each stands, quality and findings, and
# benchstat's summary of every benchmark. The file keeps one section per
# machine (CPU model and count) that the run has been made on: a run
# rewrites its own machine's section and keeps the others, and every table
# is stamped with the CPU, the Go version and the commit.
#
#   benchmarks/run.sh              full run (6 passes, -benchtime 300ms, about 27 minutes)
#   benchmarks/run.sh -quick       smoke test (1 pass, -benchtime 20ms, 20,000 quality keys);
#                                  writes to a temporary file unless -out is given
#   benchmarks/run.sh -count N -benchtime D -out FILE
#   benchmarks/run.sh -scale       only the scaling report (every algorithm at 8 to 100,000 nodes, 3 passes,
#                                  -benchtime 100ms, about 10 minutes): rewrites its section of BENCHMARKS.md
#                                  and the plots next to it; with -quick, 1 pass, to 1,000 nodes
#
# The full run includes one pass of the scaling report.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

count=6
benchtime=300ms
keys=200000
out="$root/benchmarks/BENCHMARKS.md"
short=""
quick=""
outset=""
scaleonly=""
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) quick=1 count=1 benchtime=20ms keys=20000 short=-short ;;
	-count) count=$2; shift ;;
	-benchtime) benchtime=$2; shift ;;
	-out) out=$(realpath -m "$2"); outset=1; shift ;;
	-scale) scaleonly=1 ;;
	*) echo "usage: $0 [-quick] [-scale] [-count N] [-benchtime D] [-out FILE]" >&2; exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d)
if [ -n "$quick" ] && [ -z "$outset" ]; then
	out="$tmp/BENCHMARKS.md"
fi
args=(-run '^$' -count 1 -benchtime "$benchtime")
settings="$count alternating passes of go test -benchtime $benchtime $short"

# The scaling report: BenchmarkScale, one pass per count, fastest pass kept.
scale() {
	local n=$1 bt=$2
	for i in $(seq "$n"); do
		echo "== scaling pass $i of $n" >&2
		(cd benchmarks && go test -run '^$' -count 1 -benchtime "$bt" -timeout 60m $short -bench '^BenchmarkScale$' .) |
			tee -a "$tmp/scale.txt" >&2
	done
	scalesettings="$n pass(es) of go test -bench Scale -benchtime $bt${short:+ $short}, fastest kept"
}
if [ -n "$scaleonly" ]; then
	if [ -n "$quick" ]; then scale 1 10ms; else scale 3 100ms; fi
	cmd="benchmarks/run.sh -scale"
	(cd benchmarks && go run ./cmd/report -scale "$tmp/scale.txt" -scale-only -scale-notes scale-notes.md \
		-scale-command "$cmd" -scale-settings "$scalesettings" -out "$out")
	echo "wrote the scaling section of $out and its plots" >&2
	exit 0
fi

# One pass of each suite per count, alternating, so that chash, its peers
# and the bare hash are measured under the same machine load.
for i in $(seq "$count"); do
	echo "== pass $i of $count: library benchmarks" >&2
	go test "${args[@]}" -bench '^Benchmark(Hash|Lookup|Build|ParallelLookup|JumpBackHash)$' . | tee -a "$tmp/root.txt" >&2
	echo "== pass $i of $count: comparison benchmarks" >&2
	(cd benchmarks && go test "${args[@]}" $short -bench '^Benchmark(Lookup|LookupForm|TopK3|Build|ParallelLookup)$' .) | tee -a "$tmp/cmp.txt" >&2
done

# chash and each peer in alternating short intervals, once: the figures
# least disturbed by other work on a shared machine.
echo "== interleaved intervals" >&2
if [ -n "$quick" ]; then passes=2; else passes=25; fi
(cd benchmarks && go test -run '^$' -count 1 -benchtime 1x -timeout 60m $short -bench '^BenchmarkInterleaved$' -passes "$passes" .) |
	tee -a "$tmp/cmp.txt" >&2

if [ -n "$quick" ]; then scale 1 10ms; else scale 1 100ms; fi

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
	-keys "$keys" -notes notes.md -settings "$settings" -command "$cmd" -out "$out" \
	-scale "$tmp/scale.txt" -scale-notes scale-notes.md -scale-settings "$scalesettings")
echo "wrote $out" >&2
