package integration

// Shared helpers of the end-to-end tests (e2e_test.go, crash_test.go,
// memory_test.go): the pgrelay binary built once per test binary, child
// processes with captured logs, the source/target comparison, and catch-up
// waits. Package-level names start with e2e.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// e2eBinDirPrefix names the directory the binary is built into; the pid in it
// lets a later run remove what a killed run left behind.
const e2eBinDirPrefix = "pgrelay-e2e-bin-"

var e2eBin struct {
	once sync.Once
	path string
	err  error
	took time.Duration
}

// e2eBinary builds cmd/pgrelay once per test binary and returns its path.
// PGRELAY_E2E_RACE=1 builds it with the race detector (slower; the memory
// test then measures the detector's overhead too); PGRELAY_E2E_BIN=path uses
// a binary built elsewhere instead.
func e2eBinary(t testing.TB) string {
	t.Helper()
	e2eBin.once.Do(func() {
		if prebuilt := os.Getenv("PGRELAY_E2E_BIN"); prebuilt != "" {
			e2eBin.path = prebuilt
			return
		}
		start := time.Now()
		e2eRemoveStaleBinDirs()
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", e2eBinDirPrefix, os.Getpid()))
		if e2eBin.err = os.MkdirAll(dir, 0o755); e2eBin.err != nil {
			return
		}
		path := filepath.Join(dir, "pgrelay")
		args := []string{"build", "-o", path}
		if os.Getenv("PGRELAY_E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		args = append(args, "github.com/pgrelay/pgrelay/cmd/pgrelay")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			e2eBin.err = fmt.Errorf("go build cmd/pgrelay: %v\n%s", err, out)
			return
		}
		e2eBin.path, e2eBin.took = path, time.Since(start)
	})
	if e2eBin.err != nil {
		t.Fatal(e2eBin.err)
	}
	return e2eBin.path
}

// e2eRemoveStaleBinDirs removes binary directories of test binaries that no
// longer run.
func e2eRemoveStaleBinDirs() {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		pidText, ok := strings.CutPrefix(e.Name(), e2eBinDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

var e2eSerial atomic.Int64

// e2eEnv is one replication set-up: a source and a target database, a slot
// and a publication of its own, and the environment pgrelay runs with.
type e2eEnv struct {
	t        testing.TB
	bin      string
	src, tgt *harness.PG
	slot     string
	pub      string
	tmp      string   // TMPDIR of the children (spill files)
	extra    []string // more NAME=value settings
}

// e2eNewEnv prepares a set-up; call it after harness.Postgres so that the
// children it starts are killed before the databases are dropped.
func e2eNewEnv(t testing.TB, src, tgt *harness.PG) *e2eEnv {
	t.Helper()
	n := e2eSerial.Add(1)
	// The target's DDL goes to its server log, shown when a wait fails.
	tgt.Exec(t, "ALTER DATABASE "+pgx.Identifier{tgt.DB}.Sanitize()+" SET log_statement = 'ddl'")
	return &e2eEnv{
		t:    t,
		bin:  e2eBinary(t),
		src:  src,
		tgt:  tgt,
		slot: fmt.Sprintf("e2e_slot_%d", n),
		pub:  fmt.Sprintf("e2e_pub_%d", n),
		tmp:  t.TempDir(),
	}
}

// environ is the children's environment (e2eEnviron).
func (e *e2eEnv) environ() []string {
	return e2eEnviron(e.tmp, e.src.URL(), e.tgt.URL(), e.slot, e.pub, e.extra)
}

// e2eEnviron is a pgrelay child's environment: the test's without PG* and
// PGRELAY_* variables (and TMPDIR: tmp instead), the set-up's settings, then
// extra.
func e2eEnviron(tmp, sourceURL, targetURL, slot, pub string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PG") || name == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"TMPDIR="+tmp,
		"PGRELAY_SOURCE_URL="+sourceURL,
		"PGRELAY_TARGET_URL="+targetURL,
		"PGRELAY_SLOT="+slot,
		"PGRELAY_PUBLICATION="+pub,
		"PGRELAY_LOG_FORMAT=json",
		"PGRELAY_STATUS_INTERVAL=1s",
	)
	return append(env, extra...)
}

// e2eProc is a running pgrelay.
type e2eProc struct {
	name   string
	cmd    *exec.Cmd
	out    e2eLines // stdout
	errOut e2eLines // stderr: the log
	done   chan struct{}
	err    error // Wait's result, once done is closed
}

// e2eLines collects what a child writes, line by line.
type e2eLines struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

func (l *e2eLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *e2eLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.lines)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
	}
	return out
}

