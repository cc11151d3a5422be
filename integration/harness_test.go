package integration

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestMain is the integration package's only TestMain: it stops every server
// the harness started when the tests end.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// TestHarnessPostgres checks that each tested major comes up as a logical
// replication source: right version, wal_level=logical, a pgoutput slot can be
// created, and each call yields its own database.
func TestHarnessPostgres(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)

			if got := pg.QueryString(t, "SELECT current_setting('server_version_num')::int / 10000"); got != strconv.Itoa(major) {
				t.Fatalf("server major = %s, want %d", got, major)
			}
			for name, want := range map[string]string{
				"wal_level":                 "logical",
				"max_replication_slots":     "20",
				"max_wal_senders":           "20",
				"max_prepared_transactions": "20",
				"logical_decoding_work_mem": "64kB",
				"listen_addresses":          "127.0.0.1",
			} {
				if got := pg.QueryString(t, "SELECT current_setting($1)", name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if got := pg.QueryString(t, "SELECT current_database()"); got != pg.DB {
				t.Errorf("current_database() = %q, want %q", got, pg.DB)
			}
			if got := pg.QueryString(t, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"); got != "t" {
				t.Errorf("test user superuser = %q, want t", got)
			}

			// Several statements in one Exec; NULL reads as "".
			pg.Exec(t, "CREATE TABLE items (id int PRIMARY KEY, note text); INSERT INTO items VALUES (1, NULL), (2, 'two')")
			if got := pg.QueryString(t, "SELECT note FROM items WHERE id = $1", 1); got != "" {
				t.Errorf("NULL note = %q, want empty", got)
			}
			if got := pg.QueryString(t, "SELECT note FROM items WHERE id = $1", 2); got != "two" {
				t.Errorf("note = %q, want two", got)
			}

			slot := "harness_" + pg.DB
			pg.Exec(t, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
			if got := pg.QueryString(t, "SELECT plugin FROM pg_replication_slots WHERE slot_name = $1", slot); got != "pgoutput" {
				t.Fatalf("slot plugin = %q, want pgoutput", got)
			}

			// A replication connection with the URL works (pgrelay's own path).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg, err := pgx.ParseConfig(pg.URL() + "&replication=database")
			if err != nil {
				t.Fatal(err)
			}
			repl, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatalf("replication connection: %v", err)
			}
			res := repl.PgConn().Exec(ctx, "IDENTIFY_SYSTEM")
			results, err := res.ReadAll()
			_ = repl.Close(ctx)
			if err != nil || len(results) != 1 || len(results[0].Rows) != 1 {
				t.Fatalf("IDENTIFY_SYSTEM: %v (results %d)", err, len(results))
			}

			// Conn is an independent session on the same database.
			conn := pg.Conn(t)
			var count int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&count); err != nil || count != 2 {
				t.Fatalf("count via Conn = %d, %v; want 2", count, err)
			}

			// Each call gets a fresh database on the same shared server.
			other := harness.Postgres(t, major)
			if other.DB == pg.DB || other.Port != pg.Port {
				t.Fatalf("second call: db %s port %d, first: db %s port %d; want a new database on the same server", other.DB, other.Port, pg.DB, pg.Port)
			}
			if got := other.QueryString(t, "SELECT count(*) FROM pg_class WHERE relname = 'items'"); got != "0" {
				t.Fatalf("second database sees table items (count %s)", got)
			}
		})
	}
}

// TestHarnessPostgresCleanup checks that a test's database goes away with its
// replication slot and prepared transaction, which would otherwise use up the
// shared server's max_replication_slots and max_prepared_transactions.
func TestHarnessPostgresCleanup(t *testing.T) {
	major := harness.Majors()[0]
	var inner *harness.PG
	outerCleanup := t.Cleanup
	t.Run("leaves", func(t *testing.T) {
		inner = harness.Postgres(t, major)
		inner.Exec(t, "SELECT pg_create_logical_replication_slot('leftover_'||current_database(), 'pgoutput')")
		inner.Exec(t, "CREATE TABLE t (id int); BEGIN; INSERT INTO t VALUES (1); PREPARE TRANSACTION 'leftover'")
		// A walsender still streaming from the slot, as a running pgrelay would.
		inner.Exec(t, "CREATE PUBLICATION leftover FOR ALL TABLES")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		repl, err := pgconn.Connect(ctx, inner.URL()+"&replication=database")
		if err != nil {
			t.Fatalf("replication connection: %v", err)
		}
		outerCleanup(func() { _ = repl.Close(context.Background()) })
		err = pglogrepl.StartReplication(ctx, repl, "leftover_"+inner.DB, 0, pglogrepl.StartReplicationOptions{
			PluginArgs: []string{"proto_version '1'", "publication_names 'leftover'"},
		})
		if err != nil {
			t.Fatalf("START_REPLICATION: %v", err)
		}
		if got := inner.QueryString(t, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", "leftover_"+inner.DB); got != "t" {
			t.Fatalf("slot active = %q, want t", got)
		}
	})
	observer := harness.Postgres(t, major)
	if got := observer.QueryString(t, "SELECT count(*) FROM pg_database WHERE datname = $1", inner.DB); got != "0" {
		t.Errorf("database %s still exists after its test", inner.DB)
	}
	if got := observer.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", "leftover_"+inner.DB); got != "0" {
		t.Errorf("slot of %s still exists after its test", inner.DB)
	}
	if got := observer.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'leftover'"); got != "0" {
		t.Errorf("prepared transaction of %s still exists after its test", inner.DB)
	}
}

