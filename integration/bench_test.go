package integration

// End-to-end benchmarks: pgrelay side by side with PostgreSQL's own tools on
// the same data, in one run, on servers at production durability
// (harness.ProductionDurability: fsync, full_page_writes and
// synchronous_commit on; PostgreSQL's defaults otherwise, shared_buffers
// 128MB and max_wal_size 1GB among them), source and targets in separate
// postmasters on this machine. The sources are PostgreSQL 15, whose client
// tools are the ones here. docs/benchmarks.md has the figures and how to
// read them.
//
//	go test -run '^$' -bench 'Drain|Snapshot' -benchtime=1x -timeout 60m ./integration/ -v
//
// BenchmarkDrain: one pgbench backlog (100,000 TPC-B transactions) held by
// a slot per consumer and round, drained by pg_recvlogical to /dev/null (the
// ceiling), by a native subscription (the peer), by `pgrelay replicate` (done
// when its slot has confirmed the end of the backlog, as the subscription
// is) and by `pgrelay migrate` (done when it exits).
//
// BenchmarkSnapshot: a pgbench database copied into fresh targets by
// `pgrelay migrate`, by a native subscription's initial table sync, and by
// pg_dump | psql; a sub-benchmark per scale of PGRELAY_BENCH_SCALE (default
// 20,100: 256 MB and 1.3 GB of table data) and target major of
// PGRELAY_BENCH_TARGET_MAJORS (default 15,18): BenchmarkSnapshot/s20/15to15,
// BenchmarkSnapshot/s20/15to18, BenchmarkSnapshot/s100/15to15, ... A scale-100
// source takes 1.5 GB of disk, and each target as much while its copy runs.
//
// Each contender runs PGRELAY_BENCH_ROUNDS times (default 3), each round with
// the next contender first, each after a CHECKPOINT of the servers it uses
// and a sync; the figures are the medians. ns/op is pgrelay's time, the
// other figures are metrics, and a markdown table of them goes to stdout,
// with the servers' settings, the data's size and the machine's load
// average.
//
// Environment: PGRELAY_BENCH_SETTINGS=name=value,... adds settings to every
// benchmark server's postgresql.conf (e.g. max_wal_size=4GB);
// PGRELAY_BENCH_ONLY=regexp runs only the contenders whose name it matches
// (pgrelay's always run: the others are compared with them);
// PGRELAY_BENCH_PERF=<dir> records a system-wide CPU profile (call graphs)
// while pgrelay runs into <dir>/<benchmark>.perf.data; PGRELAY_BENCH_LOG=1
// logs pgrelay's output of each snapshot copy; PGRELAY_BENCH_BASELINE=<binary>
// adds that pgrelay build as a contender (`pgrelay replicate (baseline
// binary)`, `pgrelay migrate (baseline binary)`), to measure a change side by
// side with the build before it.
//
// MariaDB (bench_mariadb_test.go, issue 29): at the scales of
// PGRELAY_BENCH_MARIADB_SCALE (default 20; "none" for none) the snapshot
// also goes into MariaDB, without and with a binary log
// (BenchmarkSnapshot/s20/15toMariaDB, .../15toMariaDB-binlog), by pgrelay
// migrate and by `\copy … TO STDOUT | LOAD DATA LOCAL INFILE` table by
// table; the drain's backlog also goes into MariaDB, without and with a
// binary log, by pgrelay migrate, its rate compared with pg_recvlogical's.
//
// A contender is a benchCopier (snapshot) or a benchDrainer (drain): a name
// and what it runs. Another target kind is a target of benchSnapshotTargets
// with its own copiers, or a drainer appended in benchDrainers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// benchMajor is the PostgreSQL major of the sources in these benchmarks and
// of BenchmarkDrain's targets: the client tools here (pg_dump, pgbench,
// pg_recvlogical) are PostgreSQL 15's, and pg_dump refuses newer servers.
const benchMajor = 15

// BenchmarkSnapshot copies into targets of each major in
// PGRELAY_BENCH_TARGET_MAJORS, default benchSnapshotTargetMajors: the same major
// as the source, and a migration to the newest major.
const benchSnapshotTargetMajors = "15,18"

// The pgbench loads: BenchmarkDrain's backlog is benchDrainTx TPC-B
// transactions on a scale-benchDrainScale database; BenchmarkSnapshot copies
// databases of the scales in PGRELAY_BENCH_SCALE, default
// benchSnapshotScale.
const (
	benchDrainScale       = 10
	benchDrainClients     = 4
	benchDrainThreads     = 2
	benchDrainTxPerClient = 25000
	benchDrainTx          = benchDrainClients * benchDrainTxPerClient
	benchSnapshotScale    = "20,100"
	benchPublication      = "bench_pub"
)

// benchChecksum summarizes the pgbench tables: equal on source and target
// when every transaction was applied exactly once.
const benchChecksum = `SELECT (SELECT count(*) FROM public.pgbench_accounts) || '/' ||
	(SELECT coalesce(sum(abalance), 0) FROM public.pgbench_accounts) || '/' ||
	(SELECT coalesce(sum(tbalance), 0) FROM public.pgbench_tellers) || '/' ||
	(SELECT coalesce(sum(bbalance), 0) FROM public.pgbench_branches) || '/' ||
	(SELECT count(*) FROM public.pgbench_history) || '/' ||
	(SELECT coalesce(sum(delta), 0) FROM public.pgbench_history)`

// benchRoundsDefault is how many times each contender runs, unless
// PGRELAY_BENCH_ROUNDS says otherwise. A single copy of each, 2-4 s on a
// shared 2-core VM, swung by a second either way from one contender to the
// next (mostly in the kernel's side of the target's writes), so one round
// decided the ratios more than the copies did; three rounds, each contender
// first once, report the medians.
const benchRoundsDefault = 3

// benchServer starts a dedicated PostgreSQL server of major for a benchmark:
// production durability, the settings of PGRELAY_BENCH_SETTINGS, and opts.
func benchServer(b *testing.B, major int, opts ...harness.PGOption) *harness.PG {
	b.Helper()
	all := []harness.PGOption{harness.ProductionDurability()}
	extra, err := benchExtraSettings()
	if err != nil {
		b.Fatal(err)
	}
	for _, kv := range extra {
		all = append(all, harness.WithSetting(kv[0], kv[1]))
	}
	return harness.Postgres(b, major, append(all, opts...)...)
}

// benchExtraSettings parses PGRELAY_BENCH_SETTINGS (name=value,...).
func benchExtraSettings() ([][2]string, error) {
	v := strings.TrimSpace(os.Getenv("PGRELAY_BENCH_SETTINGS"))
	if v == "" {
		return nil, nil
	}
	var out [][2]string
	for _, item := range strings.Split(v, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("PGRELAY_BENCH_SETTINGS=%q: want name=value pairs separated by commas, e.g. max_wal_size=4GB", v)
		}
		out = append(out, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	}
	return out, nil
}

// benchSettingNames are the settings the reports state.
var benchSettingNames = []string{"fsync", "full_page_writes", "synchronous_commit", "wal_level", "shared_buffers", "max_wal_size", "checkpoint_timeout", "maintenance_work_mem", "max_parallel_maintenance_workers", "autovacuum"}

