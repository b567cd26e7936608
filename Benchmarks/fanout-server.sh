# Sourced by Benchmarks/fanout-pairs.sh and fanout-syscalls.sh: starts one fan-out server, the C floor
# (Benchmarks/sse-fanout/sse_server.c, 2 threads) or a gateway binary on its embedded deployment (2 threads, no
# heartbeats, room for STREAMS streams), and waits until it answers.
#
# Usage: start_fanout_server c|GATEWAY_BINARY STREAMS LOG  -> sets server_pid and server_port
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
