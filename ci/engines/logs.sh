# Sourced by the engine scripts. A started server logs to $CACHE/NAME-PORT.log (with
# litellm.sh its config beside it, NAME-PORT.yaml); the port differs from start to start, so
# each start first removes all but the newest KEEP_LOGS (default 8) of NAME's logs.
#
# fresh_log NAME PORT: prunes, then prints the new log's path.
fresh_log() {
  local name=$1 port=$2 keep=${KEEP_LOGS:-8} old
  old=$(ls -t "$CACHE/$name"-[0-9]*.log 2>/dev/null | tail -n +"$keep") || true
  for f in $old; do rm -f "$f" "${f%.log}.yaml"; done
  echo "$CACHE/$name-$port.log"
}
