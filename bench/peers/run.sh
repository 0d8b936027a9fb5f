#!/usr/bin/env bash
# run.sh runs the DBOS peer (bench/peers/dbos) and Weft's headline
# benchmark (BenchmarkSystem) in interleaved pairs, PEER_PAIRS of them
# (default 2; odd pairs run Weft first, even pairs the peer first, so
# neither always runs on a warmer or quieter machine), then prints the two
# side by side. A side that fails keeps the lines it printed before the
# failure, the pairs go on, and run.sh exits 1 after the table. Raw
# outputs stay in a temporary directory it names.
set -euo pipefail

pairs=${PEER_PAIRS:-2}
case $pairs in '' | *[!0-9]* | 0) echo "run.sh: PEER_PAIRS must be a positive integer, got '$pairs'" >&2; exit 2 ;; esac

root=$(cd "$(dirname "$0")/../.." && pwd)
peer=$root/bench/peers/dbos
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX")

(cd "$peer" && go build -o "$out/dbospeer" ./cmd/dbospeer && go build -o "$out/peertable" ./cmd/peertable)

failed=0

run_weft() {
	echo "== pair $1: Weft BenchmarkSystem"
	if ! (cd "$root" && go test -run '^$' -bench '^BenchmarkSystem$' -benchtime 1x ./bench) 2>&1 | tee "$out/weft-$1.txt"; then
		echo "== pair $1: Weft BenchmarkSystem failed" >&2
		failed=1
	fi
}

run_dbos() {
	echo "== pair $1: DBOS peer"
	if ! "$out/dbospeer" 2>&1 | tee "$out/dbos-$1.txt"; then
		echo "== pair $1: DBOS peer failed" >&2
		failed=1
	fi
}

weft_files=() dbos_files=()
for i in $(seq 1 "$pairs"); do
	if ((i % 2)); then
		run_weft "$i"
		run_dbos "$i"
	else
		run_dbos "$i"
		run_weft "$i"
	fi
	weft_files+=("$out/weft-$i.txt")
	dbos_files+=("$out/dbos-$i.txt")
done

"$out/peertable" -weft "$(IFS=,; echo "${weft_files[*]}")" -dbos "$(IFS=,; echo "${dbos_files[*]}")"
echo
echo "raw outputs: $out (machine: $(nproc) cores; other processes running at the same time count in the machine CPU figures)"
if ((failed)); then
	echo "run.sh: a run failed; its figures are those it printed before failing" >&2
fi
exit "$failed"
