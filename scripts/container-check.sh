#!/usr/bin/env bash
# Builds the project's Dockerfile, unchanged, with podman and checks the image end to end: it
# starts against the PostgreSQL server on 127.0.0.1:5432 (a fresh database), becomes ready, the
# operator CLI inside it makes an organization, a user and a key, the key serves an authenticated
# request, the service runs as a non-root user, /app/data is a volume and an embedded database in
# it outlives its container. Base images cannot be pulled on this machine kind, so the two the
# Dockerfile names are made locally first (stand-ins: scripts/container/*.Containerfile, built from
# a debootstrap of the same Debian release with Node 20 added). Everything lives in a private podman storage under
# a temporary directory that is removed at the end, with the database, even on failure.
# Needs root (apt-get, debootstrap, podman). Exits non-zero if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly SUITE=bookworm                      # the Debian release of node:20-bookworm-slim
readonly DATABASE=worktrack_container_check
readonly PG="-h 127.0.0.1 -p 5432 -U postgres"
export PGOPTIONS='-c client_min_messages=warning'
# Debian packages debootstrap downloads, kept between runs: debootstrap checks each against the
# release's signed package lists and fetches again what no longer matches, so it stays correct.
readonly DEBOOTSTRAP_CACHE=/var/cache/worktrack-container-check/debootstrap
readonly TAG=localhost/worktrack-container-check:latest
readonly CONTAINER=worktrack-container-check
readonly VOLUME=worktrack-container-check-data

started=$SECONDS
work=$(mktemp -d /var/tmp/worktrack-container-check.XXXXXX)
log=$work/log
summary=()
failed=0

step() { printf '==> %s\n' "$*"; }
pass() { summary+=("ok    $*"); printf '    ok: %s\n' "$*"; }
fail() { summary+=("FAIL  $*"); printf '    FAIL: %s\n' "$*"; failed=1; }
# Shows the end of $log and stops the script.
stop_with_log() { printf '    failed: %s\n' "$*"; tail -n 40 "$log" | sed 's/^/    | /'; exit 1; }
# Runs a command with its output in $log; on failure shows the log's end and stops the script.
quiet() { "$@" >"$log" 2>&1 || stop_with_log "$*"; }
elapsed() { printf '%ds' $((SECONDS - $1)); }

export CONTAINERS_CONF=$PWD/scripts/container/containers.conf TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
podman() {
  command podman --root "$work/storage" --runroot "$work/run" --tmpdir "$work/libpod" \
    --storage-driver=vfs --cgroup-manager=cgroupfs --runtime runc "$@"
}

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  exec >&3 2>&4  # an interrupted `quiet` leaves them on its log
  if [ -d "$work/storage" ]; then
    podman rm --force --time 5 "$CONTAINER" >/dev/null 2>&1 || true
    podman rm --force --all >/dev/null 2>&1 || true
    podman volume rm --force --all >/dev/null 2>&1 || true
    podman rmi --force --all >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
  dropdb $PG --if-exists "$DATABASE" >/dev/null 2>&1 || true
  printf 'removed: the containers, images and volume (private podman storage in %s), database %s (%s in all)\n' \
    "$work" "$DATABASE" "$(elapsed "$started")"
  [ $code -eq 0 ] && [ $failed -eq 0 ] || printf 'container check failed after %s\n' "$(elapsed "$started")"
  exit $(( code ? code : failed ))
}
exec 3>&1 4>&2
trap cleanup EXIT
trap 'exit 130' INT TERM

# The apt source of Debian $SUITE this machine already uses (deb822 .sources or one-line .list).
debian_mirror() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -e "$file" ] || continue
    awk -v suite="$SUITE" 'BEGIN { RS = "" } {
      uri = ""; has_suite = 0; has_deb = 0; n = split($0, lines, "\n")
      for (i = 1; i <= n; i++) {
        if (lines[i] ~ /^URIs:/) { split(lines[i], words, /[ \t]+/); uri = words[2] }
        if (lines[i] ~ /^Suites:/ && (lines[i] " ") ~ ("[ \t]" suite "[ \t]")) has_suite = 1
        if (lines[i] ~ /^Types:/ && (lines[i] " ") ~ /[ \t]deb[ \t]/) has_deb = 1
      }
      if (uri != "" && has_suite && has_deb) { print uri; exit }
    }' "$file"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v suite="$SUITE" '$1 == "deb" { i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /\]$/ && $i ~ /^\[|=/) i++; if ($(i + 1) == suite) { print $i; exit } }' || true
}

