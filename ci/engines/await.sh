# Sourced by the engine scripts that start a Python server in the background. Needs the
# caller's `skip` (prints why the engine cannot be had and exits 3).
#
# await_ready PID URL LOG WHAT: waits up to 120 s for URL to answer; then prints PID. When
# the process exits first, or it does not answer in time (it is then killed), shows the
# last lines of LOG and skips, naming WHAT.
await_ready() {
  local pid=$1 url=$2 log=$3 what=$4
  for _ in $(seq 1 240); do
    if curl -sf "$url" >/dev/null 2>&1; then
      echo "$pid"; return 0
    fi
    kill -0 "$pid" 2>/dev/null || { tail -20 "$log" >&2; skip "$what exited (log above)"; }
    sleep 0.5
  done
  kill "$pid" 2>/dev/null
  tail -20 "$log" >&2
  skip "$what did not answer within 120 s"
}
