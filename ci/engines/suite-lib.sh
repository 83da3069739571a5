# Helpers the real-engine suites share (sourced, not run): a free loopback port, pass/fail
# counting, and one field of a JSON file.
passed=0; failed=0
# check NAME CONDITION: evaluates CONDITION and counts it; a failure is printed as FAILED: NAME.
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1" >&2; fi; }
# json FILE EXPR: prints EXPR evaluated with d = the parsed FILE.
json() { python3 -c "import json,sys; d=json.load(open('$1')); print(eval(sys.argv[1]))" "$2"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
