package integration

// The MariaDB contenders of BenchmarkSnapshot and BenchmarkDrain (issue 29):
// pgrelay migrate into MariaDB beside `\copy … TO STDOUT | LOAD DATA LOCAL
// INFILE` table by table, and the drain's backlog applied into MariaDB
// beside pg_recvlogical. Each MariaDB is a dedicated server
// (harness.MariaDBDedicated) with the harness's durability:
// innodb_flush_log_at_trx_commit = 1, a 256M buffer pool, and no binary log
// or, for the contenders named so, a binary log synced at every commit
// (harness.MariaDBBinlog).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// benchMariaDBScaleDefault is the pgbench scales BenchmarkSnapshot also
// copies into MariaDB, unless PGRELAY_BENCH_MARIADB_SCALE says otherwise
// ("none": no MariaDB target).
const benchMariaDBScaleDefault = "20"

// benchChecksumMY is benchChecksum on a MariaDB target, where schema public
// is the connection's database; it prints the same text when the data is
// the same.
const benchChecksumMY = `SELECT CONCAT_WS('/', (SELECT COUNT(*) FROM pgbench_accounts),
	(SELECT COALESCE(SUM(abalance), 0) FROM pgbench_accounts),
	(SELECT COALESCE(SUM(tbalance), 0) FROM pgbench_tellers),
	(SELECT COALESCE(SUM(bbalance), 0) FROM pgbench_branches),
	(SELECT COUNT(*) FROM pgbench_history),
	(SELECT COALESCE(SUM(delta), 0) FROM pgbench_history))`

// benchMYTables are the pgbench tables, in the order the LOAD DATA
// baseline loads them.
var benchMYTables = []string{"pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"}

// benchMariaDB starts a dedicated MariaDB for one contender.
func benchMariaDB(b *testing.B, binlog bool) *harness.MY {
	b.Helper()
	opts := []harness.MYOption{harness.MariaDBDedicated()}
	if binlog {
		opts = append(opts, harness.MariaDBBinlog())
	}
	return harness.MariaDB(b, opts...)
}

// benchMariaDBScales is PGRELAY_BENCH_MARIADB_SCALE.
func benchMariaDBScales() ([]int, error) {
	v := strings.TrimSpace(os.Getenv("PGRELAY_BENCH_MARIADB_SCALE"))
	if v == "" {
		v = benchMariaDBScaleDefault
	}
	if v == "none" {
		return nil, nil
	}
	var scales []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("PGRELAY_BENCH_MARIADB_SCALE=%q: want pgbench scales separated by commas, or none", v)
		}
		scales = append(scales, n)
	}
	return scales, nil
}

// benchMYCPU is the CPU time (user + system, all threads) my's mariadbd has
// used so far.
func benchMYCPU(b *testing.B, my *harness.MY) time.Duration {
	b.Helper()
	st, err := benchProcStat(strconv.Itoa(my.ServerPID()))
	if err != nil {
		b.Fatalf("MariaDB CPU: %v", err)
	}
	return time.Duration(benchTicks(st[11])+benchTicks(st[12])) * time.Second / 100 // USER_HZ
}

// benchMYStatus is the global status variable name of my's server.
func benchMYStatus(b *testing.B, my *harness.MY, name string) int64 {
	b.Helper()
	v := my.QueryString(b, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?", strings.ToUpper(name))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		b.Fatalf("MariaDB status %s = %q: %v", name, v, err)
	}
	return n
}

// benchMYLogBytes is what my's server has written to its redo log and
// binary log so far: the counterpart of PostgreSQL's WAL.
func benchMYLogBytes(b *testing.B, my *harness.MY) int64 {
	b.Helper()
	n := benchMYStatus(b, my, "Innodb_os_log_written")
	if my.QueryString(b, "SELECT @@log_bin") == "1" {
		n += benchMYStatus(b, my, "Binlog_bytes_written")
	}
	return n
}

// benchMYCounters are the status counters the drain report gives for a
// MariaDB target: how many transactions and statements the drain took.
var benchMYCounters = []string{"Com_commit", "Com_insert", "Com_update", "Com_delete", "Questions"}

