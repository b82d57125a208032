#!/usr/bin/env bash
# make ard: the ARD conformance tool against a real node.
# Builds agentsite, starts it on a free port with its demo agents in a
# temporary data dir, waits for /readyz, then runs
#   conformance-test manifest <node>/.well-known/ai-catalog.json
#   conformance-test registry <node>/ard
# and stops the node. Exit status: the tool's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
tmp="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/agentsite" ./cmd/agentsite)
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
"$tmp/agentsite" serve --data-dir "$tmp/data" --http-addr "127.0.0.1:$port" \
  --p2p-listen /ip4/127.0.0.1/tcp/0 --demo-agents=true --log-level warn >"$tmp/node.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  if curl -fsS "$base/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/node.log" >&2; echo "the node exited" >&2; exit 1; fi
  sleep 0.2
done
curl -fsS "$base/readyz" >/dev/null || { cat "$tmp/node.log" >&2; echo "the node did not get ready" >&2; exit 1; }
tool="$here/conformance/bin/conformance-test"
python3 "$tool" manifest "$base/.well-known/ai-catalog.json"
python3 "$tool" registry "$base/ard"
