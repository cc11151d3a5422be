package integration

// status and teardown in front of faults: a frozen server, a slot dropped by
// hand, pgrelay's metadata dropped from the target, another pgrelay still
// streaming; and log lines naming a table whose name needs quotes.

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/migrations"
)

// silentListener accepts connections and never answers: a server that is
// frozen, as the network sees it.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().String()
}

// TestStatusFrozenServer: status, teardown, verify and tail end on a server
// that accepts connections and never answers, with a message that says so:
// by default after connect_timeout 10s, or as the URL's connect_timeout
// says. A server frozen after the session opened (SIGSTOP) ends a statement
// once statement_timeout has passed, which the server cannot enforce.
func TestStatusFrozenServer(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	frozen := silentListener(t)
	with := func(src, tgt string) *e2eEnv {
		x := *e
		x.extra = append(slices.Clone(e.extra), "PGRELAY_SOURCE_URL="+src, "PGRELAY_TARGET_URL="+tgt)
		return &x
	}
	// The source frozen, the default bound.
	x := with("postgres://u:pw@"+frozen+"/db?sslmode=disable", e.tgt.URL())
	p, code := x.run(time.Minute, "status")
	if out := p.logs(); code != 1 || !strings.Contains(out, "source: connection to "+frozen+" got no answer within connect_timeout (10s)") {
		t.Errorf("status with a frozen source: exit %d, want 1 with the connect_timeout; stderr:\n%s", code, out)
	}
	// The target frozen, the URL's bound, for every short-lived command.
	x = with(e.src.URL(), "postgres://u:pw@"+frozen+"/db?sslmode=disable&connect_timeout=2")
	for _, cmd := range []string{"status", "teardown", "verify"} {
		p, code := x.run(time.Minute, cmd)
		if out := p.logs(); code == 0 || !strings.Contains(out, "target: connection to "+frozen+" got no answer within connect_timeout (2s)") {
			t.Errorf("%s with a frozen target: exit %d, want a failure with the connect_timeout; stderr:\n%s", cmd, code, out)
		}
	}
	x = with("postgres://u:pw@"+frozen+"/db?sslmode=disable&connect_timeout=2", e.tgt.URL())
	if p, code := x.run(time.Minute, "tail"); code == 0 || !strings.Contains(p.logs(), "got no answer within connect_timeout (2s)") {
		t.Errorf("tail with a frozen source: exit %d; stderr:\n%s", code, p.logs())
	}

	// A real server, frozen.
	src := harness.Postgres(t, harness.Majors()[0], harness.Dedicated())
	thaw := src.Freeze(t)
	x = with(src.URL()+"&connect_timeout=2", e.tgt.URL())
	if p, code := x.run(time.Minute, "status"); code != 1 || !strings.Contains(p.logs(), "got no answer within connect_timeout (2s)") {
		t.Errorf("status with a source under SIGSTOP: exit %d; stderr:\n%s", code, p.logs())
	}
	thaw()
	// Frozen while a session waits for a statement's reply.
	cfg, err := pgconnstr.ParsePgx(src.URL() + "&statement_timeout=500")
	if err != nil {
		t.Fatal(err)
	}
	ctx := e2eCtx(t, 2*time.Minute)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	thaw = src.Freeze(t)
	_, err = conn.Exec(ctx, "SELECT 1")
	thaw()
	var nr *pgconnstr.NoReplyError
	if !errors.As(err, &nr) || ctx.Err() != nil {
		t.Errorf("a statement on a server frozen after connecting: %v; want a NoReplyError", err)
	}
}