// TestHarnessDedicated checks a server of the test's own: extra settings,
// and Stop/Start/Crash keeping the port and committed data.
func TestHarnessDedicated(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	pg := harness.Postgres(t, major, harness.WithSetting("wal_sender_timeout", "7s"))
	shared := harness.Postgres(t, major)
	if pg.Port == shared.Port {
		t.Fatalf("WithSetting server shares port %d with the shared server", pg.Port)
	}
	if got := pg.QueryString(t, "SHOW wal_sender_timeout"); got != "7s" {
		t.Fatalf("wal_sender_timeout = %q, want 7s", got)
	}
	pg.Exec(t, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)")
	port := pg.Port

	pg.Restart(t)
	pg.Exec(t, "INSERT INTO kept VALUES (2)")

	pg.Crash(t)
	if conn, err := pgx.Connect(context.Background(), pg.URL()); err == nil {
		_ = conn.Close(context.Background())
		t.Fatal("connected to a crashed server")
	}
	pg.Start(t)
	if pg.Port != port {
		t.Fatalf("port changed from %d to %d across restarts", port, pg.Port)
	}
	if got := pg.QueryString(t, "SELECT string_agg(id::text, ',' ORDER BY id) FROM kept"); got != "1,2" {
		t.Fatalf("rows after restart and crash = %q, want 1,2", got)
	}
	if !strings.Contains(pg.ServerLog(), "database system was interrupted") && !strings.Contains(pg.ServerLog(), "not properly shut down") {
		t.Errorf("server log shows no crash recovery after Crash:\n%s", pg.ServerLog())
	}
}

// TestHarnessMariaDB checks the MariaDB target: a fresh database per call,
// durable commits and LOAD DATA LOCAL allowed, a table round trip over the URL.
func TestHarnessMariaDB(t *testing.T) {
	my := harness.MariaDB(t)
	if got := my.QueryString(t, "SELECT @@innodb_flush_log_at_trx_commit"); got != "1" {
		t.Errorf("innodb_flush_log_at_trx_commit = %s, want 1", got)
	}
	if got := my.QueryString(t, "SELECT @@local_infile"); got != "1" {
		t.Errorf("local_infile = %s, want 1", got)
	}
	if got := my.QueryString(t, "SELECT DATABASE()"); got != my.DB {
		t.Errorf("DATABASE() = %q, want %q", got, my.DB)
	}
	my.Exec(t, "CREATE TABLE items (id INT PRIMARY KEY, note LONGTEXT COLLATE utf8mb4_nopad_bin NULL) ENGINE=InnoDB; INSERT INTO items VALUES (1, NULL), (2, 'a '), (3, 'A')")
	if got := my.QueryString(t, "SELECT note FROM items WHERE id = ?", 1); got != "" {
		t.Errorf("NULL note = %q, want empty", got)
	}
	if got := my.QueryString(t, "SELECT COUNT(DISTINCT note) FROM items"); got != "2" {
		t.Errorf("distinct notes = %s, want 2", got)
	}

	u, err := url.Parse(my.URL())
	if err != nil || u.Scheme != "mysql" || u.Host != fmt.Sprintf("127.0.0.1:%d", my.Port) || u.Path != "/"+my.DB {
		t.Fatalf("URL() = %q (%v), want mysql://user:pass@127.0.0.1:%d/%s", my.URL(), err, my.Port, my.DB)
	}
	db := my.Open(t)
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM items").Scan(&n); err != nil || n != 3 {
		t.Fatalf("count via Open = %d, %v; want 3", n, err)
	}

	other := harness.MariaDB(t)
	if other.DB == my.DB || other.Port != my.Port {
		t.Fatalf("second call: db %s port %d, first: db %s port %d; want a new database on the same server", other.DB, other.Port, my.DB, my.Port)
	}
	if got := other.QueryString(t, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()"); got != "0" {
		t.Fatalf("second database has %s tables, want 0", got)
	}
}

// TestHarnessMariaDBDedicated checks a MariaDB server of the test's own: not
// the shared one, the binary log of MariaDBBinlog, the server's process id,
// and Destroy.
func TestHarnessMariaDBDedicated(t *testing.T) {
	shared := harness.MariaDB(t)
	my := harness.MariaDB(t, harness.MariaDBBinlog())
	if my.Port == shared.Port {
		t.Fatalf("MariaDBBinlog server shares port %d with the shared server", my.Port)
	}
	for setting, want := range map[string]string{"log_bin": "1", "sync_binlog": "1", "binlog_format": "ROW", "innodb_flush_log_at_trx_commit": "1"} {
		if got := my.QueryString(t, "SELECT @@"+setting); got != want {
			t.Errorf("%s = %s, want %s", setting, got, want)
		}
	}
	if got := shared.QueryString(t, "SELECT @@log_bin"); got != "0" {
		t.Errorf("shared server log_bin = %s, want 0", got)
	}
	pid := my.ServerPID()
	if pid <= 0 {
		t.Fatalf("ServerPID() = %d", pid)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || !strings.Contains(string(comm), "mariadbd") && !strings.Contains(string(comm), "mysqld") {
		t.Fatalf("process %d is %q (%v), want mariadbd", pid, comm, err)
	}
	my.Destroy(t)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("mariadbd %d still runs after Destroy", pid)
	}
	if got := shared.QueryString(t, "SELECT 1"); got != "1" {
		t.Errorf("shared server after Destroy of a dedicated one: %q", got)
	}
}
