#!/usr/bin/env bash
# The README's first-key walkthrough, runnable (CI runs it on a fresh database): starts the
# service, waits for /health, creates an organization, a user and an API key with the operator
# CLI, calls the API with the key, feeds a dashboard (a page and a component through API v1, an
# update through POST /api/component with the user's display key, read back), sends a push
# message through POST /api/message, and stops the service. Prints each step; exits non-zero at
# the first failure (with the service's log).
#
#   createdb -h 127.0.0.1 -U postgres worktrack   # once, as the README's first step
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/worktrack PORT=3000 scripts/walkthrough.sh
#
# The CLI runs beside the server, so DATABASE_URL must name a database of a PostgreSQL server
# (empty: CI makes a fresh one each run): the embedded database belongs to one process at a time.
# Needs bash, curl and Node (for JSON); no jq.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${DATABASE_URL:-}" in
  postgres://* | postgresql://*) ;;
  *) echo "walkthrough: set DATABASE_URL to a PostgreSQL database (postgres://…); the CLI runs beside the server" >&2; exit 2 ;;
esac
export PORT="${PORT:-3000}"
BASE="http://127.0.0.1:$PORT"
WORK="$(mktemp -d -t worktrack-walkthrough.XXXXXX)"
LOG="$WORK/service.log"
SERVER=""

step() { printf '\n==> %s\n' "$*"; }
# Reads one field of the JSON on stdin (`field data.id`); fails when it is absent.
field() { node -e 'let v = JSON.parse(require("fs").readFileSync(0, "utf8")); for (const k of process.argv[1].split(".")) v = v?.[k]; if (v === undefined) process.exit(1); console.log(typeof v === "string" ? v : JSON.stringify(v))' "$1"; }
# curl that prints the answer's body and fails (showing it) on any status but 2xx.
api() { curl -sS --fail-with-body "$@"; }

finish() {
  local status=$?
  if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then
    kill "$SERVER" && wait "$SERVER" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ]; then
    echo "walkthrough FAILED (exit $status); the service's log:" >&2
    [ -s "$LOG" ] && tail -n 40 "$LOG" >&2
    if grep -q 'does the database exist' "$LOG" 2>/dev/null; then
      echo "(the README's first step makes it: createdb -h <host> -U <user> <database>)" >&2
    fi
  fi
  rm -rf "$WORK"
}
trap finish EXIT

step "start the service on $BASE (database $(node -e 'const u = new URL(process.argv[1]); console.log(`${u.hostname}:${u.port || 5432}${u.pathname}`)' "$DATABASE_URL"))"
# Something already answering there would be mistaken for this service.
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then echo "port $PORT is taken: stop what listens there or set PORT"; exit 1; fi
# Bun itself, not `npm start`: npm would not pass the final `kill` on to the server.
node_modules/.bin/bun entries/bun.ts >"$LOG" 2>&1 &
SERVER=$!

step "wait for $BASE/health (60 s at most)"
deadline=$((SECONDS + 60))
until curl -sf --max-time 2 "$BASE/health" >/dev/null; do
  kill -0 "$SERVER" 2>/dev/null || { echo "the service exited before answering"; exit 1; }
  [ "$SECONDS" -lt "$deadline" ] || { echo "no answer on /health within 60 s"; exit 1; }
  sleep 0.2
done
curl -sS "$BASE/health"; echo

step "create an organization, an administrator and an API key with every scope (operator CLI)"
ORG=$(npm run --silent cli -- org create --name Acme | field id)
USER_JSON=$(npm run --silent cli -- user create --org "$ORG" --email ada@example.com --username ada \
  --name "Ada Lovelace" --role administrator --password 'correct horse battery')
ADA=$(field id <<<"$USER_JSON")
DISPLAY_KEY=$(field displayApiKey <<<"$USER_JSON") # the display key: printed this once, kept here
KEY=$(npm run --silent cli -- key create --user "$ADA" --name laptop --scopes all | field secret)
echo "organization $ORG, user $ADA, API key ${KEY:0:8}…, display key ${DISPLAY_KEY:0:8}…"

step "GET /api/v1/users/me with the API key"
api "$BASE/api/v1/users/me" -H "Authorization: Bearer $KEY" | field data.user.username

step "POST /api/v1/pages: a dashboard page"
PAGE=$(api "$BASE/api/v1/pages" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"name": "sales", "title": "Sales this week"}' | field data.id)
echo "page $PAGE"

step "POST /api/v1/pages/$PAGE/components: a bar chart on it"
COMPONENT=$(api "$BASE/api/v1/pages/$PAGE/components" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"type": "barChart", "title": "Orders per day", "width": 12}' | field data.id)
echo "component $COMPONENT"

step "POST /api/component with the display key: the chart's data"
api "$BASE/api/component" -H 'Content-Type: application/json' -d '{
  "componentId": "'"$COMPONENT"'", "apiKey": "'"$DISPLAY_KEY"'", "timestamp": '"$(date +%s)"',
  "data": {"type": "barChart", "backgroundColor": "#ffffff", "xNumber": false, "height": 240,
           "points": [{"x": "Mon", "y": 12, "color": "#3366cc"}, {"x": "Tue", "y": 17, "color": "#3366cc"}]}}'
echo

step "GET /api/v1/pages/$PAGE/components/$COMPONENT: the update landed"
POINTS=$(api "$BASE/api/v1/pages/$PAGE/components/$COMPONENT" -H "Authorization: Bearer $KEY" | field data.data.points)
echo "$POINTS"
[ "$POINTS" = '[{"x":"Mon","y":12,"color":"#3366cc"},{"x":"Tue","y":17,"color":"#3366cc"}]' ] || { echo "the component does not hold the posted data"; exit 1; }

step "POST /api/message with the display key: a push to the page's audience"
api "$BASE/api/message" -D "$WORK/headers" -H 'Content-Type: application/json' \
  -d '{"apiKey": "'"$DISPLAY_KEY"'", "pageName": "sales", "message": "Orders are up 40 % today"}'
echo
MESSAGE=$(tr -d '\r' <"$WORK/headers" | sed -n 's/^x-message-id: //Ip')
[ -n "$MESSAGE" ] || { echo "no X-Message-Id header"; exit 1; }
echo "message $MESSAGE"

step "GET /api/v1/pages/$PAGE/messages/$MESSAGE: its delivery report (no device registered: nothing targeted)"
api "$BASE/api/v1/pages/$PAGE/messages/$MESSAGE" -H "Authorization: Bearer $KEY" | field data

step "stop the service"
kill "$SERVER"
wait "$SERVER" || true
SERVER=""
echo "walkthrough passed"
