package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/apply/applytest"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// testRelay is a relay whose clock the test moves: a backoff passes at once
// and is recorded, and each session takes the time the test says.
type testRelay struct {
	*Relay
	logs     *bytes.Buffer
	mu       sync.Mutex // clock is read by the notifier's goroutine too
	clock    time.Time
	backoffs []time.Duration
}

// now reads the test clock.
func (tr *testRelay) now() time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.clock
}

// advance moves the test clock on by d and returns the new time.
func (tr *testRelay) advance(d time.Duration) time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.clock = tr.clock.Add(d)
	return tr.clock
}

func newTestRelay(t *testing.T, cfg Config, tgt *applytest.Sink) *testRelay {
	t.Helper()
	if cfg.SourceURL == "" {
		cfg.SourceURL = "postgres://u@127.0.0.1/db"
	}
	logs := &bytes.Buffer{}
	var target Target
	if tgt != nil {
		target.Open = func(context.Context, OpenMode) (sink.Target, error) { return tgt, nil }
	}
	r, err := New(cfg, target, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRelay{Relay: r, logs: logs, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.now = tr.now
	r.after = func(d time.Duration) <-chan time.Time {
		tr.backoffs = append(tr.backoffs, d)
		ch := make(chan time.Time, 1)
		ch <- tr.advance(d)
		return ch
	}
	return tr
}

// script is a session that fails with errs in turn, then succeeds; took is
// how long each attempt lasts, streamed which of them reached streaming.
type script struct {
	tr       *testRelay
	errs     []error
	took     time.Duration
	streamed map[int]bool
	calls    int
}

func (s *script) session(ctx context.Context, migrate bool) (source.LSN, error) {
	i := s.calls
	s.calls++
	s.tr.advance(s.took)
	if s.streamed[i] {
		s.tr.mon.streamOK.Store(true)
	}
	if i < len(s.errs) {
		return 0, s.errs[i]
	}
	return 0x1000, nil
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

var lost = fmt.Errorf("receive: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})

// TestRunMigrateGivesUp: migrate retries what a retry cures with backoff 1,
// 2, 4, 8 s and gives up at the fifth failure in a row: a job, not a service.
func TestRunMigrateGivesUp(t *testing.T) {
	tr := newTestRelay(t, Config{}, nil)
	s := &script{tr: tr, errs: repeat(lost, 10)}
	_, err := tr.run(t.Context(), true, s.session)
	if err == nil || !strings.Contains(err.Error(), "(gave up after 5 attempts)") || !errors.Is(err, lost) {
		t.Fatalf("error %v, want the last one, after 5 attempts", err)
	}
	if s.calls != 5 || fmt.Sprint(tr.backoffs) != "[1s 2s 4s 8s]" {
		t.Errorf("%d sessions, backoffs %v; want 5 sessions and [1s 2s 4s 8s]", s.calls, tr.backoffs)
	}
	if tr.mon.Sessions() != 5 || tr.mon.Failures() != 5 || tr.mon.LastError() != lost.Error() {
		t.Errorf("monitor: %d sessions, %d failures, last %q", tr.mon.Sessions(), tr.mon.Failures(), tr.mon.LastError())
	}
}

// TestRunReplicateKeepsTrying: replicate retries for as long as it takes, its
// backoff doubling up to 30 s; a session that reached streaming starts the
// count afresh, and so does one that ran for over a minute.
func TestRunReplicateKeepsTrying(t *testing.T) {
	tr := newTestRelay(t, Config{}, nil)
	s := &script{tr: tr, errs: repeat(lost, 9), streamed: map[int]bool{7: true}}
	if err := func() error { _, err := tr.run(t.Context(), false, s.session); return err }(); err != nil {
		t.Fatal(err)
	}
	// The 8th session streamed: the 9th failure waits 1 s again.
	if got := fmt.Sprint(tr.backoffs); got != "[1s 2s 4s 8s 16s 30s 30s 1s 2s]" || s.calls != 10 {
		t.Errorf("backoffs %s over %d sessions; want [1s 2s 4s 8s 16s 30s 30s 1s 2s] over 10", got, s.calls)
	}

	tr = newTestRelay(t, Config{}, nil)
	s = &script{tr: tr, errs: repeat(lost, 3), took: 2 * time.Minute}
	if _, err := tr.run(t.Context(), true, s.session); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tr.backoffs); got != "[1s 1s 1s]" {
		t.Errorf("sessions of two minutes each: backoffs %s, want [1s 1s 1s]", got)
	}
}

// TestRunStopsAtWhatRetryDoesNotCure: an error no retry cures ends the run at
// once; a change the target refused is told what to do.
func TestRunStopsAtWhatRetryDoesNotCure(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		hint bool
	}{
		{"bad password", &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, false},
		{"preflight", &source.PreflightError{Problems: []error{source.ErrWALLevel}}, false},
		{"refused row", &sink.ChangeError{Op: "insert into", Table: `"t"`, LSN: 0x10, Err: errors.New("duplicate key"), Refused: true}, true},
	} {
		tr := newTestRelay(t, Config{}, nil)
		s := &script{tr: tr, errs: repeat(c.err, 3)}
		_, err := tr.run(t.Context(), false, s.session)
		if !errors.Is(err, c.err) || s.calls != 1 || len(tr.backoffs) != 0 {
			t.Errorf("%s: %v after %d sessions; want it after 1", c.name, err, s.calls)
		}
		if got := err != nil && strings.Contains(err.Error(), "make it take it"); got != c.hint {
			t.Errorf("%s: %v: hint %v, want %v", c.name, err, got, c.hint)
		}
	}
}

// TestRunRefusedValueInARow: a refused value marked retryable (a type that
// may have changed on the source) is retried, but the same refusal five
// sessions in a row stops the run, whatever the command; another error in
// between starts the count again.
func TestRunRefusedValueInARow(t *testing.T) {
	refused := func(lsn source.LSN) error {
		return sink.Retryable(&sink.ChangeError{Op: "insert into", Table: `"t"`, LSN: lsn, Err: errors.New("invalid input"), Refused: true})
	}
	tr := newTestRelay(t, Config{}, nil)
	errs := append(repeat(refused(0x10), 3), lost)
	errs = append(errs, repeat(refused(0x10), 6)...)
	s := &script{tr: tr, errs: errs, streamed: map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}}
	_, err := tr.run(t.Context(), false, s.session)
	if err == nil || !strings.Contains(err.Error(), "the target refused this change in 5 sessions in a row") || !strings.Contains(err.Error(), "make it take it") {
		t.Fatalf("error %v, want it to say the refusal does not go away, and what to do", err)
	}
	if s.calls != 9 {
		t.Errorf("%d sessions, want 9: three refusals, another error, then five", s.calls)
	}
}

// TestRunInterrupted: a signal while waiting to retry ends migrate with
// ErrMigrateInterrupted and replicate cleanly, saying it never streamed.
func TestRunInterrupted(t *testing.T) {
	for _, migrate := range []bool{true, false} {
		tr := newTestRelay(t, Config{}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		tr.after = func(time.Duration) <-chan time.Time { cancel(); return nil }
		s := &script{tr: tr, errs: repeat(lost, 3)}
		_, err := tr.run(ctx, migrate, s.session)
		switch {
		case migrate && !errors.Is(err, ErrMigrateInterrupted):
			t.Errorf("migrate: %v, want ErrMigrateInterrupted", err)
		case !migrate && err != nil:
			t.Errorf("replicate: %v, want a clean stop", err)
		case !migrate && !strings.Contains(tr.logs.String(), "stopped by a signal before streaming"):
			t.Errorf("replicate: the log does not say it stopped before streaming:\n%s", tr.logs)
		}
		if s.calls != 1 {
			t.Errorf("migrate %v: %d sessions after the signal, want 1", migrate, s.calls)
		}
	}
}

// TestRunCaughtUp: migrate returns where it caught up.
func TestRunCaughtUp(t *testing.T) {
	tr := newTestRelay(t, Config{}, nil)
	s := &script{tr: tr, errs: []error{lost}}
	lsn, err := tr.run(t.Context(), true, s.session)
	if err != nil || lsn != 0x1000 || s.calls != 2 {
		t.Fatalf("caught up at %s, %v after %d sessions; want 0/1000 after 2", lsn, err, s.calls)
	}
}

// TestRetryable: what a retry cures, among the errors of both servers, a
// sink's and the local machine's.
func TestRetryableClasses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{sink.Retryable(errors.New("conn lost")), true},
		// A sink's retryable error that a person must fix after all.
		{sink.Retryable(&pgconn.PgError{Code: "28P01"}), false},
		// An operator's fix away: retried until it is made.
		{&sink.ReadOnlyError{Err: errors.New("read-only")}, true},
		{fmt.Errorf("apply: %w", &sink.ReadOnlyError{Database: `"db"`}), true},
		{&sink.ChangeError{Err: errors.New("x"), Refused: true}, false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestLockSlotWaits: a second relay on the slot waits for the first and says
// so, then that it took over.
func TestLockSlotWaits(t *testing.T) {
	tgt := applytest.New(0)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	release, err := tgt.LockSlot(t.Context(), "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lockSlot(t.Context(), tgt, "s", log) }()
	for !strings.Contains(logs.String(), "another pgrelay applies this slot") {
		select {
		case err := <-done:
			t.Fatalf("took the lock another holds: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	_ = release(t.Context())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "took over the slot") {
		t.Errorf("log does not say it took over:\n%s", logs.String())
	}
}

// syncBuffer is a log another goroutine writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTargetProblems: the relay words what the target's preflight found.
func TestTargetProblems(t *testing.T) {
	tr := newTestRelay(t, Config{}, nil)
	err := tr.targetProblems([]sink.Problem{
		{Kind: sink.ProblemCreateSchema, Object: "pgrelay", Fix: `GRANT CREATE ON DATABASE db TO u`},
		{Kind: sink.ProblemCreateTables, Object: "app", Fix: `GRANT CREATE ON SCHEMA app TO u`},
		{Kind: sink.ProblemSetting, Object: "innodb_flush_log_at_trx_commit = 2", Fix: "set it to 1"},
	})
	want := "target: the role may not create schema pgrelay: GRANT CREATE ON DATABASE db TO u; and may not create tables in schema app: GRANT CREATE ON SCHEMA app TO u"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if !strings.Contains(tr.logs.String(), "innodb_flush_log_at_trx_commit = 2") {
		t.Errorf("a setting that breaks a guarantee is not warned about:\n%s", tr.logs)
	}
	if err := tr.targetProblems(nil); err != nil {
		t.Errorf("no problem: %v", err)
	}
}

// TestMonitorFollowsSessions: the monitor counts sessions and failures, keeps
// the last error, and adds up the sinks' counters across sessions.
func TestMonitorFollowsSessions(t *testing.T) {
	m := newMonitor()
	m.sessionStarted()
	m.setSink(statsSink{sink.Stats{Batches: 2, CopyRows: 10}})
	m.streamOK.Store(true)
	if !m.Streaming() || m.SinkStats().Batches != 2 {
		t.Fatalf("streaming %v, stats %+v", m.Streaming(), m.SinkStats())
	}
	m.sessionEnded(errors.New("boom"))
	m.sessionStarted()
	m.setSink(statsSink{sink.Stats{Batches: 3}})
	if st := m.SinkStats(); m.Streaming() || st.Batches != 5 || st.CopyRows != 10 {
		t.Errorf("second session: streaming %v, stats %+v; want not streaming, 5 batches, 10 rows", m.Streaming(), st)
	}
	if m.Sessions() != 2 || m.Failures() != 1 || m.LastError() != "boom" {
		t.Errorf("%d sessions, %d failures, last %q", m.Sessions(), m.Failures(), m.LastError())
	}
}

type statsSink struct{ st sink.Stats }

func (s statsSink) Stats() sink.Stats { return s.st }

// TestRunReadOnlyTarget: a target that takes no writes is an operator's fix
// away: replicate retries until it is fixed, migrate gives up after its
// attempts; a refused write whose cause is not known is explained by the
// sink's preflight on a new sink (the database and its setting), once.
func TestRunReadOnlyTarget(t *testing.T) {
	tgt := applytest.New(0)
	const fix = "default_transaction_read_only is on for the database: run ALTER DATABASE \"db\" RESET default_transaction_read_only"
	tgt.PreflightProblems = []sink.Problem{{Kind: sink.ProblemCreateTables, Object: `"public"`, Fix: "GRANT …"},
		{Kind: sink.ProblemReadOnly, Object: `"db"`, Fix: fix}}
	refusal := errors.New("insert into t: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)")
	refused := fmt.Errorf("apply: %w", &sink.ReadOnlyError{Cause: "its sessions are read-only", Err: refusal})
	const want = `target database "db" takes no writes: ` + fix + " (insert into t: cannot execute INSERT in a read-only transaction (SQLSTATE 25006))"

	tr := newTestRelay(t, Config{}, tgt)
	s := &script{tr: tr, errs: repeat(refused, 7)}
	if _, err := tr.run(t.Context(), false, s.session); err != nil || s.calls != 8 {
		t.Fatalf("replicate: %v after %d sessions; want it to retry until the target takes writes", err, s.calls)
	}
	if n := strings.Count(tr.logs.String(), "will retry"); n != 7 || !strings.Contains(tr.logs.String(), strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("replicate retried %d times; want 7 saying %s; log:\n%s", n, want, tr.logs)
	}

	tr = newTestRelay(t, Config{}, tgt)
	s = &script{tr: tr, errs: repeat(refused, 10)}
	_, err := tr.run(t.Context(), true, s.session)
	if err == nil || err.Error() != want+" (gave up after 5 attempts)" || !errors.Is(err, sink.ErrReadOnly) {
		t.Fatalf("migrate: %v; want %s (gave up after 5 attempts)", err, want)
	}

	// Writable again by the time it is asked.
	tr = newTestRelay(t, Config{}, applytest.New(0))
	s = &script{tr: tr, errs: repeat(refused, 10)}
	if _, err = tr.run(t.Context(), true, s.session); err == nil || !strings.Contains(err.Error(), "its sessions were read-only and are not any more") {
		t.Fatalf("migrate, writable again: %v", err)
	}

	// Found by the preflight of a session: said once, first.
	if err := tr.targetProblems(tgt.PreflightProblems); err == nil || err.Error() != `target database "db" takes no writes: `+fix {
		t.Errorf("targetProblems: %v", err)
	}
}