// TestStatusMissingSlotOrMetadata: a slot dropped by hand after the copy,
// and pgrelay's metadata dropped from the target, each make status say what
// happened and what to do; before anything ran, it says what migrate or
// replicate will do.
func TestStatusMissingSlotOrMetadata(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE ms (id int PRIMARY KEY); INSERT INTO ms SELECT generate_series(1, 10)")
	statusText := func() string {
		t.Helper()
		p := e.mustRun(time.Minute, "status")
		return strings.Join(p.out.all(), "\n")
	}
	if out := statusText(); !strings.Contains(out, e.slot+": missing: migrate or replicate creates it, and copies the tables") {
		t.Errorf("status before anything ran:\n%s", out)
	}
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)

	// The metadata dropped: not "stopped before it began".
	e.tgt.Exec(t, "DROP SCHEMA pgrelay CASCADE")
	out := statusText()
	if !strings.Contains(out, "the target holds no pgrelay metadata (schema pgrelay) though the slot exists: it was dropped, or PGRELAY_TARGET_URL names another database") ||
		strings.Contains(out, "stopped before it began") {
		t.Errorf("status with the target's metadata dropped:\n%s", out)
	}
	if st, raw := e.status(t); st.Seeded || st.AppliedLSN != "" {
		t.Errorf("status --json with the target's metadata dropped:\n%s", raw)
	}
	// What status says migrate does, it does.
	e.tgt.Exec(t, "DROP TABLE ms")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)

	// The slot dropped by hand: what replicate would say, before it is run.
	e.src.Exec(t, "SELECT pg_drop_replication_slot($1)", e.slot)
	out = statusText()
	if want := e.slot + ": MISSING, but the target was seeded from it: the changes since cannot be streamed; run pgrelay once with PGRELAY_SNAPSHOT=always"; !strings.Contains(out, want) {
		t.Errorf("status with the slot dropped:\n%s\nwant %q", out, want)
	}
	p, code := e.run(time.Minute, "replicate")
	if code != 1 || !strings.Contains(p.logs(), "PGRELAY_SNAPSHOT=always") {
		t.Errorf("replicate with the slot dropped: exit %d; log:\n%s", code, p.logs())
	}
}

// TestTeardownWhileReplicating: teardown refuses while another pgrelay
// streams from the slot, and says how to find that pgrelay (the client
// pg_stat_replication shows), not only the walsender's pid; status names it
// the same way.
func TestTeardownWhileReplicating(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE tw (id int PRIMARY KEY)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	td, code := e.run(time.Minute, "teardown")
	msg := td.logs()
	for _, want := range []string{`slot "` + e.slot + `" is in use: a client streams from it through walsender pid `,
		`application_name "pgrelay", user "` + e.src.User + `", from 127.0.0.1 port `, "most likely another pgrelay replicate or migrate: stop it first",
		"the process owning local port"} {
		if code != 1 || !strings.Contains(msg, want) {
			t.Errorf("teardown while replicate runs: exit %d, want 1 with %q; stderr:\n%s", code, want, msg)
		}
	}
	sp := e.mustRun(time.Minute, "status")
	if out := strings.Join(sp.out.all(), "\n"); !strings.Contains(out, `streaming to pid `) || !strings.Contains(out, `application_name "pgrelay"`) {
		t.Errorf("status while replicate runs:\n%s", out)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM", code)
	}
	e.mustRun(time.Minute, "teardown")
}

// TestLogQuotesTableNames: a table whose name holds a dot and a comma is
// logged as public."a.b,c", not as public.a.b,c (three names, or two).
func TestLogQuotesTableNames(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE "a.b,c" (id int PRIMARY KEY); INSERT INTO "a.b,c" VALUES (1)`)
	p := e.mustRun(3*time.Minute, "migrate")
	l, ok := p.findLog("table copied")
	if !ok || l.str("table") != `public."a.b,c"` {
		t.Errorf("table copied: %v; log:\n%s", l, p.logs())
	}
}

// migrationsApplied sets pgrelay's metadata up on pg, as a run does before
// it creates its slot.
func migrationsApplied(t *testing.T, pg *harness.PG) {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	conn := e2eConn(t, pg)
	if _, err := migrations.ApplyPostgres(ctx, conn); err != nil {
		t.Fatal(err)
	}
}