// benchMYCount reads benchMYCounters.
func benchMYCount(b *testing.B, my *harness.MY) []int64 {
	b.Helper()
	out := make([]int64, len(benchMYCounters))
	for i, name := range benchMYCounters {
		out[i] = benchMYStatus(b, my, name)
	}
	return out
}

// benchMYQuiesce is benchQuiesce for MariaDB: InnoDB's page cleaner writes
// every dirty page out (innodb_max_dirty_pages_pct = 0 until none is left,
// then back), and the machine's dirty pages are written.
func benchMYQuiesce(b *testing.B, servers ...*harness.MY) {
	b.Helper()
	for _, my := range servers {
		old := my.QueryString(b, "SELECT @@innodb_max_dirty_pages_pct")
		my.Exec(b, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
		benchWait(b, 5*time.Minute, 50*time.Millisecond, "MariaDB to write its dirty pages", func() bool {
			return benchMYStatus(b, my, "Innodb_buffer_pool_pages_dirty") == 0
		})
		my.Exec(b, "SET GLOBAL innodb_max_dirty_pages_pct = "+old)
	}
}

// benchMYSettings are the settings of my's server the reports state.
func benchMYSettings(b *testing.B, my *harness.MY) string {
	b.Helper()
	return my.QueryString(b, `SELECT CONCAT_WS(', ', CONCAT('version=', VERSION()),
		CONCAT('innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit),
		CONCAT('log_bin=', IF(@@log_bin, 'ON', 'OFF')), CONCAT('sync_binlog=', @@sync_binlog), CONCAT('binlog_format=', @@binlog_format),
		CONCAT('innodb_buffer_pool_size=', @@innodb_buffer_pool_size DIV 1048576, 'M'),
		CONCAT('innodb_log_file_size=', @@innodb_log_file_size DIV 1048576, 'M'),
		CONCAT('innodb_log_buffer_size=', @@innodb_log_buffer_size DIV 1048576, 'M'),
		CONCAT('innodb_doublewrite=', @@innodb_doublewrite), CONCAT('innodb_flush_method=', @@innodb_flush_method),
		CONCAT('innodb_io_capacity=', @@innodb_io_capacity), CONCAT('max_allowed_packet=', @@max_allowed_packet DIV 1048576, 'M'),
		CONCAT('local_infile=', @@local_infile))`)
}

// benchMYPKCount is the number of pgbench tables of my's database that have a
// primary key.
func benchMYPKCount(b *testing.B, my *harness.MY) string {
	return my.QueryString(b, `SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS
		WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'PRIMARY KEY' AND TABLE_NAME LIKE 'pgbench\_%'`)
}

// benchMYCheckCopy fails the benchmark unless my holds what want says.
func benchMYCheckCopy(b *testing.B, who string, my *harness.MY, want benchSnapshotWant) {
	b.Helper()
	if got := my.QueryString(b, benchChecksumMY); got != want.checksum {
		b.Fatalf("%s MariaDB target checksum %s, source %s", who, got, want.checksum)
	}
	if got := benchMYPKCount(b, my); got != want.pks {
		b.Fatalf("%s MariaDB target has %s primary keys, the source %s", who, got, want.pks)
	}
}

// benchPgrelayMYEnv configures pgrelay to copy src into my through slot.
func benchPgrelayMYEnv(src *harness.PG, my *harness.MY, slot, snapshot string) []string {
	return append(benchBaseEnv(),
		"PGRELAY_SOURCE_URL="+src.URL(), "PGRELAY_TARGET_URL="+my.URL(),
		"PGRELAY_SLOT="+slot, "PGRELAY_PUBLICATION="+benchPublication,
		"PGRELAY_SNAPSHOT="+snapshot, "PGRELAY_LOG_FORMAT=json")
}

// --- BenchmarkSnapshot into MariaDB ---

// benchMariaDBSnapshotTarget is BenchmarkSnapshot's MariaDB target: pgrelay
// migrate, and the four tables created as pgrelay creates them (SHOW CREATE
// TABLE of the warm-up's copy: the primary keys in place, utf8mb4_nopad_bin)
// and then loaded one after the other by `psql -c '\copy t TO STDOUT' |
// mariadb -e "LOAD DATA LOCAL INFILE '/dev/stdin' …"` (COPY's text escapes
// are LOAD DATA's defaults). The tables' creation is not timed.
func benchMariaDBSnapshotTarget(bin string, binlog bool) benchSnapshotTarget {
	name := fmt.Sprintf("%dtoMariaDB", benchMajor)
	if binlog {
		name += "-binlog"
	}
	var ddl []string // the warm-up copy's CREATE TABLE statements
	return benchSnapshotTarget{
		name: name,
		settings: func(b *testing.B) string {
			my := benchMariaDB(b, binlog)
			defer my.Destroy(b)
			return benchMYSettings(b, my)
		},
		warmUp: func(b *testing.B, src *harness.PG) { ddl = benchMYWarmUp(b, bin, src, binlog) },
		notes:  "Target CPU: mariadbd's user and system time (all its threads). Target WAL: what InnoDB wrote to its redo log (Innodb_os_log_written), and to the binary log when it is on (Binlog_bytes_written); MariaDB has no checkpoint count. The LOAD DATA baseline's tables are created before its clock starts.",
		copiers: []benchCopier{
			{name: "pgrelay migrate", key: "pgrelay", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
				return benchPgrelayMYCopy(b, bin, src, binlog, round, want)
			}},
			{name: `\copy … TO STDOUT \| LOAD DATA LOCAL INFILE, table by table`, key: "loaddata", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
				return benchLoadDataCopy(b, src, binlog, ddl, want)
			}},
		},
	}
}

