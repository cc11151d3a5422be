package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2ESlotSnapshotXminAboveXmax: the snapshot a logical slot exports can
// read with xmin above xmax ("905:902:"): snapbuild.c moves xmin up to the
// oldest running transaction with every xl_running_xacts record, xmax only
// past a transaction it saw commit. pgrelay refused such a snapshot, and
// slot creation under writes failed for good about one start in four.
//
// First the phases of a slot's creation are driven so that it ends so: a
// transaction L holds the slot in its first phase, a few transactions abort,
// M holds it in the second, N starts after that and is still running when it
// becomes consistent. Then slots are created again and again (a copy anew
// each time) under a continuous writer whose transactions commit and abort.
// Every migrate must succeed, and the target end equal to the source:
// exactly the transactions the copy saw are skipped in the stream.
func TestE2ESlotSnapshotXminAboveXmax(t *testing.T) {
	e2eEachMajor(t, testE2ESlotSnapshotXminAboveXmax)
}

func testE2ESlotSnapshotXminAboveXmax(t *testing.T, major int) {
	// A server of the test's own, without autovacuum: another transaction
	// that takes an id (another test's, an ANALYZE) moves the phases.
	src := harness.Postgres(t, major, harness.WithSetting("autovacuum", "off"))
	e := e2eNewEnv(t, src, harness.Postgres(t, e2eTargetMajor))
	e.extra = append(e.extra, "PGRELAY_LOG_LEVEL=debug")
	e.src.Exec(t, e2eChurnSchema(3000)+`;
		CREATE TABLE ss_marks (id int PRIMARY KEY, who text NOT NULL)`)
	ctx := e2eCtx(t, 10*time.Minute)

	// begin opens a transaction holding an id on a connection of its own.
	begin := func(who string, id int) (*pgx.Conn, string) {
		conn := e.src.Conn(t)
		var xid string
		e2eExec(t, ctx, conn, "BEGIN")
		if err := conn.QueryRow(ctx, "INSERT INTO ss_marks VALUES ($1, $2) RETURNING pg_catalog.txid_current()::text", id, who).Scan(&xid); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		return conn, xid
	}
	// awaitWaitOn waits until a process (the walsender creating the slot)
	// waits for transaction xid to end.
	awaitWaitOn := func(p *e2eProc, xid string) {
		t.Helper()
		err := harness.Await(20*time.Second, 20*time.Millisecond, "the slot's creation to wait for transaction "+xid, func() error {
			if e.src.QueryString(t, `SELECT EXISTS (SELECT FROM pg_catalog.pg_locks
				WHERE locktype = 'transactionid' AND NOT granted AND transactionid::text = $1)`, xid) == "t" {
				return nil
			}
			if p.exited() {
				return harness.Abort(fmt.Errorf("%s exited (%v)", p.name, p.err))
			}
			return errors.New("nothing waits for it")
		})
		if err != nil {
			t.Fatalf("%v; locks %s; activity %s; log:\n%s", err,
				e.src.QueryString(t, "SELECT string_agg(locktype || ' ' || coalesce(transactionid::text, '') || ' ' || mode || ' ' || granted || ' ' || pid, '; ') FROM pg_locks"),
				e.src.QueryString(t, "SELECT string_agg(pid || ' ' || backend_type || ' ' || coalesce(wait_event_type, '') || ' ' || coalesce(wait_event, '') || ' ' || coalesce(query, ''), '; ') FROM pg_stat_activity"),
				p.logs())
		}
	}

	l, lxid := begin("L", 1)
	p := e.start("migrate")
	awaitWaitOn(p, lxid)
	for i := range 3 {
		aborted, _ := begin("aborted", 100+i)
		e2eExec(t, ctx, aborted, "ROLLBACK")
	}
	m, mxid := begin("M", 2)
	e2eExec(t, ctx, l, "COMMIT")
	awaitWaitOn(p, mxid)
	n, _ := begin("N", 3)
	e2eExec(t, ctx, m, "ROLLBACK")
	p.waitLog(t, "created slot", 2*time.Minute)
	e2eExec(t, ctx, n, "COMMIT")
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("migrate exited %d, want 0; log:\n%s", code, p.logs())
	}
	if xmin, xmax := e2eCopySnapshot(t, p); xmin <= xmax {
		t.Fatalf("the copy's snapshot was %d:%d:…, want xmin above xmax: the scenario no longer makes it so", xmin, xmax)
	}
	if got := e.tgt.QueryString(t, "SELECT string_agg(who, ',' ORDER BY id) FROM public.ss_marks"); got != "L,N" {
		t.Errorf("target ss_marks holds %q, want L,N (L in the copy, N from the stream)", got)
	}
	e2eCompare(t, e)

	// Slots made again and again under writes that commit and abort.
	w := e2eStartWriter(t, e.src, e2eRand(t), 3001)
	aborter := e2eStartAborter(t, e.src)
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	odd := 0
	const starts = 4
	for range starts {
		p := always.mustRun(3*time.Minute, "migrate")
		if xmin, xmax := e2eCopySnapshot(t, p); xmin > xmax {
			odd++
		}
	}
	ops, aborts := w.stop(t), aborter.stop(t)
	t.Logf("%d of %d slots exported a snapshot with xmin above xmax; %d writer transactions committed, %d aborted", odd, starts, ops, aborts)
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
}

// e2eCopySnapshot is the xmin and xmax of the copy's snapshot as the source
// printed it (txid_current_snapshot() under it), from migrate's debug log.
func e2eCopySnapshot(t testing.TB, p *e2eProc) (xmin, xmax uint64) {
	t.Helper()
	l, ok := p.findLog("the copy's snapshot")
	if !ok {
		t.Fatalf("%s logged no copy snapshot; log:\n%s", p.name, p.logs())
	}
	text := l.str("txid_snapshot")
	parts := strings.Split(text, ":")
	var err1, err2 error
	if len(parts) == 3 {
		xmin, err1 = strconv.ParseUint(parts[0], 10, 64)
		xmax, err2 = strconv.ParseUint(parts[1], 10, 64)
	}
	if len(parts) != 3 || err1 != nil || err2 != nil {
		t.Fatalf("the copy's snapshot %q is not xmin:xmax:xip", text)
	}
	return xmin, xmax
}

// e2eAborter rolls back transactions that took an id, one after the other,
// until stopped: ids that end without a commit, which a slot being created
// does not track.
type e2eAborter struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	err    error
	n      int
}

func e2eStartAborter(t testing.TB, pg *harness.PG) *e2eAborter {
	t.Helper()
	conn := pg.Conn(t)
	a := &e2eAborter{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-a.stopCh:
				return
			default:
			}
			tx, err := conn.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, "INSERT INTO ss_marks VALUES ($1, 'aborted')", -1-i)
				if rerr := tx.Rollback(ctx); err == nil {
					err = rerr
				}
			}
			a.mu.Lock()
			if err != nil {
				a.err = fmt.Errorf("aborter: %w", err)
				a.mu.Unlock()
				return
			}
			a.n++
			a.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { a.halt() })
	return a
}

func (a *e2eAborter) halt() {
	select {
	case <-a.stopCh:
	default:
		close(a.stopCh)
	}
	<-a.done
}

// stop ends the aborter and returns how many transactions it rolled back.
func (a *e2eAborter) stop(t testing.TB) int {
	t.Helper()
	a.halt()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.n
}