step "podman, runc and debootstrap (Debian packages)"
missing=()
for package in podman runc debootstrap; do dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1 ||
    { apt-get update >"$log" 2>&1 && quiet apt-get install -y --no-install-recommends "${missing[@]}"; }
  echo "    installed: ${missing[*]}"
fi
echo "    $(command podman --version), runc $(runc --version | awk 'NR == 1 { print $3 }')"
pg_isready $PG -q || { echo "PostgreSQL is not reachable on 127.0.0.1:5432"; exit 1; }

# Every build here uses --layers=false: no build cache outlives the run, and with vfs storage each
# layer kept would be a whole copy of the file system.
step "stand-in base images"
mark=$SECONDS
mirror=$(debian_mirror | head -n 1 || true)
[ -n "$mirror" ] || { echo "no apt source for Debian $SUITE in /etc/apt"; exit 1; }
mkdir -p "$DEBOOTSTRAP_CACHE" "$work/rootfs"
quiet debootstrap --variant=minbase --cache-dir="$DEBOOTSTRAP_CACHE" "$SUITE" "$work/rootfs" "$mirror"
tar -C "$work/rootfs" -c . | podman import - localhost/debian-min:$SUITE >"$log" 2>&1 || stop_with_log "podman import"
rm -rf "$work/rootfs"
echo "    localhost/debian-min:$SUITE: debootstrap --variant=minbase from $mirror ($(elapsed "$mark"))"

mkdir -p "$work/node"
cp /usr/bin/node "$work/node/node"
cp -a /usr/lib/node_modules/npm "$work/node/npm"
cp /etc/ssl/certs/ca-certificates.crt "$work/node/ca-certificates.crt"
if [ -f /etc/npmrc ]; then cp /etc/npmrc "$work/node/npmrc"; else echo "cafile=/etc/ssl/certs/ca-certificates.crt" >"$work/node/npmrc"; fi
quiet podman build --isolation=chroot --pull=never --format docker --layers=false \
  -t docker.io/library/node:20-bookworm-slim -f scripts/container/node.Containerfile "$work/node"
rm -rf "$work/node"
echo "    docker.io/library/node:20-bookworm-slim: this machine's node $(node --version), npm $(npm --version 2>/dev/null)"

mkdir -p "$work/bun"
cp node_modules/bun/bin/bun.exe "$work/bun/bun"
quiet podman build --isolation=chroot --pull=never --format docker --layers=false \
  -t docker.io/oven/bun:1.4-slim -f scripts/container/bun.Containerfile "$work/bun"
rm -rf "$work/bun"
echo "    docker.io/oven/bun:1.4-slim: node_modules/bun $(node_modules/bun/bin/bun.exe --version), user bun (1000)"
pass "stand-in base images made ($(elapsed "$mark"))"

step "build the Dockerfile (podman, vfs storage)"
mark=$SECONDS
quiet podman build --isolation=chroot --pull=never --format docker --layers=false -t "$TAG" .
size=$(podman image inspect --format '{{.Size}}' "$TAG")
pass "image built ($(elapsed "$mark"), $((size / 1024 / 1024)) MiB)"

step "image metadata"
volumes=$(podman image inspect --format '{{json .Config.Volumes}}' "$TAG")
case $volumes in *'"/app/data"'*) pass "/app/data is a declared volume";; *) fail "/app/data is not a declared volume (Volumes: $volumes)";; esac
user=$(podman image inspect --format '{{.Config.User}}' "$TAG")
[ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ] && pass "image user is $user" || fail "image user is '${user:-root}'"
healthcheck=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$TAG")
case $healthcheck in *'/health'*) pass "HEALTHCHECK on /health kept";; *) fail "no HEALTHCHECK (got $healthcheck)";; esac

step "run against PostgreSQL (fresh database $DATABASE, --network=host)"
mark=$SECONDS
dropdb $PG --if-exists "$DATABASE" && createdb $PG "$DATABASE"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
database_url=postgres://postgres@127.0.0.1:5432/$DATABASE
quiet podman run -d --name "$CONTAINER" --network=host -e PORT="$port" -e DATABASE_URL="$database_url" "$TAG"
deadline=$((SECONDS + 90))
ready=''
while [ $SECONDS -lt $deadline ]; do
  ready=$(curl -fsS "http://127.0.0.1:$port/ready" 2>/dev/null) && break
  ready=''
  [ "$(podman inspect --format '{{.State.Running}}' "$CONTAINER")" = true ] || break
  sleep 0.5
