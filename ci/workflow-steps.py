"""Prints a GitHub Actions workflow's job as a bash script that runs its `run:` steps here, in
order, each as Actions runs it (`bash -e`, a failed step ends the job with its exit code),
with the job's literal `env:` exported, $GITHUB_PATH honoured between steps, and every `uses:`
step named and skipped (checkout, cache, artifacts: GitHub's). For ci/init-e2e.sh, which runs
the workflow `bench init` wrote. Line-based: it expects that workflow's layout (one job; `run:`
either inline or a `|` block), and refuses a run step holding a ${{ }} expression, which only
Actions can fill in."""
import shlex
import sys

lines = open(sys.argv[1]).read().splitlines()
env, steps, i = {}, [], 0
in_env = False
while i < len(lines):
    line = lines[i]
    s = line.strip()
    indent = len(line) - len(line.lstrip())
    if s == "env:" and indent == 4:
        in_env = True
    elif in_env and indent == 6 and ":" in s and not s.startswith("#"):
        k, v = s.split(":", 1)
        v = v.strip()
        if "${{" not in v:
            env[k] = v.strip('"')
    elif in_env and s and not s.startswith("#") and indent <= 4:
        in_env = False
    if s.startswith("- uses:") or (s.startswith("uses:") and indent == 8):
        steps.append(("uses", s.split("uses:", 1)[1].strip()))
    if s.startswith("run:") or s.startswith("- run:"):
        body = s.split("run:", 1)[1].strip()
        if body == "|":
            block, i = [], i + 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i][indent + 2:])
                i += 1
            body = "\n".join(block).rstrip() + "\n"
            i -= 1
        if "${{" in body:
            sys.exit(f"{sys.argv[1]}: a run step uses a ${{{{ }}}} expression: only Actions can run it")
        steps.append(("run", body))
    i += 1
print("set -u")
for k, v in env.items():
    print(f"export {k}={shlex.quote(v)}")
for n, (kind, body) in enumerate(steps, 1):
    if kind == "uses":
        print(f"echo 'step {n}: skipped uses: {body}'")
        continue
    print(f"echo 'step {n}: run'")
    print(f"bash -e <<'STEP_{n}' || exit $?")
    print(body.rstrip())
    print(f"STEP_{n}")
    print('while read -r p; do [ -n "$p" ] && PATH="$p:$PATH"; done <"$GITHUB_PATH"; export PATH')