// benchSettings is pg's values of benchSettingNames, as name=value, ...
func benchSettings(b *testing.B, pg *harness.PG) string {
	b.Helper()
	names := slices.Clone(benchSettingNames)
	extra, _ := benchExtraSettings()
	for _, kv := range extra {
		if !slices.Contains(names, kv[0]) {
			names = append(names, kv[0])
		}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return pg.QueryString(b, `SELECT string_agg(name || '=' || pg_catalog.current_setting(name), ', ' ORDER BY array_position(ARRAY[`+strings.Join(quoted, ",")+`], name))
		FROM pg_catalog.pg_settings WHERE name IN (`+strings.Join(quoted, ",")+`)`)
}

// benchLoad is the machine's load average (1, 5 and 15 minutes).
func benchLoad() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// benchOnly reports whether the contender name runs: PGRELAY_BENCH_ONLY
// matches it, or it is pgrelay's.
func benchOnly(b *testing.B, name string) bool {
	v := os.Getenv("PGRELAY_BENCH_ONLY")
	if v == "" || strings.HasPrefix(name, "pgrelay") {
		return true
	}
	re, err := regexp.Compile(v)
	if err != nil {
		b.Fatalf("PGRELAY_BENCH_ONLY=%q: %v", v, err)
	}
	return re.MatchString(name)
}

// benchProc is what one run of a program cost.
type benchProc struct {
	start  time.Time
	wall   time.Duration
	cpu    time.Duration // user + system
	maxRSS int64         // bytes
	stdout string
	stderr string
}

// benchTool is the path of a PostgreSQL 15 client program.
func benchTool(b *testing.B, name string) string {
	b.Helper()
	dir, err := harness.ClientBinaries()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// benchBaseEnv is the environment without PG* and PGRELAY_* variables.
func benchBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// benchLibpqEnv points libpq programs at pg's database.
func benchLibpqEnv(pg *harness.PG) []string {
	return append(benchBaseEnv(),
		"PGHOST="+pg.Host, "PGPORT="+strconv.Itoa(pg.Port), "PGUSER="+pg.User,
		"PGPASSWORD="+pg.Password, "PGDATABASE="+pg.DB, "PGSSLMODE=disable")
}

// benchPgrelayEnv configures pgrelay to copy src into tgt through slot.
func benchPgrelayEnv(src, tgt *harness.PG, slot, snapshot string) []string {
	return append(benchBaseEnv(),
		"PGRELAY_SOURCE_URL="+src.URL(), "PGRELAY_TARGET_URL="+tgt.URL(),
		"PGRELAY_SLOT="+slot, "PGRELAY_PUBLICATION="+benchPublication,
		"PGRELAY_SNAPSHOT="+snapshot, "PGRELAY_LOG_FORMAT=json")
}

// benchConnInfo is a libpq key=value string for CREATE SUBSCRIPTION.
func benchConnInfo(pg *harness.PG) string {
	return fmt.Sprintf("host=%s port=%d dbname=%s user=%s password=%s sslmode=disable", pg.Host, pg.Port, pg.DB, pg.User, pg.Password)
}

// benchRun runs a program to completion and fails the benchmark if it fails.
func benchRun(b *testing.B, timeout time.Duration, env []string, perfName string, argv ...string) benchProc {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", filepath.Base(argv[0]), err)
	}
	stopPerf := benchPerf(b, perfName)
	err := cmd.Wait()
	p := benchProc{start: start, wall: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	stopPerf()
	if err != nil {
		b.Fatalf("%s %s: %v (after %v)\nstdout:\n%s\nstderr:\n%s", filepath.Base(argv[0]), strings.Join(argv[1:], " "), err, p.wall.Round(time.Millisecond), benchTail(p.stdout), benchTail(p.stderr))
	}
	benchUsage(&p, cmd.ProcessState)
	return p
}

func benchUsage(p *benchProc, ps *os.ProcessState) {
	p.cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		p.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
}

// benchPerf records a system-wide profile when PGRELAY_BENCH_PERF names a
// directory; the returned function ends the recording.
func benchPerf(b *testing.B, name string) func() {
	dir := os.Getenv("PGRELAY_BENCH_PERF")
	if dir == "" || name == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatalf("PGRELAY_BENCH_PERF=%s: %v", dir, err)
	}
	out := filepath.Join(dir, name+".perf.data")
	// System-wide, so the profile also shows the source's walsender and the
	// target's backend: perf report --sort comm,dso -i <file>.
	cmd := exec.Command("perf", "record", "-a", "-F", "499", "-g", "-o", out)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("PGRELAY_BENCH_PERF: start perf: %v", err)
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		b.Logf("perf profile of %s: %s (perf report -i %s)", name, out, out)
	}
}

// benchPipe runs `from | to` and returns the wall time of the pair.
func benchPipe(b *testing.B, timeout time.Duration, fromEnv []string, from []string, toEnv []string, to []string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	src := exec.CommandContext(ctx, from[0], from[1:]...)
	dst := exec.CommandContext(ctx, to[0], to[1:]...)
	src.Env, dst.Env = fromEnv, toEnv
	var srcErr, dstOut bytes.Buffer
	src.Stdout, src.Stderr = w, &srcErr
	dst.Stdin, dst.Stdout, dst.Stderr = r, &dstOut, &dstOut
	start := time.Now()
	if err := src.Start(); err != nil {
		b.Fatalf("start %s: %v", filepath.Base(from[0]), err)
	}
	if err := dst.Start(); err != nil {
		_ = src.Process.Kill()
		b.Fatalf("start %s: %v", filepath.Base(to[0]), err)
	}
	_ = w.Close()
	_ = r.Close()
	errSrc, errDst := src.Wait(), dst.Wait()
	took := time.Since(start)
	if errSrc != nil || errDst != nil {
		b.Fatalf("%s | %s: %v, %v\n%s\n%s", strings.Join(from, " "), strings.Join(to, " "), errSrc, errDst, benchTail(srcErr.String()), benchTail(dstOut.String()))
	}
	return took
}

// benchWait polls cond every interval until it holds, failing after timeout.
func benchWait(b *testing.B, timeout, interval time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(interval)
	}
}