done
if [ -z "$ready" ]; then
  fail "/ready did not answer 200 within 90 s"
  podman logs --tail 40 "$CONTAINER" 2>&1 | sed 's/^/    | /'
  exit 1
fi
pass "/ready answered $ready after $(elapsed "$mark") (port $port)"

step "operator CLI inside the container"
cli() { podman exec "$CONTAINER" bun entries/cli.ts "$@"; }
# The field $1 of the JSON object on stdin, or nothing.
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { console.log(JSON.parse(s)[process.argv[1]] ?? "") } catch { console.log("") } })' "$1"; }
organization=$( (cli org create --name 'Container Check' || true) | field id)
user_id=$( (cli user create --org "$organization" --email container-check@example.com --username container-check \
  --name 'Container Check' --role member --password 'container check password' || true) | field id)
secret=$( (cli key create --user "$user_id" --name container-check --scopes users:read || true) | field secret)
[ -n "$organization" ] && [ -n "$user_id" ] && [ -n "$secret" ] &&
  pass "bun entries/cli.ts: org create, user create, key create" || fail "the CLI did not create the organization, user and key"

step "authenticated request"
status=$(curl -sS -o "$work/me.json" -w '%{http_code}' -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/v1/users/me")
me=$(node -e 'console.log(JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).data?.user?.id ?? "")' "$work/me.json" 2>/dev/null || true)
[ "$status" = 200 ] && [ "$me" = "$user_id" ] && pass "GET /api/v1/users/me with the key: 200, the CLI's user" ||
  fail "GET /api/v1/users/me answered $status ($(head -c 200 "$work/me.json"))"

step "user and volume of the running container"
exec_uid=$(podman exec "$CONTAINER" id -u || true)
pid=$(podman inspect --format '{{.State.Pid}}' "$CONTAINER" || true)
process_uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
process=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | sed 's/ $//' || true)
[ -n "$exec_uid" ] && [ "$exec_uid" != 0 ] && [ -n "$process_uid" ] && [ "$process_uid" != 0 ] && pass "runs as uid $process_uid ($process), exec as uid $exec_uid" ||
  fail "runs as uid $process_uid, exec as uid $exec_uid"
mounts=$(podman inspect --format '{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}' "$CONTAINER" || true)
case $mounts in *':/app/data '*) pass "container mounts a volume on /app/data";; *) fail "no volume on /app/data (mounts: $mounts)";; esac
buns=$(podman exec "$CONTAINER" sh -c 'command -v bun; ls -d node_modules/bun node_modules/@oven 2>/dev/null' | tr '\n' ' ' || true)
[ "$buns" = '/usr/local/bin/bun ' ] && pass "one Bun in the image (/usr/local/bin/bun, none in node_modules)" ||
  fail "Bun in the image: $buns"
podman healthcheck run "$CONTAINER" >"$log" 2>&1 && pass "the image's HEALTHCHECK passes" || fail "HEALTHCHECK: $(tail -n 1 "$log")"
# Without systemd podman cannot remove the health check's timer, and says so: not an error here.
podman rm --force --time 5 "$CONTAINER" >/dev/null 2>&1

step "embedded database on a volume outlives its container"
mark=$SECONDS
# Two one-off containers, no DATABASE_URL: the second adds a user to the first one's organization.
once() { podman run --rm --no-healthcheck -v "$VOLUME:/app/data" "$TAG" bun entries/cli.ts "$@" || true; }
embedded_organization=$(once org create --name Embedded | field id)
embedded_user=$(once user create --org "$embedded_organization" --email embedded@example.com --username embedded \
  --name Embedded --role member --password 'embedded check password' | field id)
[ -n "$embedded_organization" ] && [ -n "$embedded_user" ] &&
  pass "an organization made in one container is found by the next ($(elapsed "$mark"))" ||
  fail "the embedded database did not outlive its container"

printf '\ncontainer check (%s, %s total):\n' "$TAG" "$(elapsed "$started")"
printf '  %s\n' "${summary[@]}"
