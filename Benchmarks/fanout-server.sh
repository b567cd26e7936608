# Sourced by Benchmarks/run-gateway.sh, fanout-pairs.sh, fanout-syscalls.sh and replicas.sh: starts one fan-out server, the C floor
# (Benchmarks/sse-fanout/sse_server.c, 2 threads) or a gateway binary on its embedded deployment (2 threads, no
# heartbeats, room for STREAMS streams), and waits until it answers.
#
# Usage: start_fanout_server c|GATEWAY_BINARY STREAMS LOG  -> sets server_pid and server_port
#        run_fanout_load PORT PID STREAMS ROUNDS [NAME]        -> the load client's output (Benchmarks/sse-fanout)
start_fanout_server() {
    if [ "$1" = c ]; then
        .build-release/sse-server 18092 2 >"$3" 2>&1 &
        server_pid=$!
        server_port=18092
        for _ in $(seq 100); do grep -q listening "$3" && break; sleep 0.1; done
    else
        "$1" --port 18090 --local-port 18091 --threads 2 --heartbeat-seconds 3600 \
            --max-connections $(($2 + 2000)) --log-level notice >"$3" 2>&1 &
        server_pid=$!
        server_port=18090
        for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:18090/readyz" && break; sleep 0.1; done
    fi
}

# The fan-out load: STREAMS streams on one live query (conformance:counter of NAME, default fanout), then ROUNDS
# changes to it, each awaited on every stream (Benchmarks/sse-fanout/sse_fanout.c; PID is the server's, for its
# memory). At most 180 s.
run_fanout_load() {
    local name=${5:-fanout}
    timeout 180 .build-release/sse-fanout "$1" "$2" "$3" "$4" "/subscribe/conformance:counter?name=$name" \
        "/mutation/conformance:increment" "{\"name\":\"$name\"}"
}