func benchTail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func benchMB(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// benchServerCPU is the CPU time (user + system) pg's PostgreSQL server has
// used so far: the postmaster, its running processes and the exited ones it
// reaped. Deltas of it are what a contender cost the server, however busy the
// machine is with other work.
func benchServerCPU(b *testing.B, pg *harness.PG) time.Duration {
	b.Helper()
	backend := pg.QueryString(b, "SELECT pg_backend_pid()")
	st, err := benchProcStat(backend)
	if err != nil {
		b.Fatalf("server CPU: %v", err)
	}
	postmaster := st[1]
	pm, err := benchProcStat(postmaster)
	if err != nil {
		b.Fatalf("server CPU: %v", err)
	}
	ticks := benchTicks(pm[11]) + benchTicks(pm[12]) + benchTicks(pm[13]) + benchTicks(pm[14])
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatalf("server CPU: %v", err)
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		child, err := benchProcStat(e.Name())
		if err != nil || child[1] != postmaster {
			continue // gone meanwhile, or not the server's
		}
		ticks += benchTicks(child[11]) + benchTicks(child[12])
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// benchProcStat returns the fields of /proc/<pid>/stat after the command
// name: [0] is the state, [1] the parent pid, [11] utime, [12] stime, [13]
// cutime, [14] cstime (proc(5) field n is at n-3).
func benchProcStat(pid string) ([]string, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%s/stat: no command name", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f))
	}
	return f, nil
}

func benchTicks(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// benchCheckpoints is how many checkpoints pg's server has started so far
// (its log: log_checkpoints is on by default since PostgreSQL 15).
func benchCheckpoints(pg *harness.PG) int {
	return strings.Count(pg.ServerLog(), "checkpoint starting:")
}

// benchQuiesce checkpoints the servers a contender is about to use and
// writes the machine's dirty pages out, so that none pays for the writes of
// what ran before it: the first one ran right after pgbench -i (the source's
// heap and WAL), each later one after the previous contender's load.
func benchQuiesce(b *testing.B, servers ...*harness.PG) {
	b.Helper()
	for _, pg := range servers {
		pg.Exec(b, "CHECKPOINT")
	}
	syscall.Sync()
	time.Sleep(200 * time.Millisecond)
}

// benchPgbenchInit fills pg with pgbench's tables at scale.
func benchPgbenchInit(b *testing.B, pg *harness.PG, scale int) {
	b.Helper()
	benchRun(b, 60*time.Minute, benchLibpqEnv(pg), "", benchTool(b, "pgbench"), "-i", "-q", "-s", strconv.Itoa(scale))
}

// benchRounds is PGRELAY_BENCH_ROUNDS, or benchRoundsDefault.
func benchRounds() (int, error) {
	v := os.Getenv("PGRELAY_BENCH_ROUNDS")
	if v == "" {
		return benchRoundsDefault, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("PGRELAY_BENCH_ROUNDS=%q: want a number of rounds, 1 or more", v)
	}
	return n, nil
}

// benchMedian is the median of ds (the mean of the middle two for an even
// count); ds is not changed.
func benchMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// benchSeconds lists ds in seconds, two decimals.
func benchSeconds(ds []time.Duration) string {
	each := make([]string, len(ds))
	for i, d := range ds {
		each[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(each, ", ")
}

// benchFirst counts the rounds in this process: each round starts with the
// next contender, so that whatever favours the first or the last of a round
// favours each in turn.
var benchFirst atomic.Int64

// benchRotated runs fs, starting with the next one in turn.
func benchRotated(fs []func()) {
	first := int(benchFirst.Add(1) - 1)
	for k := range fs {
		fs[(first+k)%len(fs)]()
	}
}

func benchCPUs() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// benchSeedWithoutCopy runs `pgrelay replicate` with PGRELAY_SNAPSHOT=never so
// it creates slot and records the target as seeded from the slot's
// consistent point, waits until it logs that it streams, and stops it. (Not
// until the slot is active: it is from the start of its creation on.)
func benchSeedWithoutCopy(b *testing.B, bin string, src, tgt *harness.PG, slot string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "replicate")
	cmd.Env = benchPgrelayEnv(src, tgt, slot, "never")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatalf("start pgrelay replicate: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), `"msg":"streaming"`) {
		select {
		case err := <-exited:
			b.Fatalf("pgrelay replicate exited before streaming: %v\n%s", err, benchTail(out.String()))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			b.Fatalf("pgrelay replicate did not start streaming from slot %s within 2m\n%s", slot, benchTail(out.String()))
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		b.Fatalf("pgrelay replicate did not stop cleanly on SIGTERM: %v\n%s", err, benchTail(out.String()))
	}
	if !strings.Contains(out.String(), "stopped cleanly") {
		b.Fatalf("pgrelay replicate output lacks \"stopped cleanly\":\n%s", benchTail(out.String()))
	}
}

// --- BenchmarkDrain ---

// benchDrain is what one consumer's drain of the backlog cost.
type benchDrain struct {
	wall time.Duration
	// confirmLag is the time from the backlog's last change being visible
	// on the target to the slot's confirmed_flush_lsn reaching the end of
	// the backlog (consumers that apply; -1 for the others).
	confirmLag     time.Duration
	srcCPU, tgtCPU time.Duration
	proc           *benchProc // pgrelay's process, nil for the others
	// streaming is when pgrelay logged that it streams from its slot, from
	// its start: its start-up (connections, checks, the target's state).
	streaming time.Duration
	// settings are the target's settings, for the report, when it is not
	// a PostgreSQL server like the source.
	settings string
	// counts are a MariaDB target's benchMYCounters over the drain.
	counts []int64
}

// benchDrainer is one consumer of the backlog.
type benchDrainer struct {
	name string
	key  string // short, for metric names
	// applies: it has a target whose confirmation lag is measured.
	applies bool
	// mariadb: its target is MariaDB, whose rate is compared with
	// pg_recvlogical's.
	mariadb bool
	// prepare readies the consumer of round before the backlog is
	// written: its slot, and its target holding the source's tables as
	// they are now. It returns the drain, run once the backlog is written.
	prepare func(b *testing.B, src *harness.PG, round string) func(b *testing.B, end benchDrainEnd) benchDrain
}

// benchDrainEnd is the backlog's end: the LSN after its last change (a row
// of bench_marker), and what the pgbench tables add up to.
type benchDrainEnd struct {
	lsn, checksum string
}

// benchMarkerDDL is the table whose one row, inserted after the pgbench
// load, is the backlog's last change: cheap to look for on a target many
// times a second.
const benchMarkerDDL = "CREATE TABLE public.bench_marker (id int PRIMARY KEY)"

func BenchmarkDrain(b *testing.B) {
	bin := e2eBinary(b)
	rounds, err := benchRounds()
	if err != nil {
		b.Fatal(err)
	}
	drainers := benchDrainers(bin)
	var kept []benchDrainer
	for _, d := range drainers {
		if benchOnly(b, d.name) {
			kept = append(kept, d)
		}
	}
	results := map[string][]benchDrain{}
	var backlog int64
	var tps float64
	var settings, loadStart string
	for i := 0; i < b.N; i++ {
		r, bl, t, set, ld := benchDrainOnce(b, kept, i, rounds)
		for k, v := range r {
			results[k] = append(results[k], v...)
		}
		backlog, tps, settings, loadStart = bl, t, set, ld
	}
	benchDrainReport(b, kept, results, backlog, tps, settings, loadStart, rounds)
}

// benchDrainers are BenchmarkDrain's consumers.
func benchDrainers(bin string) []benchDrainer {
	var baseline []benchDrainer
	if old := os.Getenv("PGRELAY_BENCH_BASELINE"); old != "" {
		baseline = append(baseline, benchDrainer{name: "pgrelay replicate (baseline binary)", key: "baseline-replicate", applies: true, prepare: func(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
			return benchPgrelayDrainer(b, old, src, round, "replicate")
		}})
	}
	return append([]benchDrainer{
		{name: "pg_recvlogical → /dev/null (ceiling)", key: "ceiling", prepare: benchCeilingDrainer},
		{name: "CREATE SUBSCRIPTION (native apply)", key: "native", applies: true, prepare: benchNativeDrainer},
		{name: "pgrelay replicate", key: "pgrelay-replicate", applies: true, prepare: func(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
			return benchPgrelayDrainer(b, bin, src, round, "replicate")
		}},
		{name: "pgrelay migrate", key: "pgrelay-migrate", applies: true, prepare: func(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
			return benchPgrelayDrainer(b, bin, src, round, "migrate")
		}},
	}, append(benchMariaDBDrainers(bin), baseline...)...)
}

// benchDrainTarget is a target holding what the source held before the
// load: pgbench -i at the same scale writes the same rows.
func benchDrainTarget(b *testing.B, seeded string) *harness.PG {
	b.Helper()
	tgt := benchServer(b, benchMajor)
	benchPgbenchInit(b, tgt, benchDrainScale)
	tgt.Exec(b, benchMarkerDDL)
	if got := tgt.QueryString(b, benchChecksum); got != seeded {
		b.Fatalf("target seeded unlike the source: %s, source %s", got, seeded)
	}
	return tgt
}

func benchCeilingDrainer(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
	slot := "bench_ceiling_" + round
	src.Exec(b, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
	return func(b *testing.B, end benchDrainEnd) benchDrain {
		benchQuiesce(b, src)
		srcCPU := benchServerCPU(b, src)
		p := benchRun(b, 30*time.Minute, benchLibpqEnv(src), "", benchTool(b, "pg_recvlogical"),
			"-d", src.DB, "--start", "-S", slot, "-E", end.lsn, "-f", "/dev/null", "-F", "0", "--no-loop",
			"-o", "proto_version=3", "-o", "publication_names="+benchPublication)
		time.Sleep(500 * time.Millisecond) // the postmaster reaps the walsender, adding its CPU time
		return benchDrain{wall: p.wall, confirmLag: -1, srcCPU: benchServerCPU(b, src) - srcCPU}
	}
}

func benchNativeDrainer(b *testing.B, src *harness.PG, round string) func(*testing.B, benchDrainEnd) benchDrain {
	slot := "bench_native_" + round
	tgt := benchDrainTarget(b, src.QueryString(b, benchChecksum))
	src.Exec(b, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
	tgt.Exec(b, fmt.Sprintf("CREATE SUBSCRIPTION bench_sub CONNECTION '%s' PUBLICATION %s WITH (create_slot = false, slot_name = '%s', copy_data = false, enabled = false)",
		benchConnInfo(src), benchPublication, slot))
	return func(b *testing.B, end benchDrainEnd) benchDrain {
		benchQuiesce(b, src, tgt)
		srcCPU, tgtCPU := benchServerCPU(b, src), benchServerCPU(b, tgt)
		w := benchWatchDrain(b, src, tgt, slot, end.lsn)
		start := time.Now()
		tgt.Exec(b, "ALTER SUBSCRIPTION bench_sub ENABLE")
		visible, confirmed := w.wait(b, 60*time.Minute)
		r := benchDrain{wall: confirmed.Sub(start), confirmLag: confirmed.Sub(visible)}
		r.srcCPU, r.tgtCPU = benchServerCPU(b, src)-srcCPU, benchServerCPU(b, tgt)-tgtCPU
		tgt.Exec(b, "ALTER SUBSCRIPTION bench_sub DISABLE")
		if got := tgt.QueryString(b, benchChecksum); got != end.checksum {
			b.Fatalf("native subscription target checksum %s, source %s", got, end.checksum)
		}
		return r
	}
}

// benchPgrelayDrainer prepares `pgrelay replicate` or `pgrelay migrate`
// (command) to drain the backlog: replicate is done when its slot has
// confirmed the backlog's end (then stopped), migrate when it exits.
func benchPgrelayDrainer(b *testing.B, bin string, src *harness.PG, round, command string) func(*testing.B, benchDrainEnd) benchDrain {
	slot := "bench_" + command + "_" + round
	tgt := benchDrainTarget(b, src.QueryString(b, benchChecksum))
	benchSeedWithoutCopy(b, bin, src, tgt, slot)
	return func(b *testing.B, end benchDrainEnd) benchDrain {
		benchQuiesce(b, src, tgt)
		srcCPU, tgtCPU := benchServerCPU(b, src), benchServerCPU(b, tgt)
		w := benchWatchDrain(b, src, tgt, slot, end.lsn)
		var r benchDrain
		switch command {
		case "migrate":
			p := benchRun(b, 60*time.Minute, benchPgrelayEnv(src, tgt, slot, "auto"), "drain-migrate", bin, "migrate")
			if !strings.Contains(p.stdout, "caught up") {
				b.Fatalf("pgrelay migrate did not report catching up:\n%s\n%s", p.stdout, benchTail(p.stderr))
			}
			visible, confirmed := w.wait(b, time.Minute)
			r = benchDrain{wall: p.wall, confirmLag: confirmed.Sub(visible), proc: &p}
		default:
			p, visible, confirmed := benchReplicateUntil(b, bin, src, tgt, slot, w)
			r = benchDrain{wall: p.wall, confirmLag: confirmed.Sub(visible), proc: &p}
		}
		time.Sleep(500 * time.Millisecond) // the postmasters reap pgrelay's sessions, adding their CPU time
		r.srcCPU, r.tgtCPU = benchServerCPU(b, src)-srcCPU, benchServerCPU(b, tgt)-tgtCPU
		r.streaming = benchLogged(r.proc.start, r.proc.stderr, "streaming")
		if got := tgt.QueryString(b, benchChecksum); got != end.checksum {
			b.Fatalf("pgrelay %s target checksum %s, source %s", command, got, end.checksum)
		}
		return r
	}
}

// benchLogged is when pgrelay's JSON log (log) first has the message msg,
// from start; 0 when it has none.
func benchLogged(start time.Time, log, msg string) time.Duration {
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == msg {
			return e.Time.Sub(start)
		}
	}
	return 0
}

// benchReplicateUntil runs `pgrelay replicate` until w sees its slot confirm
// the backlog's end, then stops it with SIGTERM. Its wall time is to the
// confirmation, its CPU and RSS the whole process's.
func benchReplicateUntil(b *testing.B, bin string, src, tgt *harness.PG, slot string, w *benchDrainWatch) (p benchProc, visible, confirmed time.Time) {
	b.Helper()
	cmd := exec.Command(bin, "replicate")
	cmd.Env = benchPgrelayEnv(src, tgt, slot, "auto")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("start pgrelay replicate: %v", err)
	}
	stopPerf := benchPerf(b, "drain-replicate")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		stopPerf()
		b.Fatalf("pgrelay replicate exited before its slot confirmed the backlog: %v\n%s\n%s", err, benchTail(stdout.String()), benchTail(stderr.String()))
	case <-w.done:
	case <-time.After(60 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		stopPerf()
		b.Fatal("pgrelay replicate did not drain the backlog within 60m")
	}
	visible, confirmed = w.wait(b, 0)
	p.start, p.wall = start, confirmed.Sub(start)
	stopPerf()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		b.Fatalf("pgrelay replicate did not stop cleanly on SIGTERM: %v\n%s", err, benchTail(stderr.String()))
	}
	p.stdout, p.stderr = stdout.String(), stderr.String()
	benchUsage(&p, cmd.ProcessState)
	return p, visible, confirmed
}

// benchDrainWatch looks, every 10 ms, for the backlog's last change on a
// target and for the slot's confirmed_flush_lsn reaching the backlog's
// end, and notes when it first saw each.
type benchDrainWatch struct {
	done               chan struct{}
	visible, confirmed time.Time
	err                error
}

func benchWatchDrain(b *testing.B, src, tgt *harness.PG, slot, endLSN string) *benchDrainWatch {
	b.Helper()
	tgtConn := tgt.Conn(b)
	return benchWatchDrainFunc(b, src, slot, endLSN, func(ctx context.Context) (bool, error) {
		var seen bool
		err := tgtConn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM public.bench_marker)").Scan(&seen)
		return seen, err
	})
}

// benchWatchDrainFunc is benchWatchDrain with visible telling whether the
// backlog's last change is on the target.
func benchWatchDrainFunc(b *testing.B, src *harness.PG, slot, endLSN string, visible func(context.Context) (bool, error)) *benchDrainWatch {
	b.Helper()
	srcConn := src.Conn(b)
	w := &benchDrainWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
		defer cancel()
		for w.confirmed.IsZero() {
			var seen bool
			if w.visible.IsZero() {
				if seen, w.err = visible(ctx); w.err != nil {
					return
				}
				if seen {
					w.visible = time.Now()
				}
			}
			if w.err = srcConn.QueryRow(ctx, "SELECT coalesce(confirmed_flush_lsn >= $1::pg_lsn, false) FROM pg_replication_slots WHERE slot_name = $2", endLSN, slot).Scan(&seen); w.err != nil {
				return
			}
			if seen {
				w.confirmed = time.Now()
				if w.visible.IsZero() {
					w.visible = w.confirmed // a confirmation covers what it confirms
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return w
}

// wait waits up to timeout (0: it is done) for the watch to see the
// confirmation and returns when it saw the change and the confirmation.
func (w *benchDrainWatch) wait(b *testing.B, timeout time.Duration) (visible, confirmed time.Time) {
	b.Helper()
	if timeout > 0 {
		select {
		case <-w.done:
		case <-time.After(timeout):
			b.Fatalf("timed out after %v waiting for the slot to confirm the backlog", timeout)
		}
	}
	<-w.done
	if w.err != nil {
		b.Fatalf("watching the drain: %v", w.err)
	}
	return w.visible, w.confirmed
}

// benchDrainOnce prepares every drainer's consumer for every round, writes
// the backlog, and runs the rounds.
func benchDrainOnce(b *testing.B, drainers []benchDrainer, iter, rounds int) (map[string][]benchDrain, int64, float64, string, string) {
	b.Helper()
	src := benchServer(b, benchMajor)
	benchPgbenchInit(b, src, benchDrainScale)
	src.Exec(b, benchMarkerDDL)
	src.Exec(b, "CREATE PUBLICATION "+benchPublication+" FOR ALL TABLES")
	drains := make([][]func(*testing.B, benchDrainEnd) benchDrain, rounds)
	for k := range rounds {
		for _, d := range drainers {
			drains[k] = append(drains[k], d.prepare(b, src, fmt.Sprintf("%d_%d", iter, k)))
		}
	}
	settings := benchSettings(b, src)
	src.Exec(b, "CHECKPOINT")

	loadAvg := benchLoad()
	load := benchRun(b, 60*time.Minute, benchLibpqEnv(src), "", benchTool(b, "pgbench"), "-n",
		"-c", strconv.Itoa(benchDrainClients), "-j", strconv.Itoa(benchDrainThreads), "-t", strconv.Itoa(benchDrainTxPerClient))
	tps := benchDrainTx / load.wall.Seconds()
	src.Exec(b, "INSERT INTO public.bench_marker VALUES (1)")
	end := benchDrainEnd{lsn: src.QueryString(b, "SELECT pg_current_wal_lsn()"), checksum: src.QueryString(b, benchChecksum)}
	backlog, err := strconv.ParseInt(src.QueryString(b, "SELECT pg_wal_lsn_diff($1::pg_lsn, min(confirmed_flush_lsn))::bigint FROM pg_replication_slots", end.lsn), 10, 64)
	if err != nil {
		b.Fatalf("backlog size: %v", err)
	}
	b.Logf("backlog: %d transactions in %.0f MB of WAL up to %s; source %.0f tx/s; load average %s", benchDrainTx, benchMB(backlog), end.lsn, tps, benchLoad())

	results := map[string][]benchDrain{}
	for k := range rounds {
		fs := make([]func(), len(drainers))
		for i, d := range drainers {
			fs[i] = func() {
				r := drains[k][i](b, end)
				results[d.name] = append(results[d.name], r)
				msg := fmt.Sprintf("round %d: %s: %v", k, d.name, r.wall.Round(time.Millisecond))
				if r.confirmLag >= 0 {
					msg += fmt.Sprintf(", confirmed %v after its last change was visible", r.confirmLag.Round(time.Millisecond))
				}
				if r.proc != nil {
					msg += fmt.Sprintf(", CPU %v, peak RSS %.0f MB, streaming after %v", r.proc.cpu.Round(time.Millisecond), benchMB(r.proc.maxRSS), r.streaming.Round(time.Millisecond))
				}
				b.Logf("%s; load average %s", msg, benchLoad())
			}
		}
		benchRotated(fs)
	}
	return results, backlog, tps, settings, loadAvg
}

func benchDrainReport(b *testing.B, drainers []benchDrainer, results map[string][]benchDrain, backlog int64, sourceTPS float64, settings, loadStart string, rounds int) {
	med := func(name string, f func(benchDrain) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range results[name] {
			ds = append(ds, f(r))
		}
		return benchMedian(ds)
	}
	wall := func(r benchDrain) time.Duration { return r.wall }
	ref := med("pgrelay replicate", wall)
	if ref == 0 {
		ref = med("pgrelay migrate", wall)
	}
	b.ReportMetric(float64(ref.Nanoseconds()), "ns/op")
	var rss int64
	for _, d := range drainers {
		m := med(d.name, wall)
		if m == 0 {
			continue
		}
		b.ReportMetric(benchDrainTx/m.Seconds(), d.key+"-tx/s")
		if !strings.HasPrefix(d.key, "pgrelay") {
			b.ReportMetric(m.Seconds()/ref.Seconds(), "pgrelay-vs-"+d.key)
		}
		if d.applies {
			b.ReportMetric(med(d.name, func(r benchDrain) time.Duration { return r.confirmLag }).Seconds(), d.key+"-confirm-lag-s")
		}
		for _, r := range results[d.name] {
			if r.proc != nil {
				rss = max(rss, r.proc.maxRSS)
			}
		}
	}
	b.ReportMetric(benchMB(rss), "pgrelay-peak-RSS-MB")

	var t strings.Builder
	fmt.Fprintf(&t, "\nDrain: %d pgbench TPC-B transactions (scale %d, -c %d -j %d) held by a slot per consumer and round, %.0f MB of WAL; PostgreSQL %d source and targets on one %d-core machine; the source made %.0f tx/s. Medians of %d rounds, each consumer first in turn, each after a CHECKPOINT and a sync. Load average %s before the load, %s at the end.\n",
		benchDrainTx, benchDrainScale, benchDrainClients, benchDrainThreads, benchMB(backlog), benchMajor, benchCPUs(), sourceTPS, rounds, loadStart, benchLoad())
	fmt.Fprintf(&t, "Server settings: %s.\n\n", settings)
	t.WriteString("| consumer | seconds (median) | each round | tx/s | pgrelay replicate is | confirmed after last change, s | source CPU s | target CPU s | pgrelay CPU s | pgrelay peak RSS MB |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range drainers {
		rs := results[d.name]
		if len(rs) == 0 {
			continue
		}
		var walls []time.Duration
		for _, r := range rs {
			walls = append(walls, r.wall)
		}
		m := benchMedian(walls)
		lag, tgt, cpu, rssCol := "–", "–", "–", "–"
		if d.applies {
			lag = fmt.Sprintf("%.2f", med(d.name, func(r benchDrain) time.Duration { return r.confirmLag }).Seconds())
			tgt = fmt.Sprintf("%.1f", med(d.name, func(r benchDrain) time.Duration { return r.tgtCPU }).Seconds())
		}
		if rs[0].proc != nil {
			cpu = fmt.Sprintf("%.2f", med(d.name, func(r benchDrain) time.Duration { return r.proc.cpu }).Seconds())
			var peak int64
			for _, r := range rs {
				peak = max(peak, r.proc.maxRSS)
			}
			rssCol = fmt.Sprintf("%.0f", benchMB(peak))
		}
		fmt.Fprintf(&t, "| %s | %.2f | %s | %.0f | %.2f× | %s | %.1f | %s | %s | %s |\n", d.name, m.Seconds(), benchSeconds(walls), benchDrainTx/m.Seconds(),
			m.Seconds()/ref.Seconds(), lag, med(d.name, func(r benchDrain) time.Duration { return r.srcCPU }).Seconds(), tgt, cpu, rssCol)
	}
	for _, d := range drainers {
		if rs := results[d.name]; len(rs) > 0 && rs[0].proc != nil {
			fmt.Fprintf(&t, "\n%s logged that it streams from its slot %.2f s after its start (median).", d.name, med(d.name, func(r benchDrain) time.Duration { return r.streaming }).Seconds())
		}
	}
	benchMariaDBDrainReport(b, &t, drainers, med, results)
	t.WriteString("\nThe native subscription and pgrelay replicate are done when their slot has confirmed the backlog's end; pgrelay migrate when it exits (it confirms before). \"Confirmed after last change\": from the backlog's last change visible on the target to the slot's confirmed_flush_lsn reaching it (looked for every 10 ms). CPU columns: the servers' CPU time during each drain (the PostgreSQL servers' processes; mariadbd's threads), which load on the machine from other work does not count.\n")
	fmt.Print(t.String())
}

// --- BenchmarkSnapshot ---

// benchCopy is what one copy of the source cost.
type benchCopy struct {
	wall           time.Duration
	srcCPU, tgtCPU time.Duration
	proc           *benchProc // pgrelay's process, nil for the others
	// phases: pgrelay's copy of its largest table, from its log (zero for
	// the others): until the table's last row was in, and its key build.
	loaded, keyed time.Duration
	checkpoints   int   // the target server's checkpoints during the copy (-1: not counted)
	walBytes      int64 // the WAL the target wrote during the copy
}

// benchWALAt is pg's current WAL position, for benchWALSince.
func benchWALAt(b *testing.B, pg *harness.PG) string {
	b.Helper()
	return pg.QueryString(b, "SELECT pg_catalog.pg_current_wal_lsn()")
}

// benchWALSince is how many bytes of WAL pg wrote since from.
func benchWALSince(b *testing.B, pg *harness.PG, from string) int64 {
	b.Helper()
	n, err := strconv.ParseInt(pg.QueryString(b, "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), $1::pg_lsn)::bigint", from), 10, 64)
	if err != nil {
		b.Fatalf("WAL written: %v", err)
	}
	return n
}

// benchCopier is one way of copying the source into a new target.
type benchCopier struct {
	name string
	key  string // short, for metric names
	copy func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy
}

// benchSnapshotWant is what a copy must hold: the source's checksum and its
// number of valid primary keys.
type benchSnapshotWant struct{ checksum, pks string }

// benchSnapshotTarget is one kind of target: its sub-benchmark's name and
// its copiers, pgrelay's first (the others are compared with it).
type benchSnapshotTarget struct {
	name     string
	settings func(b *testing.B) string // the target's settings, for the report
	// warmUp copies the source once into a target of this kind, untimed
	// (see benchWarmUp).
	warmUp  func(b *testing.B, src *harness.PG)
	copiers []benchCopier
	notes   string // what the report's columns mean for this target, when not PostgreSQL's
}

// benchSnapshotTargets are the targets BenchmarkSnapshot copies a source of
// scale into: each PostgreSQL major of PGRELAY_BENCH_TARGET_MAJORS, and
// MariaDB at the scales of PGRELAY_BENCH_MARIADB_SCALE.
func benchSnapshotTargets(b *testing.B, bin string, scale int) []benchSnapshotTarget {
	majors, err := harness.MajorsFrom("PGRELAY_BENCH_TARGET_MAJORS", benchSnapshotTargetMajors)
	if err != nil {
		b.Fatal(err)
	}
	var targets []benchSnapshotTarget
	for _, tgt := range majors {
		targets = append(targets, benchSnapshotTarget{
			name: fmt.Sprintf("%dto%d", benchMajor, tgt),
			settings: func(b *testing.B) string {
				pg := benchServer(b, tgt, benchNoAutovacuum)
				defer pg.Destroy(b)
				return benchSettings(b, pg)
			},
			warmUp: func(b *testing.B, src *harness.PG) { benchWarmUp(b, src, tgt) },
			copiers: append([]benchCopier{
				{name: "pgrelay migrate", key: "pgrelay", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
					return benchPgrelayCopy(b, bin, src, tgt, round, want)
				}},
				{name: "CREATE SUBSCRIPTION (native initial sync)", key: "native", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
					return benchNativeCopy(b, src, tgt, round, want)
				}},
				{name: `pg_dump \| psql`, key: "dump-restore", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
					return benchDumpCopy(b, src, tgt, want)
				}},
			}, benchBaselineCopiers(tgt)...),
		})
	}
	myScales, err := benchMariaDBScales()
	if err != nil {
		b.Fatal(err)
	}
	if slices.Contains(myScales, scale) {
		targets = append(targets, benchMariaDBSnapshotTarget(bin, false), benchMariaDBSnapshotTarget(bin, true))
	}
	return targets
}

// benchBaselineCopiers is pgrelay migrate of the binary PGRELAY_BENCH_BASELINE
// names (another build, e.g. main's), when set: a change's effect measured
// side by side, in the same rounds, rather than across runs.
func benchBaselineCopiers(tgt int) []benchCopier {
	old := os.Getenv("PGRELAY_BENCH_BASELINE")
	if old == "" {
		return nil
	}
	return []benchCopier{{name: "pgrelay migrate (baseline binary)", key: "baseline", copy: func(b *testing.B, src *harness.PG, round string, want benchSnapshotWant) benchCopy {
		return benchPgrelayCopy(b, old, src, tgt, "b"+round, want)
	}}}
}

// benchSnapshotScales is PGRELAY_BENCH_SCALE: the pgbench scales of the
// sources, comma-separated.
func benchSnapshotScales() ([]int, error) {
	v := os.Getenv("PGRELAY_BENCH_SCALE")
	if v == "" {
		v = benchSnapshotScale
	}
	var scales []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("PGRELAY_BENCH_SCALE=%q: want pgbench scales, 1 or more, separated by commas", v)
		}
		scales = append(scales, n)
	}
	return scales, nil
}

