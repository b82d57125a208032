#!/usr/bin/env bash
# bench-idle.sh: the idle cost of a big host. Imports AGENTS builtin agents
# (agentsite import, offline) into a fresh store, serves them with no
# requests and no peers, lets the node settle (the start-up walk of its
# agents, the search index load), then reports the share of one core the
# process used over WINDOW seconds (user+system, /proc/<pid>/stat) and
# how often a background job missed its store deadline.
#
#   AGENTS=100000 STORE=sqlite SETTLE=150 WINDOW=180 scripts/bench-idle.sh [BIN]
#
# STORE=postgres uses the database PG_DB (agentsite_bench_idle) on the
# Postgres server at 127.0.0.1:5432, created and dropped at the end.
set -euo pipefail
BIN=${1:-bin/agentsite}
AGENTS=${AGENTS:-100000}
STORE=${STORE:-sqlite}
SETTLE=${SETTLE:-150}
WINDOW=${WINDOW:-180}
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
PG_DB=${PG_DB:-agentsite_bench_idle}
PG_URL="postgres://postgres@127.0.0.1:5432/$PG_DB?sslmode=disable"
dir=$(mktemp -d /tmp/agentsite-bench-idle.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ "$STORE" = postgres ]; then psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PG_DB" || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT

store=(--data-dir "$dir/data")
if [ "$STORE" = postgres ]; then
	psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PG_DB" -c "CREATE DATABASE $PG_DB"
	store+=(--database-url "$PG_URL")
fi
python3 -c 'import json,sys
for i in range(int(sys.argv[1])):
	print(json.dumps({"name":f"agent-{i}","display_name":f"Agent {i}","description":"An agent for weather, travel and code.","tags":["weather","travel"],"version":"1.0.0","backend":{"kind":"builtin","builtin":"echo"}}))' "$AGENTS" > "$dir/agents.jsonl"
echo "importing $AGENTS agents into $STORE"
"$BIN" import "${store[@]}" "$dir/agents.jsonl" 2> "$dir/import.log" | tail -1
"$BIN" serve "${store[@]}" --http-addr 127.0.0.1:0 --p2p-listen /ip4/127.0.0.1/tcp/0 > "$dir/serve.log" 2>&1 &
pid=$!
echo "serving (pid $pid); settling ${SETTLE}s, then measuring ${WINDOW}s"
sleep "$SETTLE"
hz=$(getconf CLK_TCK)
# cpu PIDS...: their user+system clock ticks (a process gone counts 0).
cpu() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo "$t"; }
# The Postgres backends serving the node (its pool's connections).
backends() { if [ "$STORE" = postgres ]; then pgrep -f "postgres $PG_DB " || true; fi; }
pg=$(backends)
t0=$(cpu "$pid"); p0=$(cpu $pg)
m0=$(grep -c 'store deadline' "$dir/serve.log" || true)
sleep "$WINDOW"
t1=$(cpu "$pid"); p1=$(cpu $pg)
m1=$(grep -c 'store deadline' "$dir/serve.log" || true)
awk -v a="$t0" -v b="$t1" -v hz="$hz" -v w="$WINDOW" -v n="$AGENTS" -v s="$STORE" \
	'BEGIN{printf "idle host of %d agents (%s): %.1f s of CPU over %d s = %.3f of a core\n", n, s, (b-a)/hz, w, (b-a)/hz/w}'
if [ "$STORE" = postgres ]; then
	awk -v a="$p0" -v b="$p1" -v hz="$hz" -v w="$WINDOW" \
		'BEGIN{printf "its Postgres backends (the connections open at the start): %.1f s = %.3f of a core\n", (b-a)/hz, (b-a)/hz/w}'
fi
echo "store deadlines missed: $m1 since start, $((m1 - m0)) in the window"
grep 'store deadline' "$dir/serve.log" | sed -e 's/^time=[^ ]* //' -e 's/ err=.*store deadline.*//' | sort | uniq -c || true
