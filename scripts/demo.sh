#!/usr/bin/env bash
# demo.sh — show `pgrelay tail` on a throwaway PostgreSQL 15.
#
# Builds bin/pgrelay, starts a temporary PostgreSQL 15 (wal_level=logical) on a
# free loopback port as an unprivileged user (user "postgres" when run as root),
# runs `pgrelay tail` against it, makes a few changes (insert, update, delete, a
# prepared transaction, a logical message) and prints the JSON lines tail
# wrote. Everything is stopped and removed on exit. Needs no stdin.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

say() { printf '\n==> %s\n' "$*" >&2; }
die() {
	echo "demo: $*" >&2
	exit 1
}

say "building bin/pgrelay"
mkdir -p bin
go build -o bin/pgrelay ./cmd/pgrelay

# Server binaries: Debian's PostgreSQL 15, fetched when missing.
PGBIN=$(scripts/fetch-postgres.sh 15 | sed -n 's/^postgres 15: //p')
[[ -x $PGBIN/postgres ]] || die "no PostgreSQL 15 server found (scripts/fetch-postgres.sh 15)"
PSQL=$(command -v psql || true)
[[ -n $PSQL ]] || PSQL=/usr/lib/postgresql/15/bin/psql
[[ -x $PSQL ]] || die "psql not found; install postgresql-client-15"

# Run server programs as an unprivileged user: PostgreSQL refuses root.
if [[ $(id -u) -eq 0 ]]; then
	id postgres >/dev/null 2>&1 || die "running as root needs an OS user named postgres to run the server"
	as_pg() { runuser -u postgres -- "$@"; }
else
	as_pg() { "$@"; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pgrelay-demo.XXXXXX")
chmod 755 "$WORK"
TAIL_PID=
cleanup() {
	set +e
	if [[ -n $TAIL_PID ]] && kill -0 "$TAIL_PID" 2>/dev/null; then
		kill -INT "$TAIL_PID"
		wait "$TAIL_PID" 2>/dev/null
	fi
	if [[ -f $WORK/data/postmaster.pid ]]; then
		as_pg "$PGBIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$WORK/data" "$WORK/run"
[[ $(id -u) -eq 0 ]] && chown postgres: "$WORK/data" "$WORK/run"

# A free loopback port: nothing answers on it.
PORT=
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % 30000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		PORT=$p
		break
	fi
done
[[ -n $PORT ]] || die "no free port found on 127.0.0.1"

say "starting PostgreSQL 15 on 127.0.0.1:$PORT in $WORK"
as_pg "$PGBIN/initdb" -D "$WORK/data" -U demo --auth=trust -E UTF8 --no-locale >"$WORK/initdb.log" 2>&1 ||
	{ cat "$WORK/initdb.log" >&2; die "initdb failed"; }
cat >>"$WORK/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$WORK/run'
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
max_prepared_transactions = 10
logical_decoding_work_mem = 64kB
fsync = off
EOF
as_pg "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/data/server.log" -w -t 60 start >/dev/null ||
	{ cat "$WORK/data/server.log" >&2; die "the server did not start"; }

URL="postgres://demo@127.0.0.1:$PORT/demo?sslmode=disable"
sql() {
	echo "SQL> $1" >&2
	"$PSQL" -X -q -v ON_ERROR_STOP=1 "$URL" -c "$1" </dev/null
}
"$PSQL" -X -q -v ON_ERROR_STOP=1 "postgres://demo@127.0.0.1:$PORT/postgres?sslmode=disable" -c "CREATE DATABASE demo" </dev/null

say "creating table orders"
sql "CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL, qty int NOT NULL)"

say "running: pgrelay tail (publication 'demo' is created for all tables)"
PGRELAY_SOURCE_URL=$URL PGRELAY_PUBLICATION=demo \
	bin/pgrelay tail >"$WORK/tail.jsonl" 2>"$WORK/tail.log" </dev/null &
TAIL_PID=$!
for _ in $(seq 1 300); do
	grep -q 'msg=streaming' "$WORK/tail.log" && break
	kill -0 "$TAIL_PID" 2>/dev/null || { cat "$WORK/tail.log" >&2; die "pgrelay tail exited"; }
	sleep 0.1
done
grep -q 'msg=streaming' "$WORK/tail.log" || { cat "$WORK/tail.log" >&2; die "pgrelay tail did not start streaming"; }
cat "$WORK/tail.log" >&2

say "making changes"
sql "INSERT INTO orders VALUES (1, 'apple', 3), (2, 'pear', 1)"
sql "BEGIN; UPDATE orders SET qty = qty + 1 WHERE id = 1; DELETE FROM orders WHERE id = 2; COMMIT"
sql "BEGIN; INSERT INTO orders VALUES (3, 'plum', 7); PREPARE TRANSACTION 'demo_gid'"
sql "COMMIT PREPARED 'demo_gid'"
sql "SELECT pg_logical_emit_message(false, 'demo', 'hello from pg_logical_emit_message')" >/dev/null

# Wait for the logical message: the last thing we did.
for _ in $(seq 1 100); do
	grep -q '"type":"message"' "$WORK/tail.jsonl" && break
	sleep 0.1
done

say "pgrelay tail wrote:"
if command -v jq >/dev/null 2>&1; then
	jq -c . "$WORK/tail.jsonl"
else
	cat "$WORK/tail.jsonl"
fi
grep -q '"type":"message"' "$WORK/tail.jsonl" || die "the logical message did not arrive"

say "stopping pgrelay tail (SIGINT)"
kill -INT "$TAIL_PID"
status=0
wait "$TAIL_PID" || status=$?
TAIL_PID=
[[ $status -eq 0 ]] || { cat "$WORK/tail.log" >&2; die "pgrelay tail exited with $status"; }
echo "pgrelay tail exited 0; cleaning up" >&2
