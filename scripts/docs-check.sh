#!/usr/bin/env bash
# Runs the tutorials (docs/tutorials/*.md, or the files named) as CI: for each one a fresh server
# (embedded database in a temporary directory, a free port), then every ```sh block of the
# tutorial, in order, as one `bash -euo pipefail` script from the repository's root. Prints the
# time each tutorial took; on a failure (or after 4 minutes), the tutorial, the failing block and
# the server log's tail.
#
#   scripts/docs-check.sh [docs/tutorials/x.md …]
#   scripts/docs-check.sh --verbose [docs/tutorials/x.md …]  # also print what the blocks print
#   scripts/docs-check.sh --extract docs/tutorials/x.md     # print the blocks it would run; no server
#
# Conventions of a tutorial:
# - Blocks run are the fences tagged `sh` or `bash`. The first sets `BASE=${BASE:-http://localhost:3000}`
#   and every later one calls `$BASE/…`: this script sets BASE to its server (and, for a line
#   still naming it, replaces `localhost:3000` with the chosen port).
# - `<!-- docs-check: skip -->` on the line right before a fence leaves that block out. Skip only
#   the block that starts the server: this script starts it itself, the same way, in the same
#   script as the blocks (so that the blocks may stop it): `bun entries/bun.ts > "$SERVICE_LOG"
#   2>&1 &` and `SERVICE_PID=$!`.
# - The last block stops that server (`kill "$SERVICE_PID"`, then waits for it to exit): a
#   tutorial that leaves its server running fails, since a reader's next tutorial would meet it
#   on the same port.
# - A ```json block tagged with a file name (```` ```json mobile.config.json ````) is the server's
#   config file, saved under that name in the checkout by a reader and given as SERVICE_CONFIG by
#   the skipped start block; without one the server runs with no config file.
# - The blocks get DATABASE_URL (the CLI needs the server's), SERVICE_CONFIG, PORT, BASE,
#   SERVICE_LOG (the file the server's output goes to, one per tutorial: two servers writing one
#   file, one of them truncating it, leave a run of NUL bytes where the other's offset was) and
#   SERVICE_PID, as the tutorial's skipped start block sets them.
# Needs bash, curl, awk and Node; no jq.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

# The blocks that run, as one script: each preceded by the number and line it has in the tutorial.
extract_blocks() { # tutorial, port
  awk -v port="$2" '
    fence == "" && /^<!-- docs-check: skip -->[ \t]*$/ { marked = NR; next }
    fence == "" && /^```/ {
      split(substr($0, 4), info, /[ \t]+/)
      fence = "other"
      if ((info[1] == "sh" || info[1] == "bash") && marked != NR - 1) {
        fence = "run"; blocks++
        printf "DOCS_BLOCK=%d DOCS_LINE=%d\n", blocks, NR
      }
      next
    }
    fence != "" && /^```[ \t]*$/ { fence = ""; next }
    fence == "run" { gsub(/localhost:3000/, "localhost:" port); print }
  ' "$1"
}

# The body of the tutorial's ```json block tagged with a file name (the server's config file), if it has one.
extract_config() {
  awk '
    !inside && /^```json[ \t]+[A-Za-z0-9._-]+\.json[ \t]*$/ { inside = 1; found++; next }
    inside && /^```[ \t]*$/ { inside = 0; next }
    inside { print }
    END { if (found > 1) { print "more than one config file block (```json <name>.json)" > "/dev/stderr"; exit 1 } }
  ' "$1"
}

# The block numbered $2 of tutorial $1, as written, with its line numbers, for the failure report.
show_block() {
  extract_blocks "$1" 3000 | awk -v wanted="$2" '
    /^DOCS_BLOCK=[0-9]+ DOCS_LINE=[0-9]+$/ { split($0, marker, /[= ]/); shown = marker[2] == wanted; line = marker[4]; next }
    shown { printf "  %4d | %s\n", ++line, $0 }
  '
}

