#!/usr/bin/env bash
# Local deployment benchmark: subscriber update latency (1, 100, 1000 WebSocket subscribers) and HTTP queries/s.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --scratch-path .build-release --product local-deployment-bench
swift build -c release --scratch-path .build-release --product convex-local
BIN=.build-release/release
ROUNDS="${ROUNDS:-50}" "$BIN/local-deployment-bench" "$@"

PORT="${PORT:-3299}"
"$BIN/convex-local" --port "$PORT" --log-level error >/dev/null &
SERVER=$!
trap 'kill $SERVER' EXIT
sleep 1
cat > /tmp/convex-local-query.lua <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"path":"mlb:first_place_team","args":{"division":"AL Central"},"format":"json"}'
LUA
echo "HTTP POST /api/query mlb:first_place_team (json format):"
for run in 1 2 3; do
    wrk -t2 -c32 -d10s --latency -s /tmp/convex-local-query.lua "http://127.0.0.1:$PORT/api/query" | grep -E "Requests/sec|50%|99%|Non-2xx"
done