// start runs `pgrelay args...` in the background (e2eStart).
func (e *e2eEnv) start(args ...string) *e2eProc {
	e.t.Helper()
	return e2eStart(e.t, e.bin, e.environ(), args...)
}

// e2eStart runs `bin args...` in the background with env. The child is killed
// when the test ends (and by the kernel if the test binary dies).
func e2eStart(t testing.TB, bin string, env []string, args ...string) *e2eProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	p := &e2eProc{name: "pgrelay " + strings.Join(args, " "), cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = &p.out
	cmd.Stderr = &p.errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		// A binary built with PGRELAY_E2E_RACE=1 reports data races here.
		for _, l := range p.errOut.all() {
			if strings.Contains(l, "WARNING: DATA RACE") {
				t.Errorf("%s reported a data race; log:\n%s", p.name, strings.Join(p.errOut.all(), "\n"))
				break
			}
		}
	})
	return p
}

// run runs `pgrelay args...` to its end (at most timeout) and returns its exit
// code; the output stays in the returned process.
func (e *e2eEnv) run(timeout time.Duration, args ...string) (*e2eProc, int) {
	e.t.Helper()
	p := e.start(args...)
	return p, p.wait(e.t, timeout)
}

// mustRun runs `pgrelay args...` and fails the test unless it exits 0.
func (e *e2eEnv) mustRun(timeout time.Duration, args ...string) *e2eProc {
	e.t.Helper()
	p, code := e.run(timeout, args...)
	if code != 0 {
		e.t.Fatalf("%s exited %d, want 0; log:\n%s", p.name, code, p.logs())
	}
	return p
}

