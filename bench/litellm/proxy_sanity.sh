#!/usr/bin/env bash
# End-to-end sanity check of the LiteLLM proxy on this machine, everything on 127.0.0.1:
#   fake_upstream.py (aiohttp) -> proxy.sh --detach (1 worker) -> 3 curl requests (one streamed)
#   -> closed_loop.py direct to the upstream, then through the proxy at each concurrency
#   -> stop both (the processes this script started, by pid).
#
#   bench/litellm/proxy_sanity.sh [--duration 10] [--levels 1,16] [--upstream-port 18080]
#       [--proxy-port 4100] [--out-dir target/bench-results]
#
# Writes OUT_DIR/litellm-proxy-closed-c<N>.json per level and OUT_DIR/fake-upstream-closed-c16.json.
# Rough numbers only: closed loop, client + proxy + upstream share the machine's cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${LITELLM_VENV:-$repo/target/litellm-venv}
py=$venv/bin/python
duration=10 levels=1,16 up_port=18080 proxy_port=4100 out_dir=$repo/target/bench-results
while [ $# -gt 0 ]; do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --levels) levels=$2; shift 2 ;;
        --upstream-port) up_port=$2; shift 2 ;;
        --proxy-port) proxy_port=$2; shift 2 ;;
        --out-dir) out_dir=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "proxy_sanity.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
"$here/setup.sh" >/dev/null
mkdir -p "$out_dir"
workdir=$repo/target/litellm-proxy
mkdir -p "$workdir"

up_pid="" proxy_pid=""
cleanup() {
    for p in $proxy_pid $up_pid; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in $proxy_pid $up_pid; do
        for _ in $(seq 1 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT

"$py" "$here/fake_upstream.py" --port "$up_port" >"$workdir/fake-upstream.log" 2>&1 &
up_pid=$!
for _ in $(seq 1 50); do
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$up_port/health" 2>/dev/null && break
    kill -0 "$up_pid" 2>/dev/null || { cat "$workdir/fake-upstream.log" >&2; exit 1; }
    sleep 0.1
done
upstream=http://127.0.0.1:$up_port/v1
echo "fake upstream: pid $up_pid $upstream"

"$here/proxy.sh" --upstream "$upstream" --port "$proxy_port" --detach | head -n 1
proxy_pid=$(cat "$workdir/proxy.pid")
base=http://127.0.0.1:$proxy_port/v1

body='{"model":"gpt-4o","messages":[{"role":"user","content":"Say hi."}]}'
for i in 1 2; do
    out=$(curl -fsS -D "$workdir/headers.txt" -H 'content-type: application/json' -d "$body" "$base/chat/completions")
    case $out in *'"content":"hi"'*) ;; *) echo "unexpected answer: $out" >&2; exit 1 ;; esac
    echo "curl $i: ok, $(grep -i '^x-litellm-model-id' "$workdir/headers.txt" | tr -d '\r'), $(grep -i '^x-litellm-overhead-duration-ms' "$workdir/headers.txt" | tr -d '\r')"
done
sbody='{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Say hi."}]}'
sout=$(curl -fsSN -H 'content-type: application/json' -d "$sbody" "$base/chat/completions")
case $sout in *'[DONE]'*) echo "curl stream: ok ($(printf '%s\n' "$sout" | grep -c '^data:') data lines)" ;;
    *) echo "unexpected stream: $sout" >&2; exit 1 ;; esac

"$py" "$here/closed_loop.py" --url "$upstream" --tool fake-upstream --concurrency 16 \
    --duration "$duration" --server-pid "$up_pid" --out "$out_dir/fake-upstream-closed-c16.json"
for c in ${levels//,/ }; do
    "$py" "$here/closed_loop.py" --url "$base" --tool litellm-proxy --concurrency "$c" \
        --duration "$duration" --server-pid "$proxy_pid" --out "$out_dir/litellm-proxy-closed-c$c.json"
done
