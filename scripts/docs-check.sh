#!/usr/bin/env bash
# Runs the tutorials (docs/tutorials/*.md, or the files named) as CI: for each one a fresh server
# (embedded database in a temporary directory, a free port), then every ```sh block of the
# tutorial, in order, as one `bash -euo pipefail` script from the repository's root. Prints the
# time each tutorial took; on a failure (or after 2 minutes), the tutorial, the failing block and
# the server log's tail.
#
#   scripts/docs-check.sh [docs/tutorials/x.md …]
#   scripts/docs-check.sh --verbose [docs/tutorials/x.md …]  # also print what the blocks print
#   scripts/docs-check.sh --extract docs/tutorials/x.md     # print the script it would run; no server
#
# Conventions of a tutorial:
# - Blocks run are the fences tagged `sh` or `bash`; `localhost:3000` in them becomes the chosen port.
# - `<!-- docs-check: skip -->` on the line right before a fence leaves that block out. Skip only
#   the blocks that start the server: this script does that itself.
# - A ```json block tagged `service.config.json` (```` ```json service.config.json ````) is the
#   server's config file (SERVICE_CONFIG); without one the server runs with no config file.
# - The blocks get DATABASE_URL (the CLI needs the server's), SERVICE_CONFIG, PORT and SERVICE_LOG
#   (the file the server's output goes to), as the tutorial's skipped start block sets them.
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

# The body of the tutorial's ```json service.config.json block, if it has one.
extract_config() {
  awk '
    !inside && /^```json[ \t]+service\.config\.json[ \t]*$/ { inside = 1; found++; next }
    inside && /^```[ \t]*$/ { inside = 0; next }
    inside { print }
    END { if (found > 1) { print "more than one service.config.json block" > "/dev/stderr"; exit 1 } }
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
SERVER=""
stop_server() {
  if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; fi
  SERVER=""
}
trap 'stop_server; [ -z "$WORK" ] || rm -rf "$WORK"' EXIT

# Runs one tutorial; returns non-zero (having said why) when it fails.
check_tutorial() {
  local tutorial=$1 started=$SECONDS
  WORK=$(mktemp -d -t worktrack-docs.XXXXXX)
  local port log="$WORK/service.log" config=""
  port=$(free_port)
  extract_config "$tutorial" > "$WORK/service.config.json"
  [ -s "$WORK/service.config.json" ] && config="$WORK/service.config.json"
  {
    echo "cd $(printf %q "$PWD")"
    echo "trap 'echo \"\$DOCS_BLOCK\" > $(printf %q "$WORK/failed-block"); kill \$(jobs -p) 2>/dev/null || true' EXIT"
    extract_blocks "$tutorial" "$port"
    echo "trap 'kill \$(jobs -p) 2>/dev/null || true' EXIT"
  } > "$WORK/tutorial.sh"

  export DATABASE_URL="pglite:$WORK/db" PORT="$port" SERVICE_CONFIG="$config" SERVICE_LOG="$log"
  # The tutorial's own settings only: none from this shell's plugin lists, and the info lines tutorials read.
  env -u PLUGINS_ENABLED -u PLUGINS_DISABLED LOG_LEVEL=info node_modules/.bin/bun entries/bun.ts > "$log" 2>&1 &
  SERVER=$!
  local deadline=$((SECONDS + 60))
  until curl -sf --max-time 2 "localhost:$port/health" > /dev/null; do
    if ! kill -0 "$SERVER" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "FAIL $tutorial: the server did not answer /health on port $port; its log:" >&2
      tail -n 30 "$log" >&2
      stop_server; rm -rf "$WORK"; WORK=""
      return 1
    fi
    sleep 0.2
  done

  local status=0
  # Two minutes at most: a block waiting for something that never comes fails rather than hangs.
  timeout 120 bash -euo pipefail "$WORK/tutorial.sh" > "$WORK/output" 2>&1 || status=$?
  stop_server
  if [ "$status" -ne 0 ]; then
    local block
    block=$(cat "$WORK/failed-block" 2>/dev/null || echo '?')
    echo "FAIL $tutorial (exit $status, $((SECONDS - started)) s) in block $block:" >&2
    show_block "$tutorial" "$block" >&2
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