func BenchmarkSnapshot(b *testing.B) {
	bin := e2eBinary(b)
	scales, err := benchSnapshotScales()
	if err != nil {
		b.Fatal(err)
	}
	rounds, err := benchRounds()
	if err != nil {
		b.Fatal(err)
	}
	for _, scale := range scales {
		b.Run(fmt.Sprintf("s%d", scale), func(b *testing.B) {
			// One source for the scale's targets.
			src, data, want := benchSnapshotSource(b, scale)
			for _, tgt := range benchSnapshotTargets(b, bin, scale) {
				b.Run(tgt.name, func(b *testing.B) {
					var copiers []benchCopier
					for _, c := range tgt.copiers {
						if benchOnly(b, c.name) {
							copiers = append(copiers, c)
						}
					}
					loadStart := benchLoad()
					results := map[string][]benchCopy{}
					for i := 0; i < b.N; i++ {
						tgt.warmUp(b, src)
						for k := range rounds {
							round := fmt.Sprintf("%d_%d", i, k)
							fs := make([]func(), len(copiers))
							for j, c := range copiers {
								fs[j] = func() {
									r := c.copy(b, src, round, want)
									results[c.name] = append(results[c.name], r)
									msg := fmt.Sprintf("round %s: %s: %v, %d target checkpoints (-1: not counted), %.0f MB of target WAL", round, c.name, r.wall.Round(time.Millisecond), r.checkpoints, benchMB(r.walBytes))
									if r.proc != nil {
										msg += fmt.Sprintf(", CPU %v, peak RSS %.0f MB; largest table loaded at %v, keyed at %v", r.proc.cpu.Round(time.Millisecond), benchMB(r.proc.maxRSS), r.loaded.Round(time.Millisecond), r.keyed.Round(time.Millisecond))
									}
									b.Logf("%s; load average %s", msg, benchLoad())
								}
							}
							benchRotated(fs)
						}
					}
					benchSnapshotReport(b, scale, data, tgt, copiers, results, loadStart)
				})
			}
		})
	}
}