if [ "${1:-}" = "--extract" ]; then
  [ $# -eq 2 ] || { echo "usage: scripts/docs-check.sh --extract <tutorial.md>" >&2; exit 2; }
  extract_blocks "$2" 3000
  exit 0
fi

free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'; }

WORK=""
# The server of the tutorial being run, if its script could not stop it (killed at its time
# limit): its PID is in $WORK/server.pid. Ten seconds to stop, then killed.
stop_leftover() {
  [ -n "$WORK" ] && [ -s "$WORK/server.pid" ] || return 0
  local pid tries=0
  pid=$(cat "$WORK/server.pid")
  kill "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
}
trap 'stop_leftover; [ -z "$WORK" ] || rm -rf "$WORK"' EXIT

# The script run for a tutorial: its server started as the skipped start block starts it, then
# its blocks, then the check that the last of them stopped that server.
tutorial_script() { # tutorial, port
  local work
  work=$(printf %q "$WORK")
  cat <<SCRIPT
cd $(printf %q "$PWD")
# However it ends, its background processes (the server among them) are stopped and waited for.
trap 'echo "\$DOCS_BLOCK" > $work/failed-block; kill \$(jobs -p) 2>/dev/null || true; wait' EXIT
DOCS_BLOCK=start
# The tutorial's own settings only: none from this shell's plugin lists, and the info lines tutorials read.
env -u PLUGINS_ENABLED -u PLUGINS_DISABLED LOG_LEVEL=info node_modules/.bin/bun entries/bun.ts > "\$SERVICE_LOG" 2>&1 &
SERVICE_PID=\$!
echo "\$SERVICE_PID" > $work/server.pid
deadline=\$((SECONDS + 120))
until curl -sf --max-time 2 "\$BASE/health" > /dev/null; do
  kill -0 "\$SERVICE_PID" 2>/dev/null || { echo "the server exited before answering \$BASE/health" >&2; exit 1; }
  [ "\$SECONDS" -lt "\$deadline" ] || { echo "the server did not answer \$BASE/health within 2 minutes" >&2; exit 1; }
  sleep 0.2
done
SCRIPT
  extract_blocks "$1" "$2"
  cat <<'SCRIPT'
DOCS_BLOCK=end
if kill -0 "$SERVICE_PID" 2>/dev/null; then
  echo 'the server still runs after the last block: a tutorial ends with a block that stops it (kill "$SERVICE_PID")' >&2
  exit 1
fi
trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT
SCRIPT
}

# Runs one tutorial; returns non-zero (having said why) when it fails.
check_tutorial() {
  local tutorial=$1 started=$SECONDS
  WORK=$(mktemp -d -t worktrack-docs.XXXXXX)
  local port log="$WORK/service.log" config=""
  port=$(free_port)
  extract_config "$tutorial" > "$WORK/service.config.json"
  [ -s "$WORK/service.config.json" ] && config="$WORK/service.config.json"
  tutorial_script "$tutorial" "$port" > "$WORK/tutorial.sh"

  export DATABASE_URL="pglite:$WORK/db" PORT="$port" BASE="http://localhost:$port" SERVICE_CONFIG="$config" SERVICE_LOG="$log"
  local status=0
  # Four minutes at most, the server's start included: a block waiting for something that never
  # comes fails rather than hangs.
  timeout -k 15 240 bash -euo pipefail "$WORK/tutorial.sh" > "$WORK/output" 2>&1 || status=$?
  stop_leftover
  if [ "$status" -ne 0 ]; then
    local block
    block=$(cat "$WORK/failed-block" 2>/dev/null || echo '?')
    case "$block" in
      start) echo "FAIL $tutorial (exit $status, $((SECONDS - started)) s): its server did not start" >&2 ;;
      end) echo "FAIL $tutorial (exit $status, $((SECONDS - started)) s): its server still ran after the last block" >&2 ;;
      *)
        echo "FAIL $tutorial (exit $status, $((SECONDS - started)) s) in block $block:" >&2
        show_block "$tutorial" "$block" >&2
        ;;
    esac
    echo "--- its output (last 30 lines):" >&2
    tail -n 30 "$WORK/output" >&2
    echo "--- the server's log (last 30 lines):" >&2
    tail -n 30 "$log" >&2
  else
    [ "$VERBOSE" = 0 ] || cat "$WORK/output"
    echo "ok   $tutorial ($((SECONDS - started)) s)"
  fi
  rm -rf "$WORK"; WORK=""
  return "$status"
}

VERBOSE=0
if [ "${1:-}" = "--verbose" ]; then VERBOSE=1; shift; fi
tutorials=("$@")
[ ${#tutorials[@]} -gt 0 ] || tutorials=(docs/tutorials/*.md)
failed=0
started=$SECONDS
for tutorial in "${tutorials[@]}"; do
  check_tutorial "$tutorial" || failed=1
done
echo "docs-check: ${#tutorials[@]} tutorials in $((SECONDS - started)) s"
exit "$failed"
