package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// TestE2EReadOnlyTarget: a target made read-only after it was seeded is an
// operator's fix away. replicate finds it at its start (before anything on
// the source) and when a write is refused (SQLSTATE 25006), says which
// database and which setting, with the statement that undoes it, and keeps
// retrying until it is writable again; then it goes on as if nothing
// happened.
func TestE2EReadOnlyTarget(t *testing.T) {
	// A target of the test's own: the server's configuration changes.
	e := e2eNewEnv(t, harness.Postgres(t, harness.Majors()[0]), harness.Postgres(t, e2eTargetMajor, harness.Dedicated()))
	e.src.Exec(t, "CREATE TABLE rot (id int PRIMARY KEY, v text); INSERT INTO rot VALUES (1, 'seeded')")
	e.mustRun(3*time.Minute, "migrate")
	db := pgquote.Ident(e.tgt.DB)
	// retries waits until p has logged n retries whose error says want.
	retries := func(p *e2eProc, n int, want string) {
		t.Helper()
		err := harness.Await(2*time.Minute, 100*time.Millisecond, fmt.Sprintf("%s to retry %d times saying %q", p.name, n, want), func() error {
			got := 0
			for _, l := range p.logLines() {
				if l.str("msg") == "will retry" && strings.Contains(l.str("error"), want) {
					got++
				}
			}
			switch {
			case got >= n:
				return nil
			case p.exited():
				return harness.Abort(fmt.Errorf("it exited %d", p.code()))
			}
			return fmt.Errorf("%d such retries", got)
		})
		if err != nil {
			t.Fatalf("%v; log:\n%s", err, p.logs())
		}
	}

	// Read-only for new sessions: found at the start.
	e.tgt.Exec(t, "ALTER DATABASE "+db+" SET default_transaction_read_only = on")
	e.src.Exec(t, "INSERT INTO rot VALUES (2, 'while read-only')")
	p := e.start("replicate")
	retries(p, 2, "target database "+db+" takes no writes: default_transaction_read_only is on for the database: run ALTER DATABASE "+db+" RESET default_transaction_read_only")
	if _, ok := p.findLog("streaming"); ok {
		t.Fatalf("replicate streamed into a read-only target; log:\n%s", p.logs())
	}
	e.tgt.Exec(t, "SET default_transaction_read_only = off")
	e.tgt.Exec(t, "ALTER DATABASE "+db+" RESET default_transaction_read_only")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, 2*time.Minute)

	// Read-only for every session, the running ones too: a write is
	// refused.
	e.tgt.Exec(t, "ALTER SYSTEM SET default_transaction_read_only = on")
	e.tgt.Exec(t, "SELECT pg_reload_conf()")
	e.src.Exec(t, "INSERT INTO rot VALUES (3, 'refused, then applied')")
	retries(p, 2, "target database "+db+" takes no writes: default_transaction_read_only is on in the server's configuration")
	if l, ok := p.findLog("session ended"); !ok || !strings.Contains(l.str("error"), "SQLSTATE 25006") {
		t.Errorf("no session ended on the refused write; log:\n%s", p.logs())
	}
	// The refusal itself is said with the database and the setting.
	explained := false
	for _, l := range p.logLines() {
		err := l.str("error")
		explained = explained || l.str("msg") == "will retry" && strings.Contains(err, "SQLSTATE 25006") &&
			strings.Contains(err, "target database "+db+" takes no writes: default_transaction_read_only is on in the server's configuration")
	}
	if !explained {
		t.Errorf("the refused write was not said with the database and the setting; log:\n%s", p.logs())
	}
	e.tgt.Exec(t, "ALTER SYSTEM RESET default_transaction_read_only")
	e.tgt.Exec(t, "SELECT pg_reload_conf()")
	e2eSyncCompareStop(t, e, p)
}