// benchSnapshotSource fills a source at scale and returns it, its table
// data's size and what a copy of it must hold.
func benchSnapshotSource(b *testing.B, scale int) (*harness.PG, int64, benchSnapshotWant) {
	b.Helper()
	src := benchServer(b, benchMajor, benchNoAutovacuum)
	start := time.Now()
	benchPgbenchInit(b, src, scale)
	src.Exec(b, "CREATE PUBLICATION "+benchPublication+" FOR ALL TABLES")
	src.Exec(b, "CHECKPOINT")
	data, err := strconv.ParseInt(src.QueryString(b, `SELECT sum(pg_catalog.pg_table_size(c.oid))::bigint FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`), 10, 64)
	if err != nil {
		b.Fatalf("table size: %v", err)
	}
	want := benchSnapshotWant{checksum: src.QueryString(b, benchChecksum), pks: benchPKCount(b, src)}
	b.Logf("source: pgbench -s %d, %.0f MB of table data, filled in %v, checksum %s", scale, benchMB(data), time.Since(start).Round(time.Second), want.checksum)
	return src, data, want
}

func benchSnapshotReport(b *testing.B, scale int, data int64, tgt benchSnapshotTarget, copiers []benchCopier, results map[string][]benchCopy, loadStart string) {
	pick := func(name string, f func(benchCopy) time.Duration) []time.Duration {
		var ds []time.Duration
		for _, r := range results[name] {
			ds = append(ds, f(r))
		}
		return ds
	}
	wall := func(r benchCopy) time.Duration { return r.wall }
	ref := copiers[0]
	mRef := benchMedian(pick(ref.name, wall))
	mbps := func(d time.Duration) float64 { return benchMB(data) / d.Seconds() }
	b.ReportMetric(float64(mRef.Nanoseconds()), "ns/op")
	var rss int64
	for _, r := range results[ref.name] {
		rss = max(rss, r.proc.maxRSS)
	}
	for _, c := range copiers {
		m := benchMedian(pick(c.name, wall))
		b.ReportMetric(m.Seconds(), c.key+"-s")
		if c.name != ref.name {
			b.ReportMetric(m.Seconds()/mRef.Seconds(), ref.key+"-vs-"+c.key)
		}
	}
	b.ReportMetric(benchMB(rss), "pgrelay-peak-RSS-MB")
	b.ReportMetric(benchMedian(pick(ref.name, func(r benchCopy) time.Duration { return r.proc.cpu })).Seconds(), "pgrelay-CPU-s")

	rounds := len(results[ref.name])
	var t strings.Builder
	fmt.Fprintf(&t, "\nSnapshot: pgbench -s %d (%d rows), %.0f MB of table data (heap and TOAST, without indexes), a PostgreSQL %d source, target %s, on one %d-core machine; every copy ends with the tables' primary keys built. Medians of %d rounds, each on new targets, each contender first in turn, each after a CHECKPOINT and a sync. Load average %s at the start, %s at the end.\n",
		scale, scale*100000+scale*10+scale, benchMB(data), benchMajor, tgt.name, benchCPUs(), rounds, loadStart, benchLoad())
	fmt.Fprintf(&t, "Target settings: %s.\n\n", tgt.settings(b))
	t.WriteString("| copy | seconds (median) | each round | MB/s | pgrelay is | source CPU s | target CPU s | target WAL MB | target checkpoints |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for k := len(copiers) - 1; k >= 0; k-- {
		c := copiers[k]
		walls := pick(c.name, wall)
		m := benchMedian(walls)
		var cps []int
		for _, r := range results[c.name] {
			cps = append(cps, r.checkpoints)
		}
		slices.Sort(cps)
		checkpoints := "–" // a target that does not count them
		if cp := cps[len(cps)/2]; cp >= 0 {
			checkpoints = strconv.Itoa(cp)
		}
		fmt.Fprintf(&t, "| %s | %.2f | %s | %.0f | %.2f× | %.1f | %.1f | %.0f | %s |\n", c.name, m.Seconds(), benchSeconds(walls), mbps(m), m.Seconds()/mRef.Seconds(),
			benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.srcCPU })).Seconds(),
			benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.tgtCPU })).Seconds(),
			benchMB(int64(benchMedian(pick(c.name, func(r benchCopy) time.Duration { return time.Duration(r.walBytes) })))), checkpoints)
	}
	t.WriteString("\n")
	for _, c := range copiers {
		rs := results[c.name]
		if len(rs) == 0 || rs[0].proc == nil {
			continue
		}
		var peak int64
		for _, r := range rs {
			peak = max(peak, r.proc.maxRSS)
		}
		loaded := benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.loaded }))
		keyed := benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.keyed - r.loaded }))
		rest := benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.wall - r.keyed }))
		fmt.Fprintf(&t, "%s: peak RSS %.0f MB, CPU %.2f s; its largest table's last row in at %.2f s, its primary key built in %.2f s, done %.2f s after that (medians, from its log).\n",
			c.name, benchMB(peak), benchMedian(pick(c.name, func(r benchCopy) time.Duration { return r.proc.cpu })).Seconds(), loaded.Seconds(), keyed.Seconds(), rest.Seconds())
	}
	t.WriteString("CPU columns: the source and target servers' CPU time during each copy (medians).\n")
	if tgt.notes != "" {
		t.WriteString(tgt.notes + "\n")
	}
	fmt.Print(t.String())
}