func (p *e2eProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// code is the exit code of an exited process (-1 when killed by a signal).
func (p *e2eProc) code() int {
	<-p.done
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// wait waits for the process to exit and returns its exit code; after
// timeout it kills it and fails the test.
func (p *e2eProc) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code()
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("%s did not exit within %v; log:\n%s", p.name, timeout, p.logs())
		return -1
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *e2eProc) kill() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// term sends SIGTERM and returns the exit code (failing after timeout).
func (p *e2eProc) term(t testing.TB, timeout time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	return p.wait(t, timeout)
}

// logs is the whole stderr, for failure messages (the last 200 lines).
func (p *e2eProc) logs() string {
	lines := p.errOut.all()
	if len(lines) > 200 {
		lines = append([]string{fmt.Sprintf("… %d earlier lines", len(lines)-200)}, lines[len(lines)-200:]...)
	}
	return "    " + strings.Join(lines, "\n    ")
}

// e2eLogLine is one JSON log line of pgrelay.
type e2eLogLine map[string]any

func (l e2eLogLine) str(key string) string {
	s, _ := l[key].(string)
	return s
}

// logLines returns the parsed JSON log lines (lines that are not JSON, such as
// the final "pgrelay: error" line, are skipped).
func (p *e2eProc) logLines() []e2eLogLine {
	var out []e2eLogLine
	for _, l := range p.errOut.all() {
		var m e2eLogLine
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// findLog returns the first log line whose msg contains msg, if any.
func (p *e2eProc) findLog(msg string) (e2eLogLine, bool) {
	for _, l := range p.logLines() {
		if strings.Contains(l.str("msg"), msg) {
			return l, true
		}
	}
	return nil, false
}

// waitLog waits until a log line's msg contains msg and returns it. It fails
// the test when the process exits first or timeout passes.
func (p *e2eProc) waitLog(t testing.TB, msg string, timeout time.Duration) e2eLogLine {
	t.Helper()
	var line e2eLogLine
	err := harness.Await(timeout, 20*time.Millisecond, fmt.Sprintf("%s to log %q", p.name, msg), func() error {
		exited := p.exited() // before the look: the line may come with the exit
		l, ok := p.findLog(msg)
		switch {
		case ok:
			line = l
			return nil
		case exited:
			return harness.Abort(fmt.Errorf("it exited (%v) first", p.err))
		}
		return errors.New("no such line yet")
	})
	if err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	return line
}

// e2eConn opens a connection for the test's own queries, closed at cleanup.
func e2eConn(t testing.TB, pg *harness.PG) *pgx.Conn {
	t.Helper()
	return pg.Conn(t)
}

// e2eCtx is a context that ends after d or when the test ends.
func e2eCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// e2eSessionSQL makes both sides print values the same way.
const e2eSessionSQL = `SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres';
SET extra_float_digits = 3; SET bytea_output = 'hex'; SET search_path = pg_catalog`

// e2eColumn is a column as the catalog shows it.
type e2eColumn struct{ name, typ string }

func e2eColumns(ctx context.Context, conn *pgx.Conn, qualified string) ([]e2eColumn, error) {
	rows, err := conn.Query(ctx, `SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, qualified)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (e2eColumn, error) {
		var c e2eColumn
		err := r.Scan(&c.name, &c.typ)
		return c, err
	})
	return cols, err
}

// e2eDump returns `COPY (SELECT cols FROM table ORDER BY each column's text)
// TO STDOUT` of one table.
func e2eDump(ctx context.Context, conn *pgx.Conn, qualified string, cols []e2eColumn, filter string) ([]byte, error) {
	var sel, order []string
	for _, c := range cols {
		id := pgx.Identifier{c.name}.Sanitize()
		sel = append(sel, id)
		order = append(order, id+"::text COLLATE \"C\"")
	}
	where := ""
	if filter != "" {
		where = " WHERE " + filter
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM %s%s ORDER BY %s) TO STDOUT", strings.Join(sel, ", "), qualified, where, strings.Join(order, ", "))
	if len(cols) == 0 {
		// A table of no columns: an empty line per row.
		q = fmt.Sprintf("COPY (SELECT FROM %s%s) TO STDOUT", qualified, where)
	}
	var buf bytes.Buffer
	if _, err := conn.PgConn().CopyTo(ctx, &buf, q); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	return buf.Bytes(), nil
}

// e2eCompare checks that every table of the publication holds the same rows
// on the target as on the source, byte for byte in COPY text form, and has the
// same columns of the same types. Differences fail the test with a small diff.
// It returns the number of tables compared.
func e2eCompare(t testing.TB, e *e2eEnv) int {
	t.Helper()
	diffs, n := e2eDiff(t, e)
	for _, d := range diffs {
		t.Error(d)
	}
	return n
}

// e2eDiff is e2eCompare's work: the differences, one message per table.
func e2eDiff(t testing.TB, e *e2eEnv) ([]string, int) {
	t.Helper()
	ctx := e2eCtx(t, 5*time.Minute)
	src, tgt := e2eConn(t, e.src), e2eConn(t, e.tgt)
	for _, c := range []*pgx.Conn{src, tgt} {
		if _, err := c.Exec(ctx, e2eSessionSQL); err != nil {
			t.Fatalf("compare: session settings: %v", err)
		}
	}
	// A publication's row filter (15+) limits the source rows compared.
	rows, err := src.Query(ctx, `SELECT quote_ident(schemaname::text) || '.' || quote_ident(tablename::text),
			coalesce(to_jsonb(pt) ->> 'rowfilter', '')
		FROM pg_publication_tables pt WHERE pubname = $1 ORDER BY 1`, e.pub)
	if err != nil {
		t.Fatalf("compare: list published tables: %v", err)
	}
	filters := map[string]string{}
	var table, filter string
	var tables []string
	if _, err := pgx.ForEachRow(rows, []any{&table, &filter}, func() error {
		tables = append(tables, table)
		filters[table] = filter
		return nil
	}); err != nil {
		t.Fatalf("compare: list published tables: %v", err)
	}
	if len(tables) == 0 {
		t.Fatalf("compare: publication %s has no tables", e.pub)
	}
	var diffs []string
	for _, table := range tables {
		scols, err := e2eColumns(ctx, src, table)
		if err != nil {
			t.Fatalf("compare: source columns of %s: %v", table, err)
		}
		tcols, err := e2eColumns(ctx, tgt, table)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("table %s: target: %v", table, err))
			continue
		}
		if d := e2eColumnDiff(scols, tcols); d != "" {
			diffs = append(diffs, fmt.Sprintf("table %s: columns differ: %s", table, d))
			continue
		}
		sdump, err := e2eDump(ctx, src, table, scols, filters[table])
		if err != nil {
			t.Fatalf("compare: source: %v", err)
		}
		tdump, err := e2eDump(ctx, tgt, table, scols, "")
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("table %s: target: %v", table, err))
			continue
		}
		if !bytes.Equal(sdump, tdump) {
			diffs = append(diffs, fmt.Sprintf("table %s differs:\n%s", table, e2eRowDiff(sdump, tdump)))
		}
	}
	return diffs, len(tables)
}

// e2eColumnDiff compares column names and types, ignoring their order (a
// column the source added after others may sit elsewhere on the target).
func e2eColumnDiff(src, tgt []e2eColumn) string {
	tm := map[string]string{}
	for _, c := range tgt {
		tm[c.name] = c.typ
	}
	var problems []string
	for _, c := range src {
		typ, ok := tm[c.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s %s missing on the target", c.name, c.typ))
		case typ != c.typ:
			problems = append(problems, fmt.Sprintf("%s is %s on the source, %s on the target", c.name, c.typ, typ))
		}
		delete(tm, c.name)
	}
	for name, typ := range tm {
		problems = append(problems, fmt.Sprintf("%s %s only on the target", name, typ))
	}
	slices.Sort(problems)
	return strings.Join(problems, "; ")
}

// e2eRowDiff shows the rows only on one side (at most 8 each), and the counts.
func e2eRowDiff(src, tgt []byte) string {
	count := func(b []byte) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" || len(b) > 0 {
				m[l]++
			}
		}
		return m
	}
	sm, tm := count(src), count(tgt)
	var only []string
	show := func(prefix string, a, b map[string]int) {
		var lines []string
		for l, n := range a {
			if extra := n - b[l]; extra > 0 {
				lines = append(lines, fmt.Sprintf("%s %s (×%d)", prefix, e2eShorten(l), extra))
			}
		}
		slices.Sort(lines)
		if len(lines) > 8 {
			lines = append(lines[:8], fmt.Sprintf("%s … %d more", prefix, len(lines)-8))
		}
		only = append(only, lines...)
	}
	show("- source only:", sm, tm)
	show("+ target only:", tm, sm)
	if len(only) == 0 {
		only = append(only, "  same rows, different order")
	}
	return fmt.Sprintf("  source %d rows, target %d rows\n  %s", bytes.Count(src, []byte("\n")), bytes.Count(tgt, []byte("\n")), strings.Join(only, "\n  "))
}

