# The echo benchmark's servers by name: how each is started and stopped. Sourced (not run)
# by bench/io/echo_bench.sh and bench/io/loadgen_bound_ab.sh, which set before calling:
# $bin (bazel-bin of --config=opt), $port (the port to serve on) and, for tokio and go,
# $peers (where bench/io/peers/build.sh built them). The names are listed in echo_bench.sh.

start_server() {  # name -> sets server_pid
  local name=$1
  local protocol=()
  if [[ $name == *-framed ]]; then
    protocol=(--framed)
    name=${name%-framed}
  fi
  case "$name" in
    fairsched-epoll) "$bin/examples/echo_server" --backend=epoll --workers=2 --port=$port "${protocol[@]}" & ;;
    fairsched-io_uring) "$bin/examples/echo_server" --backend=io_uring --workers=2 --port=$port "${protocol[@]}" & ;;
    fairsched-epoll-nospin) "$bin/examples/echo_server" --backend=epoll --workers=2 --spin_us=0 --port=$port "${protocol[@]}" & ;;
    fairsched-io_uring-nospin) "$bin/examples/echo_server" --backend=io_uring --workers=2 --spin_us=0 --port=$port "${protocol[@]}" & ;;
    fairsched-epoll-spin20) "$bin/examples/echo_server" --backend=epoll --workers=2 --spin_us=20 --port=$port "${protocol[@]}" & ;;
    fairsched-io_uring-spin20) "$bin/examples/echo_server" --backend=io_uring --workers=2 --spin_us=20 --port=$port "${protocol[@]}" & ;;
    before-epoll) "${ECHO_SERVER_BEFORE:?set ECHO_SERVER_BEFORE}" --backend=epoll --workers=2 --port=$port "${protocol[@]}" & ;;
    before-io_uring) "${ECHO_SERVER_BEFORE:?set ECHO_SERVER_BEFORE}" --backend=io_uring --workers=2 --port=$port "${protocol[@]}" & ;;
    trivial-epoll) "$bin/bench/io/trivial_epoll_echo_server" --workers=2 --port=$port "${protocol[@]}" & ;;
    asio) "$bin/bench/io/asio_echo_server" --workers=2 --port=$port "${protocol[@]}" & ;;
    tokio) "$peers/tokio_echo" --workers=2 --port=$port "${protocol[@]}" & ;;
    go) "$peers/go_echo" --workers=2 --port=$port "${protocol[@]}" & ;;
    *) echo "unknown server: $1" >&2; exit 2 ;;
  esac
  server_pid=$!
  for _ in $(seq 100); do
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then return; fi
    sleep 0.05
  done
  echo "server $1 did not start" >&2
  exit 1
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" > /dev/null || true
}
