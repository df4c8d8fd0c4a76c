#!/usr/bin/env bash
# Builds the Dockerfile with buildah (vfs storage, chroot isolation: no daemon, no privileges
# beyond root) on a Debian base made with debootstrap, then runs the image's own commands against
# the PostgreSQL and Redis on 127.0.0.1 that CI starts: migrate, web (/healthz, a translated page,
# a baked static file) and a worker answering the broker's ping. Usage: deploy/image-smoke-test.sh
# Needs: buildah, debootstrap (Debian packages), PostgreSQL and Redis on 127.0.0.1, run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

S=(--storage-driver vfs)
CACHE="${ONGRID_IMAGE_CACHE:-/var/tmp/ongrid-image}"
mkdir -p "$CACHE"
BASE=localhost/ongrid-base:bookworm
IMAGE=localhost/ongrid:smoke
# Ongrid's layers on top of the base; with python:3.11-slim (about 130 MB) they keep the image
# under the 300 MB of docs/deploy.md.
MAX_ADDED_MB="${ONGRID_IMAGE_MAX_ADDED_MB:-170}"

log() { printf '\n== image: %s\n' "$*"; }

apt_mirror() {  # the Debian mirror this machine's apt already uses
  { sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null
    sed -n 's/^deb  *\(http[^ ]*\) .*main.*/\1/p' /etc/apt/sources.list 2>/dev/null
  } | grep -v -- '-security' | head -n 1
}

make_base() {
  buildah "${S[@]}" inspect --type image "$BASE" >/dev/null 2>&1 && return
  log "making the base image with debootstrap (Debian bookworm, its python3 is 3.11)"
  rm -rf "$CACHE/rootfs"; mkdir -p "$CACHE"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$CACHE/rootfs" "${ONGRID_DEBIAN_MIRROR:-$(apt_mirror)}" >"$CACHE/debootstrap.log"
  # The base trusts what this machine trusts, so pip inside the build reaches the same index.
  cp /etc/ssl/certs/ca-certificates.crt "$CACHE/rootfs/etc/ssl/certs/ca-certificates.crt"
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$CACHE/rootfs/etc/pip.conf"
  rm -rf "$CACHE/rootfs/var/cache/apt/archives/"*.deb "$CACHE/rootfs/var/lib/apt/lists/"*
  tar -C "$CACHE/rootfs" -cf "$CACHE/base.tar" .
  local ctr; ctr=$(buildah "${S[@]}" from scratch)
  buildah "${S[@]}" add "$ctr" "$CACHE/base.tar" / >/dev/null
  buildah "${S[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah "${S[@]}" commit -q --rm "$ctr" "$BASE" >/dev/null
  rm -rf "$CACHE/rootfs" "$CACHE/base.tar"
}

size_mb() {  # buildah reports sizes as text in SI units ("344 MB")
  buildah "${S[@]}" images --json "$1" | python3 -c '
import json, sys
number, unit = json.load(sys.stdin)[0]["size"].split()
print(round(float(number) * {"kB": 1e-3, "MB": 1, "GB": 1e3}[unit]))'
}

make_base
log "building the Dockerfile"
# Docker's format, not OCI's: only it keeps HEALTHCHECK and SHELL.
buildah "${S[@]}" bud --quiet --format docker --isolation chroot --layers=false \
  --build-arg PYTHON_IMAGE="$BASE" --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  -t "$IMAGE" . >/dev/null
added=$(( $(size_mb "$IMAGE") - $(size_mb "$BASE") ))
echo "Ongrid's layers: ${added} MB over the base (limit ${MAX_ADDED_MB} MB)"
[ "$added" -le "$MAX_ADDED_MB" ] || { echo "the image grew past its size target"; exit 1; }

user=$(buildah "${S[@]}" inspect --type image --format '{{.Docker.Config.User}}' "$IMAGE")
[ "${user%%:*}" != 0 ] && [ -n "$user" ] || { echo "the image runs as root ($user)"; exit 1; }
health=$(buildah "${S[@]}" inspect --type image --format '{{.Docker.Config.Healthcheck.Test}}' "$IMAGE")
[[ "$health" == *"entrypoint.sh healthcheck"* ]] || { echo "the image has no HEALTHCHECK ($health)"; exit 1; }
echo "runs as $user; health check: $health"

db=ongrid_image_smoke
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ctr=$(buildah "${S[@]}" from -q "$IMAGE")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  buildah "${S[@]}" rm "$ctr" >/dev/null 2>&1 || true
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
}
trap cleanup EXIT
run() {  # run COMMAND...: the image's entrypoint with the production shape's settings
  buildah "${S[@]}" run --isolation chroot --network host \
    --env SECRET_KEY=image-smoke-test-key --env ALLOWED_HOSTS=localhost --env ONGRID_HTTPS=0 \
    --env DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db" --env REDIS_URL=redis://127.0.0.1:6379/9 \
    --env ONGRID_PORT="$port" --env ONGRID_WORKER_CONCURRENCY=2 \
    "$ctr" -- /opt/ongrid/deploy/entrypoint.sh "$@"
}

log "migrate, then web on port $port and a worker"
run migrate >/dev/null
setsid bash -c "$(declare -f run); $(declare -p S ctr db port); run web" >"$CACHE/web.log" 2>&1 &
pids+=($!)
setsid bash -c "$(declare -f run); $(declare -p S ctr db port); run worker" >"$CACHE/worker.log" 2>&1 &
pids+=($!)

python3 - "$port" <<'PY' || { echo "web failed; its log:"; cat "$CACHE/web.log"; exit 1; }
import sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
def get(path, **headers):
    request = urllib.request.Request(base + path, headers={"Host": "localhost", **headers})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode(errors="replace")
deadline = time.monotonic() + 120
while True:
    try:
        status, body = get("/healthz")
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("/healthz never answered 200")
        time.sleep(1)
assert status == 200, body
status, page = get("/accounts/login/", **{"Accept-Language": "fr"})
assert "Connexion à Ongrid" in page, page[:300]  # the baked French catalog
status, _ = get("/static/admin/css/base.css")
assert status == 200
print("web: /healthz 200, the login page in French, static files served")
PY

for _ in $(seq 60); do
  if run manage shell -c "from ongrid_site.celery import app; import sys; sys.exit(not app.control.ping(timeout=3))" \
       >/dev/null 2>&1; then
    echo "worker: answers the broker's ping"; exit 0
  fi
  sleep 2
done
echo "the worker never answered; its log:"; cat "$CACHE/worker.log"; exit 1
