#!/usr/bin/env bash
# Runs a command with a throw-away PostgreSQL server on a loopback port:
#   scripts/with-postgres.sh make test
# Installs Debian's postgresql package when no server binaries are found,
# starts a cluster in a temporary folder, and a hot standby of it (streaming
# replication) on the next port, exports BRAID_TEST_POSTGRES_DSN and
# BRAID_TEST_POSTGRES_STANDBY_DSN for the command, and stops and removes both
# afterwards.
set -euo pipefail
port=${BRAID_PG_PORT:-55432}

find_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}
bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "with-postgres: installing postgresql" >&2
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  bin=$(find_bin)
fi
[ -x "$bin/initdb" ] || { echo "with-postgres: no PostgreSQL server found after install" >&2; exit 1; }

data=$(mktemp -d /tmp/braid-pg-XXXXXX)
run_as=()
if [ "$(id -u)" = 0 ]; then
  # PostgreSQL refuses to run as root: use the package's postgres user.
  id postgres >/dev/null 2>&1 || useradd --system --home-dir "$data" postgres
  chown postgres "$data"
  run_as=(runuser -u postgres --)
fi
cleanup() {
  "${run_as[@]}" "$bin/pg_ctl" -D "$data/standby" -m immediate stop >/dev/null 2>&1 || true
  "${run_as[@]}" "$bin/pg_ctl" -D "$data/db" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$data"
}
trap cleanup EXIT

"${run_as[@]}" "$bin/initdb" -D "$data/db" -U braid --auth=trust -E UTF8 >/dev/null
"${run_as[@]}" "$bin/pg_ctl" -D "$data/db" -l "$data/log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data -c fsync=on" start >/dev/null \
  || { cat "$data/log" >&2; exit 1; }
"$bin/pg_isready" -h 127.0.0.1 -p "$port" -t 30 >/dev/null || { cat "$data/log" >&2; exit 1; }

# The standby: a base backup of the primary that follows it (initdb's
# pg_hba.conf lets 127.0.0.1 replicate; wal_level replica is the default).
standby_port=$((port + 1))
"${run_as[@]}" "$bin/pg_basebackup" -h 127.0.0.1 -p "$port" -U braid -D "$data/standby" -R -X stream >/dev/null \
  || { echo "with-postgres: pg_basebackup failed" >&2; exit 1; }
"${run_as[@]}" "$bin/pg_ctl" -D "$data/standby" -l "$data/standby.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$standby_port -c unix_socket_directories=$data -c hot_standby=on" start >/dev/null \
  || { cat "$data/standby.log" >&2; exit 1; }
"$bin/pg_isready" -h 127.0.0.1 -p "$standby_port" -t 30 >/dev/null || { cat "$data/standby.log" >&2; exit 1; }

export BRAID_TEST_POSTGRES_DSN="postgres://braid@127.0.0.1:$port/postgres?sslmode=disable"
export BRAID_TEST_POSTGRES_STANDBY_DSN="postgres://braid@127.0.0.1:$standby_port/postgres?sslmode=disable"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, hot standby on $standby_port" >&2
"$@"
