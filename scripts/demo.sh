#!/usr/bin/env bash
# demo.sh — replicate a sample database with pgrelay, on throwaway PostgreSQL.
#
# Builds bin/pgrelay, starts a temporary PostgreSQL 15 (wal_level=logical) on a
# free loopback port as an unprivileged user (user "postgres" when run as root)
# holding a source database "demo" and a target database "replica". Then:
#   1. `pgrelay tail` shows the decoded change stream of a few transactions;
#   2. `pgrelay migrate` copies a sample database into the target and exits;
#   3. `pgrelay replicate` streams further changes (updates, deletes, a
#      prepared transaction held prepared on the target, a new column) until
#      SIGTERM; source and target are compared; `pgrelay status` reports and
#      `pgrelay verify` compares them again, chunk by chunk.
#   4. The same sample database goes into a throwaway MariaDB (started like
#      PostgreSQL, as an unprivileged user: "mysql" when run as root) through
#      a mysql:// target URL: migrate (LOAD DATA), replicate with a prepared
#      transaction held as an XA transaction, status, verify.
# Everything is stopped and removed on exit. Needs no stdin.
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
REPL_PID=
MY_PID=
cleanup() {
	set +e
	for pid in $TAIL_PID $REPL_PID; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -INT "$pid"
			wait "$pid" 2>/dev/null
		fi
	done
	if [[ -f $WORK/data/postmaster.pid ]]; then
		as_pg "$PGBIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1
	fi
	# MY_PID is the subshell that runs runuser: mariadbd itself is named by
	# its pid file, and a signal to the subshell alone would leave it running.
	local mypids=$MY_PID
	[[ -f $WORK/mariadb/mariadbd.pid ]] && mypids="$(cat "$WORK/mariadb/mariadbd.pid") $mypids"
	for pid in $mypids; do
		kill -0 "$pid" 2>/dev/null || continue
		kill -TERM "$pid"
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$WORK/data" "$WORK/run"
[[ $(id -u) -eq 0 ]] && chown postgres: "$WORK/data" "$WORK/run"

say "creating a PostgreSQL 15 cluster in $WORK"
as_pg "$PGBIN/initdb" -D "$WORK/data" -U demo --auth=trust -E UTF8 --no-locale >"$WORK/initdb.log" 2>&1 ||
	{ cat "$WORK/initdb.log" >&2; die "initdb failed"; }
cat >>"$WORK/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK/run'
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
max_prepared_transactions = 10
logical_decoding_work_mem = 64kB
fsync = off
EOF

# A free loopback port: nothing answers on it, and it is below the kernel's
# range of ports for outgoing connections (32768 and up by default), so no
# client socket holds it. Should another process take it first, try another.
PORT=
for _ in $(seq 1 10); do
	p=$((20000 + RANDOM % 12000))
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		continue
	fi
	[[ -f $WORK/data/server.log ]] && : >"$WORK/data/server.log" # this try's lines only
	if as_pg "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/data/server.log" -o "-p $p" -w -t 60 start >/dev/null; then
		PORT=$p
		break
	fi
	grep -q "could not bind" "$WORK/data/server.log" ||
		{ cat "$WORK/data/server.log" >&2; die "the server did not start"; }
done
[[ -n $PORT ]] || { cat "$WORK/data/server.log" >&2; die "no free port found on 127.0.0.1 in 10 tries"; }
say "started PostgreSQL 15 on 127.0.0.1:$PORT"

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

# ---------------------------------------------------------------------------
# Replication: migrate, then replicate.
TARGET="postgres://demo@127.0.0.1:$PORT/replica?sslmode=disable"
"$PSQL" -X -q -v ON_ERROR_STOP=1 "postgres://demo@127.0.0.1:$PORT/postgres?sslmode=disable" -c "CREATE DATABASE replica" </dev/null
tsql() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$TARGET" -c "$1" </dev/null; }
export PGRELAY_SOURCE_URL=$URL PGRELAY_TARGET_URL=$TARGET PGRELAY_SLOT=demo_slot PGRELAY_PUBLICATION=demo_pub

say "creating a sample database: customers (10,000 rows), invoices (50,000 rows), an enum, a JSON column"
sql "CREATE TYPE tier AS ENUM ('free', 'pro', 'enterprise')"
sql "CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL, tier tier NOT NULL DEFAULT 'free', profile jsonb, created timestamptz NOT NULL DEFAULT now())"
sql "CREATE TABLE invoices (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers, amount numeric(12,2) NOT NULL, paid bool NOT NULL DEFAULT false, note text)"
sql "CREATE INDEX invoices_customer ON invoices (customer_id)"
sql "INSERT INTO customers SELECT g, 'customer ' || g, (ARRAY['free','pro','enterprise']::tier[])[1 + g % 3], jsonb_build_object('n', g) FROM generate_series(1, 10000) g"
sql "INSERT INTO invoices SELECT g, 1 + g % 10000, (g % 997) * 1.25, g % 2 = 0, CASE WHEN g % 10 = 0 THEN repeat('note ', 20) END FROM generate_series(1, 50000) g"

say "running: pgrelay migrate (snapshot copy, catch up, exit)"
bin/pgrelay migrate </dev/null

say "running: pgrelay status"
bin/pgrelay status </dev/null

say "running: pgrelay replicate in the background"
bin/pgrelay replicate >"$WORK/replicate.out" 2>"$WORK/replicate.log" </dev/null &
REPL_PID=$!
for _ in $(seq 1 300); do
	grep -q 'msg=streaming' "$WORK/replicate.log" && break
	kill -0 "$REPL_PID" 2>/dev/null || { cat "$WORK/replicate.log" >&2; die "pgrelay replicate exited"; }
	sleep 0.1
done

say "changing the source while pgrelay replicate runs"
sql "UPDATE invoices SET paid = true WHERE customer_id <= 100"
sql "DELETE FROM invoices WHERE id % 50 = 0"
sql "BEGIN; UPDATE customers SET tier = 'enterprise' WHERE id = 42; INSERT INTO invoices VALUES (100001, 42, 9999.99, false, 'big deal'); PREPARE TRANSACTION 'deal_42'"
wait_for() { # wait_for SQL-on-target expected
	for _ in $(seq 1 200); do
		[[ $("$PSQL" -X -Atq "$TARGET" -c "$1" </dev/null) == "$2" ]] && return 0
		sleep 0.1
	done
	die "timed out waiting for: $1 = $2"
}
wait_for "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'pgrelay_demo_slot_%'" 1
echo "the target holds the prepared transaction too:" >&2
tsql "SELECT gid, prepared FROM pg_prepared_xacts WHERE database = current_database()"
sql "COMMIT PREPARED 'deal_42'"
sql "ALTER TABLE customers ADD COLUMN vip bool NOT NULL DEFAULT false"
sql "UPDATE customers SET vip = true WHERE tier = 'enterprise'"
sql "SELECT pg_logical_emit_message(false, 'demo', 'done')" >/dev/null
wait_for "SELECT count(*) FROM customers WHERE vip" "$("$PSQL" -X -Atq "$URL" -c "SELECT count(*) FROM customers WHERE vip" </dev/null)"
wait_for "SELECT count(*) FROM pg_prepared_xacts" 0

say "comparing source and target, table by table"
for t in customers invoices orders; do
	q="SELECT count(*) || ' rows, md5 ' || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM $t x"
	a=$("$PSQL" -X -Atq "$URL" -c "$q" </dev/null)
	b=$("$PSQL" -X -Atq "$TARGET" -c "$q" </dev/null)
	printf '  %-10s source: %s\n  %-10s target: %s\n' "$t" "$a" "" "$b" >&2
	[[ $a == "$b" ]] || die "$t differs between source and target"
done

say "stopping pgrelay replicate (SIGTERM)"
kill -TERM "$REPL_PID"
status=0
wait "$REPL_PID" || status=$?
REPL_PID=
tail -n 2 "$WORK/replicate.log" >&2
[[ $status -eq 0 ]] || { cat "$WORK/replicate.log" >&2; die "pgrelay replicate exited with $status"; }
bin/pgrelay status </dev/null
say "pgrelay verify: every published table, source vs target, in key-range chunks"
vstatus=0
bin/pgrelay verify </dev/null || vstatus=$?
[[ $vstatus -eq 0 ]] || die "pgrelay verify exited with $vstatus"

# ---------------------------------------------------------------------------
# The same source into MariaDB: a mysql:// target URL.
MYSERVER=$(scripts/install-mariadb.sh | sed -n 's/^mariadb: //p')
[[ -x $MYSERVER ]] || die "no MariaDB server found (scripts/install-mariadb.sh)"
MYINSTALL=$(command -v mariadb-install-db || command -v mysql_install_db || true)
MYCLI=$(command -v mariadb || command -v mysql || true)
[[ -n $MYINSTALL && -n $MYCLI ]] || die "mariadb-install-db or the mariadb client not found; install mariadb-server and mariadb-client"
# mariadbd runs as an unprivileged user too: "mysql" (the package's) as root.
if [[ $(id -u) -eq 0 ]]; then
	id mysql >/dev/null 2>&1 || die "running as root needs an OS user named mysql to run MariaDB"
	as_my() { runuser -u mysql -- "$@"; }
else
	as_my() { "$@"; }
fi
mkdir "$WORK/mariadb"
[[ $(id -u) -eq 0 ]] && chown mysql: "$WORK/mariadb"

say "creating a MariaDB data directory in $WORK/mariadb"
as_my "$MYINSTALL" --no-defaults --datadir="$WORK/mariadb/data" --auth-root-authentication-method=normal \
	--skip-test-db --skip-name-resolve >"$WORK/mariadb-install.log" 2>&1 ||
	{ cat "$WORK/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
MYSOCK=$WORK/mariadb/mysqld.sock
my() { "$MYCLI" --no-defaults -S "$MYSOCK" -u root -N -B -e "$1" </dev/null; }
MYPORT=
for _ in $(seq 1 10); do
	p=$((20000 + RANDOM % 12000))
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		continue
	fi
	# What pgrelay needs of a target: durable commits (the default) and
	# LOAD DATA LOCAL INFILE for the copy.
	as_my "$MYSERVER" --no-defaults --datadir="$WORK/mariadb/data" --port="$p" --bind-address=127.0.0.1 \
		--socket="$MYSOCK" --pid-file="$WORK/mariadb/mariadbd.pid" --tmpdir="$WORK/mariadb" --skip-name-resolve \
		--character-set-server=utf8mb4 --innodb-flush-log-at-trx-commit=1 --local-infile=1 \
		>"$WORK/mariadb/server.log" 2>&1 </dev/null &
	MY_PID=$!
	for _ in $(seq 1 300); do
		my "SELECT 1" >/dev/null 2>&1 && break
		kill -0 "$MY_PID" 2>/dev/null || break
		sleep 0.1
	done
	if my "SELECT 1" >/dev/null 2>&1; then
		MYPORT=$p
		break
	fi
	kill -KILL "$MY_PID" 2>/dev/null
	wait "$MY_PID" 2>/dev/null || true
	MY_PID=
	grep -qE "Address already in use|Can't start server: Bind" "$WORK/mariadb/server.log" ||
		{ cat "$WORK/mariadb/server.log" >&2; die "MariaDB did not start"; }
done
[[ -n $MYPORT ]] || { cat "$WORK/mariadb/server.log" >&2; die "no free port found on 127.0.0.1 for MariaDB in 10 tries"; }
say "started $(my "SELECT VERSION()") on 127.0.0.1:$MYPORT"
my "CREATE DATABASE replica CHARACTER SET utf8mb4; CREATE USER 'demo'@'%' IDENTIFIED BY 'demo-pw'; GRANT ALL ON replica.* TO 'demo'@'%'"
export PGRELAY_TARGET_URL="mysql://demo:demo-pw@127.0.0.1:$MYPORT/replica" PGRELAY_SLOT=demo_my_slot
echo "PGRELAY_TARGET_URL=mysql://demo:…@127.0.0.1:$MYPORT/replica" >&2
myq() { my "USE replica; $1"; }

say "running: pgrelay migrate into MariaDB (LOAD DATA LOCAL INFILE, then catch up)"
bin/pgrelay migrate </dev/null
bin/pgrelay status </dev/null

say "running: pgrelay replicate into MariaDB in the background"
bin/pgrelay replicate >"$WORK/my-replicate.out" 2>"$WORK/my-replicate.log" </dev/null &
REPL_PID=$!
for _ in $(seq 1 300); do
	grep -q 'msg=streaming' "$WORK/my-replicate.log" && break
	kill -0 "$REPL_PID" 2>/dev/null || { cat "$WORK/my-replicate.log" >&2; die "pgrelay replicate exited"; }
	sleep 0.1
done
my_wait_for() { # my_wait_for SQL-on-MariaDB expected
	for _ in $(seq 1 300); do
		[[ $(myq "$1" 2>/dev/null) == "$2" ]] && return 0
		sleep 0.1
	done
	cat "$WORK/my-replicate.log" >&2
	die "timed out waiting on MariaDB for: $1 = $2"
}

say "changing the source while pgrelay replicate runs"
sql "UPDATE invoices SET amount = amount * 2, note = 'doubled' WHERE customer_id BETWEEN 200 AND 300"
sql "BEGIN; DELETE FROM invoices WHERE customer_id > 9990; DELETE FROM customers WHERE id > 9990; COMMIT"
sql "BEGIN; UPDATE customers SET vip = true, tier = 'pro' WHERE id = 7; INSERT INTO invoices VALUES (100002, 7, 123.45, false, 'xa'); PREPARE TRANSACTION 'deal_7'"
for _ in $(seq 1 300); do
	[[ $(my "XA RECOVER" | grep -c 'pgrelay_demo_my_slot_') -eq 1 ]] && break
	sleep 0.1
done
echo "MariaDB holds the prepared transaction as an XA transaction (XA RECOVER):" >&2
my "XA RECOVER" >&2
sql "COMMIT PREPARED 'deal_7'"
sql "ALTER TABLE invoices ADD COLUMN currency text NOT NULL DEFAULT 'EUR'"
sql "UPDATE invoices SET currency = 'USD' WHERE id % 3 = 0"
want=$("$PSQL" -X -Atq "$URL" -c "SELECT count(*) FROM invoices WHERE currency = 'USD'" </dev/null)
my_wait_for "SELECT COUNT(*) FROM invoices WHERE currency = 'USD'" "$want"
my_wait_for "SELECT COUNT(*) FROM invoices WHERE id = 100002" 1

say "comparing source and MariaDB: rows, sums"
for q in "SELECT count(*) FROM customers" "SELECT count(*) FROM invoices" "SELECT sum(amount) FROM invoices" "SELECT count(*) FROM customers WHERE vip" "SELECT count(*) FROM orders"; do
	a=$("$PSQL" -X -Atq "$URL" -c "$q" </dev/null)
	b=$(myq "$q")
	printf '  %-45s source: %-12s MariaDB: %s\n' "$q" "$a" "$b" >&2
	[[ $a == "$b" ]] || die "$q differs between source and MariaDB"
done

say "stopping pgrelay replicate (SIGTERM)"
kill -TERM "$REPL_PID"
status=0
wait "$REPL_PID" || status=$?
REPL_PID=
tail -n 2 "$WORK/my-replicate.log" >&2
[[ $status -eq 0 ]] || { cat "$WORK/my-replicate.log" >&2; die "pgrelay replicate exited with $status"; }
bin/pgrelay status </dev/null
say "pgrelay verify: PostgreSQL source vs MariaDB target, values in one canonical form"
vstatus=0
bin/pgrelay verify </dev/null || vstatus=$?
[[ $vstatus -eq 0 ]] || die "pgrelay verify exited with $vstatus"
say "demo done: source, PostgreSQL target and MariaDB target are equal; cleaning up"
