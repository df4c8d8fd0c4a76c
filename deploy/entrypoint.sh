#!/bin/sh
# The image's entrypoint: its first argument names the Ongrid process to become, with exec, so
# that process is PID 1 and receives the container's SIGTERM (docs/deploy.md, "Commands").
set -eu

usage() {
  echo "usage: entrypoint.sh web|worker|beat|im|migrate|wait-for-migrations|manage ARGS...|healthcheck" >&2
  exit 64
}

is_on() {  # the same words config.py reads as "on"
  case "$(printf '%s' "${1:-}" | tr '[:upper:]' '[:lower:]')" in 1|true|yes|on) return 0 ;; esac
  return 1
}

command="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$command" in
  web)
    # Behind a TLS proxy the client's address and scheme come from its headers; otherwise they
    # would be trusted from anyone who reaches the port.
    set -- -b 0.0.0.0 -p "${ONGRID_PORT:-8000}" "$@"
    if is_on "${ONGRID_TLS_PROXY:-}"; then set -- --proxy-headers "$@"; fi
    exec daphne "$@" ongrid_site.asgi:application ;;
  worker)
    # One worker per host (or pod), one prefork child per core it may use.
    exec celery -A ongrid_site worker -l "${ONGRID_CELERY_LOG_LEVEL:-info}" --pool=prefork \
      --concurrency="${ONGRID_WORKER_CONCURRENCY:-$(nproc)}" "$@" ;;
  beat)
    exec celery -A ongrid_site beat -l "${ONGRID_CELERY_LOG_LEVEL:-info}" "$@" ;;
  im)
    exec python manage.py ongrid_im "$@" ;;
  migrate)
    exec python manage.py migrate --noinput "$@" ;;
  wait-for-migrations)
    # For schedulers without start-order conditions (Kubernetes init containers): returns once
    # the database answers and has every migration this image ships.
    until python manage.py migrate --check >/dev/null 2>&1; do
      echo "waiting for the database to be migrated (manage.py migrate --check)"
      sleep "${ONGRID_MIGRATION_POLL_SECONDS:-5}"
    done ;;
  manage)
    [ "$#" -gt 0 ] || usage
    exec python manage.py "$@" ;;
  healthcheck)
    exec python /opt/ongrid/deploy/healthcheck.py "$@" ;;
  -h|--help|help)
    usage ;;
  *)
    echo "entrypoint.sh: unknown command '$command'" >&2
    usage ;;
esac