func e2eShorten(s string) string {
	s = strconv.Quote(s)
	if len(s) > 240 {
		s = s[:120] + fmt.Sprintf("…(%d bytes)…", len(s)-240) + s[len(s)-120:]
	}
	return s
}

// e2eSync writes a marker row on the source and waits until the target has
// it: since transactions are applied in commit order, everything committed on
// the source before is on the target then. p, when not nil, is the running
// pgrelay whose exit fails the wait early.
func e2eSync(t testing.TB, e *e2eEnv, p *e2eProc, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	e.src.Exec(t, "CREATE TABLE IF NOT EXISTS public.e2e_sync (token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
	// Two markers: the first may reach the target in a copy of e2e_sync (a
	// table pgrelay finds unknown at its start, holding rows), which says
	// nothing of the stream; the second, written once the first is there,
	// after any such copy's snapshot, comes through the stream, after every
	// transaction committed before it.
	for range 2 {
		token := fmt.Sprintf("sync-%d-%d", time.Now().UnixNano(), rand.Int64())
		e.src.Exec(t, "INSERT INTO public.e2e_sync (token) VALUES ($1)", token)
		e2eWaitTarget(t, e, p, timeout-time.Since(start), "table e2e_sync", "SELECT to_regclass('public.e2e_sync') IS NOT NULL")
		e2eWaitTarget(t, e, p, timeout-time.Since(start), "marker "+token, "SELECT count(*) = 1 FROM public.e2e_sync WHERE token = $1", token)
	}
}

// e2eWaitTarget polls the target until query (returning one boolean) is true.
// Errors (a table not created yet) count as false.
func e2eWaitTarget(t testing.TB, e *e2eEnv, p *e2eProc, timeout time.Duration, what, query string, args ...any) {
	t.Helper()
	ctx := e2eCtx(t, timeout+10*time.Second)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	err := harness.Await(timeout, 50*time.Millisecond, what+" on the target", func() error {
		var err error
		if conn == nil || conn.IsClosed() {
			conn, err = pgx.Connect(ctx, e.tgt.URL())
		}
		if err == nil {
			var ok bool
			if err = conn.QueryRow(ctx, query, args...).Scan(&ok); err == nil && !ok {
				err = errors.New("the query says false")
			}
		}
		if err != nil && p != nil && p.exited() {
			return harness.Abort(fmt.Errorf("%s exited with %v", p.name, p.err))
		}
		return err
	})
	if err != nil {
		msg := err.Error()
		if p != nil {
			msg += "; log of " + p.name + ":\n" + p.logs()
		}
		t.Fatal(msg + "\n" + e.targetLog())
	}
}

// targetLog is the target server's log lines of the target database (its DDL
// when e2eNewEnv could turn log_statement on), for failure messages.
func (e *e2eEnv) targetLog() string {
	var mine []string
	for _, l := range strings.Split(e.tgt.ServerLog(), "\n") {
		if strings.Contains(l, "@"+e.tgt.DB+" ") {
			mine = append(mine, l)
		}
	}
	return "target server log of " + e.tgt.DB + " (last lines of the server's):\n    " + strings.Join(mine, "\n    ")
}

// e2eStatus is `pgrelay status --json`.
type e2eStatus struct {
	Slot struct {
		Name               string `json:"name"`
		Exists             bool   `json:"exists"`
		Active             bool   `json:"active"`
		BeingCreated       bool   `json:"being_created"`
		ActivePID          int    `json:"active_pid"`
		WALStatus          string `json:"wal_status"`
		TwoPhase           bool   `json:"two_phase"`
		ConfirmedFlushLSN  string `json:"confirmed_flush_lsn"`
		Invalidated        bool   `json:"invalidated"`
		InvalidationReason string `json:"invalidation_reason"`
	} `json:"slot"`
	WALRetention struct {
		RetainedBytes      int64  `json:"retained_bytes"`
		SafeWALSize        *int64 `json:"safe_wal_size"`
		MaxSlotWALKeepSize int64  `json:"max_slot_wal_keep_size"`
		Warnings           []struct {
			Risk    string `json:"risk"`
			Message string `json:"message"`
		} `json:"warnings"`
	} `json:"wal_retention"`
	SourceWALLSN   string     `json:"source_wal_lsn"`
	AppliedLSN     string     `json:"applied_lsn"`
	LastCommitTime *time.Time `json:"last_commit_time"`
	LagBytes       int64      `json:"lag_bytes"`
	LagSeconds     float64    `json:"lag_seconds"`
	Seeded         bool       `json:"seeded"`
	SnapshotLSN    string     `json:"snapshot_lsn"`
	Tables         []struct {
		Table  string `json:"table"`
		Schema string `json:"schema"`
		Name   string `json:"name"`
		State  string `json:"state"`
		Rows   int64  `json:"rows"`
		Bytes  int64  `json:"bytes"`
		Copied bool   `json:"copied"`
	} `json:"tables"`
	TablesNote string `json:"tables_note"`
	Cutover    *struct {
		Ready           bool     `json:"ready"`
		CaughtUp        bool     `json:"caught_up"`
		LastMigration   *string  `json:"last_migration"`
		Schema          string   `json:"schema"`
		SequencesBehind []string `json:"sequences_behind"`
		LeftOut         []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			State      string `json:"state"`
			Reason     string `json:"reason"`
			Incomplete bool   `json:"incomplete"`
		} `json:"left_out"`
		NotCarried []struct {
			Kind   string `json:"kind"`
			Name   string `json:"name"`
			State  string `json:"state"`
			Reason string `json:"reason"`
		} `json:"not_carried"`
		NotReady []string `json:"not_ready"`
	} `json:"cutover"`
	CutoverNote string `json:"cutover_note"`
}

