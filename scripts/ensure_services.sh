#!/usr/bin/env bash
# Start PostgreSQL and Redis on this machine when they are down and can be started here.
# Used by `make test`; a DATABASE_URL / REDIS_URL that points elsewhere is left alone.
set -euo pipefail

db_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/portal}"
redis_url="${REDIS_URL:-redis://127.0.0.1:6379/0}"

wait_for() { # name, command...
  local name=$1; shift
  for _ in $(seq 1 30); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "ensure_services: $name did not come up" >&2; return 1
}

if [[ "$db_url" == *"@127.0.0.1:5432"* || "$db_url" == *"@localhost:5432"* ]]; then
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
      echo "Starting PostgreSQL"
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
      wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
    else
      echo "PostgreSQL is not running on 127.0.0.1:5432 and cannot be started here;" \
           "install it (apt-get install postgresql) or set DATABASE_URL." >&2
      exit 1
    fi
  fi
fi

if [[ "$redis_url" == *"127.0.0.1:6379"* || "$redis_url" == *"localhost:6379"* ]]; then
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    if command -v redis-server >/dev/null; then
      echo "Starting Redis"
      mkdir -p /var/lib/redis /var/log/redis
      redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
        --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
      wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
    else
      echo "Redis is not running on 127.0.0.1:6379 and cannot be started here;" \
           "install it (apt-get install redis-server) or set REDIS_URL." >&2
      exit 1
    fi
  fi
fi
