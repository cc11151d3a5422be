package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2EConfirmWhenCaughtUp: once pgrelay has applied what it received and
// the stream is quiet, the source learns the durable position at once, not
// with the next periodic status update: with the interval at an hour and a
// walsender that never asks for a reply (wal_sender_timeout = 0), only that
// prompt update can move the slot past the last applied transaction.
func TestE2EConfirmWhenCaughtUp(t *testing.T) { e2eEachMajor(t, testE2EConfirmWhenCaughtUp) }

func testE2EConfirmWhenCaughtUp(t *testing.T, major int) {
	src := harness.Postgres(t, major, harness.WithSetting("wal_sender_timeout", "0"))
	e := e2eNewEnv(t, src, harness.Postgres(t, e2eTargetMajor))
	e.extra = append(e.extra, "PGRELAY_STATUS_INTERVAL=1h")
	src.Exec(t, "CREATE TABLE quiet (id int PRIMARY KEY, v text)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	for round := range 3 {
		src.Exec(t, "INSERT INTO quiet SELECT g, 'x' FROM generate_series($1::int * 1000 + 1, $1::int * 1000 + 1000) g", round)
		e2eWaitTarget(t, e, p, time.Minute, "the round's rows", "SELECT count(*) = ($1::int + 1) * 1000 FROM public.quiet", round)
		stored := e2eLSN(t, "pgrelay.progress", e.tgt.QueryString(t, "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", e.slot))
		err := harness.Await(time.Minute, 50*time.Millisecond, fmt.Sprintf("round %d: the slot to confirm the target's %s", round, stored), func() error {
			confirmed := e2eConfirmed(t, e)
			if confirmed > stored {
				// The target may have stored a later position since (an idle
				// store); never past what it holds now.
				if now := e2eLSN(t, "pgrelay.progress", e.tgt.QueryString(t, "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", e.slot)); confirmed > now {
					t.Fatalf("round %d: the slot confirmed %s past the target's %s (feedback before durability)", round, confirmed, now)
				}
			}
			if confirmed < stored {
				return fmt.Errorf("the slot confirmed %s", confirmed)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%v: the durable position was not reported once the stream went quiet; log:\n%s", err, p.logs())
		}
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}