func (e *e2eEnv) status(t testing.TB) (e2eStatus, string) {
	t.Helper()
	p := e.mustRun(time.Minute, "status", "--json")
	raw := strings.Join(p.out.all(), "\n")
	var st e2eStatus
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("pgrelay status --json: %v; output:\n%s", err, raw)
	}
	return st, raw
}

// e2eSyncCompareStop waits until replicate p has applied everything the
// source committed, compares the tables, and stops p, which must exit 0.
func e2eSyncCompareStop(t testing.TB, e *e2eEnv, p *e2eProc) {
	t.Helper()
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// e2eLSN parses an LSN, failing the test when it is malformed.
func e2eLSN(t testing.TB, what, s string) pglogrepl.LSN {
	t.Helper()
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatalf("%s: %q is not an LSN: %v", what, s, err)
	}
	return lsn
}

var e2eLSNPattern = regexp.MustCompile(`\b[0-9A-F]{1,8}/[0-9A-F]{1,8}\b`)

// e2eWorkload reads testdata/workloads/<name>.
func e2eWorkload(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "workloads", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// e2eRand returns a random source whose seed is logged, so that a failing
// sequence of kills can be replayed with PGRELAY_E2E_SEED.
func e2eRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PGRELAY_E2E_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			seed = v
		}
	}
	t.Logf("random seed %d (set PGRELAY_E2E_SEED to replay)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// e2eMajorName is the subtest name of a major.
func e2eMajorName(major int) string { return fmt.Sprintf("pg%d", major) }

// e2eTargetPrepared lists the target's prepared transactions of the slot.
func e2eTargetPrepared(t testing.TB, e *e2eEnv) string {
	t.Helper()
	return e.tgt.QueryString(t, "SELECT coalesce(string_agg(gid, ',' ORDER BY gid), '') FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE $1", "pgrelay\\_"+strings.ReplaceAll(e.slot, "_", "\\_")+"\\_%")
}

// e2eExec runs stmts one after another on conn, one session (so that a
// BEGIN … PREPARE TRANSACTION sequence stays in it), failing the test at the
// first error.
func e2eExec(t testing.TB, ctx context.Context, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, sql := range stmts {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// e2eAwaitConfirmedPast waits until the slot's confirmed_flush_lsn is past
// lsn (what names what lies after lsn: "the PREPARE").
func e2eAwaitConfirmedPast(t testing.TB, e *e2eEnv, lsn pglogrepl.LSN, what string) {
	t.Helper()
	harness.Eventually(t, time.Minute, fmt.Sprintf("the slot to confirm %s after %s", what, lsn), func() error {
		if confirmed := e2eConfirmed(t, e); confirmed <= lsn {
			return fmt.Errorf("confirmed_flush_lsn is %s", confirmed)
		}
		return nil
	})
}

// e2eAwaitPublicationChecks waits until replicate p, streaming with
// PGRELAY_PUBLICATION_CHECK_INTERVAL set, has made n whole checks of its
// publication, and fails the test unless p still runs then: a check that finds
// the publication changed ends replicate. Each check starts by reading the
// slot's table states on the target, which replicate reads at no other time
// once it streams; the target's statistics count those reads, late at times
// (a session reports them when idle, at most once a second). So n+2 reads:
// one may be the start's own read counted late, and the last check read
// starts after the n-th check ended. A check that could not be made is
// logged, and fails the test too.
func e2eAwaitPublicationChecks(t testing.TB, e *e2eEnv, p *e2eProc, n int) {
	t.Helper()
	reads := func() int {
		v, err := strconv.Atoi(e.tgt.QueryString(t, `SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_catalog.pg_stat_user_tables
			WHERE relid = 'pgrelay.table_state'::regclass`))
		if err != nil {
			t.Fatalf("reads of pgrelay.table_state: %v", err)
		}
		return v
	}
	before := reads()
	err := harness.Await(time.Minute, 100*time.Millisecond, fmt.Sprintf("%d checks of the publication by %s", n, p.name), func() error {
		if p.exited() {
			return harness.Abort(fmt.Errorf("it exited %d", p.code()))
		}
		if got := reads() - before; got < n+2 {
			return fmt.Errorf("%d reads of pgrelay.table_state so far, want %d", got, n+2)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	if l, ok := p.findLog("could not check whether the publication changed since the copy"); ok {
		t.Fatalf("a check of the publication failed: %v; log:\n%s", l, p.logs())
	}
}
