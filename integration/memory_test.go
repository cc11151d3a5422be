package integration

// Memory: a transaction of a million rows, streamed by a source with
// logical_decoding_work_mem = 64kB, passes through pgrelay in bounded memory
// (invariant 5).

import (
	"syscall"
	"testing"
	"time"
)

// e2eMaxRSSKiB is the bound on pgrelay's peak resident set size.
const e2eMaxRSSKiB = 256 << 10

func TestMemoryBigTransaction(t *testing.T) {
	e2eEachMajor(t, testMemoryBigTransaction)
}

func testMemoryBigTransaction(t *testing.T, major int) {
	e := e2ePair(t, major)
	if got := e.src.QueryString(t, "SHOW logical_decoding_work_mem"); got != "64kB" {
		t.Fatalf("source logical_decoding_work_mem = %s, want 64kB", got)
	}
	e.src.Exec(t, "CREATE TABLE narrow (id int PRIMARY KEY, v int NOT NULL)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)

	start := time.Now()
	e.src.Exec(t, "INSERT INTO narrow SELECT i, i % 97 FROM generate_series(1, 1000000) i")
	e2eSync(t, e, p, 8*time.Minute)
	took := time.Since(start)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no rusage for the pgrelay process")
	}
	t.Logf("1M-row transaction replicated in %v; pgrelay peak RSS %d MiB", took.Round(time.Millisecond), ru.Maxrss>>10)
	if ru.Maxrss >= e2eMaxRSSKiB {
		t.Errorf("pgrelay peak RSS %d KiB, want < %d KiB", ru.Maxrss, e2eMaxRSSKiB)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.narrow"); got != "1000000" {
		t.Errorf("target holds %s rows, want 1000000", got)
	}
	if got := e.tgt.QueryString(t, "SELECT sum(v) FROM public.narrow"); got != e.src.QueryString(t, "SELECT sum(v) FROM public.narrow") {
		t.Errorf("target sum(v) %s differs from the source's", got)
	}
	e2eCompare(t, e)
}