// benchMYWarmUp copies src into a MariaDB with pgrelay migrate, untimed (see
// benchWarmUp), and returns the CREATE TABLE statements of the pgbench
// tables it made.
func benchMYWarmUp(b *testing.B, bin string, src *harness.PG, binlog bool) []string {
	b.Helper()
	my := benchMariaDB(b, binlog)
	defer my.Destroy(b)
	slot := "bench_snap_my_warm"
	p := benchRun(b, 60*time.Minute, benchPgrelayMYEnv(src, my, slot, "auto"), "", bin, "migrate")
	src.Exec(b, "SELECT pg_catalog.pg_drop_replication_slot($1)", slot)
	var ddl []string
	db := my.Open(b)
	for _, t := range benchMYTables {
		var name, create string
		if err := db.QueryRowContext(b.Context(), "SHOW CREATE TABLE "+t).Scan(&name, &create); err != nil {
			b.Fatalf("SHOW CREATE TABLE %s on MariaDB: %v", t, err)
		}
		ddl = append(ddl, create)
	}
	b.Logf("warm-up copy into MariaDB (pgrelay migrate, not counted): %v", p.wall.Round(time.Millisecond))
	return ddl
}

// benchPgrelayMYCopy: pgrelay migrate into an empty MariaDB database.
func benchPgrelayMYCopy(b *testing.B, bin string, src *harness.PG, binlog bool, round string, want benchSnapshotWant) benchCopy {
	b.Helper()
	my := benchMariaDB(b, binlog)
	defer my.Destroy(b)
	slot := "bench_snap_my_" + round
	benchQuiesce(b, src)
	benchMYQuiesce(b, my)
	srcCPU, tgtCPU, logAt := benchServerCPU(b, src), benchMYCPU(b, my), benchMYLogBytes(b, my)
	env := benchPgrelayMYEnv(src, my, slot, "auto")
	if os.Getenv("PGRELAY_BENCH_LOG") != "" {
		env = append(env, "PGRELAY_LOG_LEVEL=debug")
	}
	p := benchRun(b, 60*time.Minute, env, "snapshot-mariadb", bin, "migrate")
	time.Sleep(500 * time.Millisecond) // the source's postmaster reaps pgrelay's sessions
	r := benchCopy{wall: p.wall, proc: &p, srcCPU: benchServerCPU(b, src) - srcCPU, tgtCPU: benchMYCPU(b, my) - tgtCPU, checkpoints: -1, walBytes: benchMYLogBytes(b, my) - logAt}
	r.loaded, r.keyed = benchPhases(p.start, p.stderr)
	benchMYCheckCopy(b, "pgrelay", my, want)
	src.Exec(b, "SELECT pg_catalog.pg_drop_replication_slot($1)", slot)
	if os.Getenv("PGRELAY_BENCH_LOG") != "" {
		b.Logf("pgrelay output:\n%s\n%s", p.stdout, p.stderr)
	}
	return r
}