// benchWarmUp copies src once with pg_dump | psql into a target of major
// tgt, untimed, and removes that target, so that the first timed copy
// starts as every later one does: right after a copy's server and files
// were freed (see benchPgrelayCopy), not right after
// the source was filled. Without it the first contender of the first round,
// pgrelay in every run, paid for it: into PostgreSQL 15, pgrelay took
// 1.66-2.36 s (2.02 s on average) in that place across seven runs,
// 1.50-1.96 s (1.69 s on average) in the others.
func benchWarmUp(b *testing.B, src *harness.PG, tgt int) {
	b.Helper()
	warm := benchServer(b, tgt, benchNoAutovacuum)
	defer warm.Destroy(b)
	d := benchPipe(b, 60*time.Minute, benchLibpqEnv(src), []string{benchTool(b, "pg_dump"), "--no-publications", "--no-subscriptions"},
		benchLibpqEnv(warm), []string{benchTool(b, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"})
	b.Logf("warm-up copy (pg_dump | psql, not counted): %v", d.Round(time.Millisecond))
}

// benchPKCount is the number of valid primary keys of pg's public tables.
func benchPKCount(b *testing.B, pg *harness.PG) string {
	return pg.QueryString(b, "SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND i.indisprimary AND i.indisvalid")
}

// benchCheckCopy fails the benchmark unless tgt holds what want says.
func benchCheckCopy(b *testing.B, who string, tgt *harness.PG, want benchSnapshotWant) {
	b.Helper()
	if got := tgt.QueryString(b, benchChecksum); got != want.checksum {
		b.Fatalf("%s target checksum %s, source %s", who, got, want.checksum)
	}
	if got := benchPKCount(b, tgt); got != want.pks {
		b.Fatalf("%s target has %s primary keys, the source %s", who, got, want.pks)
	}
}

// benchNoAutovacuum is the snapshot servers' setting: a worker that started
// at a random moment (on the target after a copy's commit, or on the source)
// landed in one contender's time or another's, 0.3-0.5 s of CPU; ten runs
// with it on gave pgrelay 1.74-2.35 s, eight without 1.67-2.04 s.
var benchNoAutovacuum = harness.WithSetting("autovacuum", "off")

// benchPgrelayCopy: pgrelay migrate into an empty database (slot, copy,
// keys, catch up).
//
// Each snapshot contender gets a target server started just before it and
// removed just after it, so that each starts in the same state: right after
// the previous copy's server and files were freed. On the VM these figures
// come from, memory freed a moment before is cheap to write into and memory
// the kernel has handed back to the hypervisor (free page reporting; DAMON
// pages out page cache idle for a minute) dear: writing 1 GB into new page
// cache took 0.21-0.26 s of kernel time in the first case, 1.7-3.5 s in the
// second. With the three targets started together at the start of a round,
// whichever contender came first got the memory the last round had freed:
// pgrelay took 1.9-2.1 s when first and 2.8-3.3 s otherwise.
func benchPgrelayCopy(b *testing.B, bin string, src *harness.PG, major int, round string, want benchSnapshotWant) benchCopy {
	b.Helper()
	tgt := benchServer(b, major, benchNoAutovacuum)
	defer tgt.Destroy(b)
	slot := "bench_snap_" + round
	benchQuiesce(b, src, tgt)
	srcCPU, tgtCPU, cps, wal := benchServerCPU(b, src), benchServerCPU(b, tgt), benchCheckpoints(tgt), benchWALAt(b, tgt)
	env := benchPgrelayEnv(src, tgt, slot, "auto")
	if os.Getenv("PGRELAY_BENCH_LOG") != "" {
		env = append(env, "PGRELAY_LOG_LEVEL=debug")
	}
	p := benchRun(b, 60*time.Minute, env, "snapshot", bin, "migrate")
	time.Sleep(500 * time.Millisecond) // the postmasters reap pgrelay's sessions, adding their CPU time
	r := benchCopy{wall: p.wall, proc: &p, srcCPU: benchServerCPU(b, src) - srcCPU, tgtCPU: benchServerCPU(b, tgt) - tgtCPU, checkpoints: benchCheckpoints(tgt) - cps, walBytes: benchWALSince(b, tgt, wal)}
	r.loaded, r.keyed = benchPhases(p.start, p.stderr)
	benchCheckCopy(b, "pgrelay", tgt, want)
	src.Exec(b, "SELECT pg_catalog.pg_drop_replication_slot($1)", slot)
	if os.Getenv("PGRELAY_BENCH_LOG") != "" {
		b.Logf("pgrelay output:\n%s\n%s", p.stdout, p.stderr)
	}
	return r
}

// benchPhases reads from pgrelay's JSON log when the largest table's last
// row was in and when its keys were built, from the process's start.
func benchPhases(start time.Time, log string) (loaded, keyed time.Duration) {
	var largest int64
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Time  time.Time `json:"time"`
			Msg   string    `json:"msg"`
			Table string    `json:"table"`
			Rows  int64     `json:"rows"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Msg {
		case "table loaded, building its keys and indexes":
			if e.Rows > largest {
				largest, loaded = e.Rows, e.Time.Sub(start)
				keyed = 0
			}
		case "table copied":
			if e.Rows == largest && keyed == 0 {
				keyed = e.Time.Sub(start)
			}
		}
	}
	return loaded, keyed
}

// benchNativeCopy: the native initial table sync into tables pg_dump -s
// created (with their primary keys, as a subscriber's tables are).
func benchNativeCopy(b *testing.B, src *harness.PG, major int, round string, want benchSnapshotWant) benchCopy {
	b.Helper()
	tgt := benchServer(b, major, benchNoAutovacuum)
	defer tgt.Destroy(b)
	benchPipe(b, 10*time.Minute, benchLibpqEnv(src), []string{benchTool(b, "pg_dump"), "-s", "--no-publications", "--no-subscriptions"},
		benchLibpqEnv(tgt), []string{benchTool(b, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"})
	benchQuiesce(b, src, tgt)
	srcCPU, tgtCPU, cps, wal := benchServerCPU(b, src), benchServerCPU(b, tgt), benchCheckpoints(tgt), benchWALAt(b, tgt)
	start := time.Now()
	tgt.Exec(b, fmt.Sprintf("CREATE SUBSCRIPTION bench_sub CONNECTION '%s' PUBLICATION %s WITH (copy_data = true, slot_name = 'bench_native_sync_%s')",
		benchConnInfo(src), benchPublication, round))
	benchWait(b, 60*time.Minute, 50*time.Millisecond, "the native subscription's tables to be ready", func() bool {
		return tgt.QueryString(b, "SELECT count(*) = 4 AND bool_and(srsubstate = 'r') FROM pg_catalog.pg_subscription_rel") == "t"
	})
	r := benchCopy{wall: time.Since(start), srcCPU: benchServerCPU(b, src) - srcCPU, tgtCPU: benchServerCPU(b, tgt) - tgtCPU, checkpoints: benchCheckpoints(tgt) - cps, walBytes: benchWALSince(b, tgt, wal)}
	benchCheckCopy(b, "native subscription", tgt, want)
	tgt.Exec(b, "DROP SUBSCRIPTION bench_sub")
	return r
}

// benchDumpCopy: pg_dump | psql, schema and data into an empty database.
func benchDumpCopy(b *testing.B, src *harness.PG, major int, want benchSnapshotWant) benchCopy {
	b.Helper()
	tgt := benchServer(b, major, benchNoAutovacuum)
	defer tgt.Destroy(b)
	benchQuiesce(b, src, tgt)
	srcCPU, tgtCPU, cps, wal := benchServerCPU(b, src), benchServerCPU(b, tgt), benchCheckpoints(tgt), benchWALAt(b, tgt)
	wall := benchPipe(b, 60*time.Minute, benchLibpqEnv(src), []string{benchTool(b, "pg_dump"), "--no-publications", "--no-subscriptions"},
		benchLibpqEnv(tgt), []string{benchTool(b, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"})
	time.Sleep(500 * time.Millisecond) // the postmasters reap pg_dump's and psql's sessions
	r := benchCopy{wall: wall, srcCPU: benchServerCPU(b, src) - srcCPU, tgtCPU: benchServerCPU(b, tgt) - tgtCPU, checkpoints: benchCheckpoints(tgt) - cps, walBytes: benchWALSince(b, tgt, wal)}
	benchCheckCopy(b, "pg_dump | psql", tgt, want)
	return r
}