// benchMariaDBClient is the mariadb (or mysql) command-line client.
func benchMariaDBClient(b *testing.B) string {
	b.Helper()
	for _, name := range []string{"mariadb", "mysql"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	b.Fatal("no mariadb client: install mariadb-client (apt-get install mariadb-client)")
	return ""
}

// benchLoadDataCopy: the tables created from ddl, then each loaded in turn
// by psql's \copy piped into the mariadb client's LOAD DATA LOCAL INFILE.
func benchLoadDataCopy(b *testing.B, src *harness.PG, binlog bool, ddl []string, want benchSnapshotWant) benchCopy {
	b.Helper()
	if len(ddl) == 0 {
		b.Fatal("the LOAD DATA baseline has no table definitions: the warm-up copy did not run")
	}
	my := benchMariaDB(b, binlog)
	defer my.Destroy(b)
	for _, stmt := range ddl {
		my.Exec(b, stmt)
	}
	client := benchMariaDBClient(b)
	myEnv := append(benchBaseEnv(), "MYSQL_PWD="+my.Password)
	benchQuiesce(b, src)
	benchMYQuiesce(b, my)
	srcCPU, tgtCPU, logAt := benchServerCPU(b, src), benchMYCPU(b, my), benchMYLogBytes(b, my)
	start := time.Now()
	for _, t := range benchMYTables {
		benchPipe(b, 60*time.Minute, benchLibpqEnv(src), []string{benchTool(b, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", `\copy public.` + t + ` TO STDOUT`},
			myEnv, []string{client, "--no-defaults", "--local-infile=1", "--protocol=TCP", "-h", my.Host, "-P", strconv.Itoa(my.Port), "-u", my.User, my.DB,
				"-e", "LOAD DATA LOCAL INFILE '/dev/stdin' INTO TABLE " + t + " CHARACTER SET utf8mb4"})
	}
	wall := time.Since(start)
	time.Sleep(500 * time.Millisecond) // the source's postmaster reaps psql's sessions
	r := benchCopy{wall: wall, srcCPU: benchServerCPU(b, src) - srcCPU, tgtCPU: benchMYCPU(b, my) - tgtCPU, checkpoints: -1, walBytes: benchMYLogBytes(b, my) - logAt}
	benchMYCheckCopy(b, "LOAD DATA", my, want)
	return r
}

// --- BenchmarkDrain into MariaDB ---

// benchMariaDBDrainers are BenchmarkDrain's MariaDB consumers: pgrelay
// migrate draining the backlog into MariaDB without and with a binary log.
func benchMariaDBDrainers(bin string) []benchDrainer {
	var ds []benchDrainer
	for _, binlog := range []bool{false, true} {
		name, key := "pgrelay migrate → MariaDB", "pgrelay-migrate-mariadb"
		if binlog {
			name, key = name+" (binary log on)", key+"-binlog"
		}
		ds = append(ds, benchDrainer{name: name, key: key, applies: true, mariadb: true, prepare: func(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
			return benchPgrelayMYDrainer(b, bin, src, round, binlog)
		}})
	}
	return ds
}

// benchPgrelayMYDrainer seeds a MariaDB with `pgrelay migrate` (untimed:
// the tables copied by LOAD DATA, its slot left where the backlog starts)
// and returns the drain: `pgrelay migrate` again, done when it exits caught
// up.
func benchPgrelayMYDrainer(b *testing.B, bin string, src *harness.PG, round string, binlog bool) func(*testing.B, benchDrainEnd) benchDrain {
	b.Helper()
	slot := "bench_my_migrate_" + round
	if binlog {
		slot = "bench_mybl_migrate_" + round
	}
	my := benchMariaDB(b, binlog)
	seeded := src.QueryString(b, benchChecksum)
	benchRun(b, 30*time.Minute, benchPgrelayMYEnv(src, my, slot, "auto"), "", bin, "migrate")
	if got := my.QueryString(b, benchChecksumMY); got != seeded {
		b.Fatalf("MariaDB seeded unlike the source: %s, source %s", got, seeded)
	}
	return func(b *testing.B, end benchDrainEnd) benchDrain {
		benchQuiesce(b, src)
		benchMYQuiesce(b, my)
		srcCPU, tgtCPU := benchServerCPU(b, src), benchMYCPU(b, my)
		db := my.Open(b)
		db.SetMaxOpenConns(1)
		w := benchWatchDrainFunc(b, src, slot, end.lsn, func(ctx context.Context) (bool, error) {
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM bench_marker").Scan(&n)
			return n > 0, err
		})
		counts := benchMYCount(b, my)
		p := benchRun(b, 60*time.Minute, benchPgrelayMYEnv(src, my, slot, "auto"), "drain-mariadb", bin, "migrate")
		after := benchMYCount(b, my)
		if !strings.Contains(p.stdout, "caught up") {
			b.Fatalf("pgrelay migrate into MariaDB did not report catching up:\n%s\n%s", p.stdout, benchTail(p.stderr))
		}
		visible, confirmed := w.wait(b, time.Minute)
		r := benchDrain{wall: p.wall, confirmLag: confirmed.Sub(visible), proc: &p, settings: benchMYSettings(b, my)}
		for i := range counts {
			r.counts = append(r.counts, after[i]-counts[i])
		}
		time.Sleep(500 * time.Millisecond) // the source's postmaster reaps pgrelay's sessions
		r.srcCPU, r.tgtCPU = benchServerCPU(b, src)-srcCPU, benchMYCPU(b, my)-tgtCPU
		r.streaming = benchLogged(p.start, p.stderr, "streaming")
		if got := my.QueryString(b, benchChecksumMY); got != end.checksum {
			b.Fatalf("pgrelay migrate MariaDB target checksum %s, source %s", got, end.checksum)
		}
		return r
	}
}

// benchMariaDBDrainReport states each MariaDB drain's rate against
// pg_recvlogical's (issue 29's goal: at least 0.5 times it) and the
// MariaDB servers' settings.
func benchMariaDBDrainReport(b *testing.B, t *strings.Builder, drainers []benchDrainer, med func(name string, f func(benchDrain) time.Duration) time.Duration, results map[string][]benchDrain) {
	wall := func(r benchDrain) time.Duration { return r.wall }
	var ceiling time.Duration
	for _, d := range drainers {
		if d.key == "ceiling" {
			ceiling = med(d.name, wall)
		}
	}
	var settings []string
	for _, d := range drainers {
		rs := results[d.name]
		if !d.mariadb || len(rs) == 0 {
			continue
		}
		m := med(d.name, wall)
		if ceiling > 0 {
			b.ReportMetric(ceiling.Seconds()/m.Seconds(), d.key+"-rate-vs-ceiling")
			fmt.Fprintf(t, "\n%s: %.0f tx/s, %.2f× pg_recvlogical's rate (%.0f tx/s).", d.name, benchDrainTx/m.Seconds(), ceiling.Seconds()/m.Seconds(), benchDrainTx/ceiling.Seconds())
		}
		var counts []string
		for i, name := range benchMYCounters {
			n := med(d.name, func(r benchDrain) time.Duration { return time.Duration(r.counts[i]) })
			counts = append(counts, fmt.Sprintf("%s %d", name, n))
		}
		fmt.Fprintf(t, " The target's counters over the drain (medians; the checks and pgrelay's bookkeeping included): %s.", strings.Join(counts, ", "))
		if s := rs[0].settings; s != "" && !slices.Contains(settings, s) {
			settings = append(settings, s)
		}
	}
	for _, s := range settings {
		fmt.Fprintf(t, "\nMariaDB target settings: %s.", s)
	}
}
