package integration

// Memory: a transaction of a million rows, streamed by a source with
// logical_decoding_work_mem = 64kB, passes through pgrelay in bounded memory
// (invariant 5).

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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
	peak := e2eWatchPeakRSS(p)
	p.waitLog(t, "streaming", 2*time.Minute)

	start := time.Now()
	e.src.Exec(t, "INSERT INTO narrow SELECT i, i % 97 FROM generate_series(1, 1000000) i")
	e2eSync(t, e, p, 8*time.Minute)
	took := time.Since(start)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	// The rusage of the child overstates: Linux carries the parent's peak over
	// exec (os/exec forks with CLONE_VM|CLONE_VFORK), so with a large test
	// binary ru_maxrss is the test binary's. VmHWM is the peak of pgrelay's own
	// address space.
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no rusage for the pgrelay process")
	}
	hwm := peak.Load()
	t.Logf("1M-row transaction replicated in %v; pgrelay peak RSS (VmHWM) %d KiB; ru_maxrss %d KiB", took.Round(time.Millisecond), hwm, ru.Maxrss)
	if hwm == 0 {
		t.Fatalf("could not read VmHWM of pgrelay from /proc")
	}
	if hwm >= e2eMaxRSSKiB {
		t.Errorf("pgrelay peak RSS %d KiB, want < %d KiB", hwm, e2eMaxRSSKiB)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.narrow"); got != "1000000" {
		t.Errorf("target holds %s rows, want 1000000", got)
	}
	if got := e.tgt.QueryString(t, "SELECT sum(v) FROM public.narrow"); got != e.src.QueryString(t, "SELECT sum(v) FROM public.narrow") {
		t.Errorf("target sum(v) %s differs from the source's", got)
	}
	e2eCompare(t, e)
}

// e2eWatchPeakRSS samples the VmHWM (peak resident set, KiB) of a running
// process every 20ms until it exits; the value only grows.
func e2eWatchPeakRSS(p *e2eProc) *atomic.Int64 {
	var peak atomic.Int64
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	go func() {
		for !p.exited() {
			if kib := e2eReadHWM(path); kib > peak.Load() {
				peak.Store(kib)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return &peak
}

func e2eReadHWM(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}

// TestMemoryBigTransactionMariaDB: the same transaction into a MariaDB
// target (issue 29: peak RSS under 256 MB for a 1M-row transaction). The
// MySQL sink queues a table's changes and sends multi-row INSERTs under
// max_allowed_packet; none of it may grow with the transaction.
func TestMemoryBigTransactionMariaDB(t *testing.T) {
	e2eEachMajor(t, testMemoryBigTransactionMariaDB)
}

func testMemoryBigTransactionMariaDB(t *testing.T, major int) {
	e := myE2EPair(t, major)
	if got := e.src.QueryString(t, "SHOW logical_decoding_work_mem"); got != "64kB" {
		t.Fatalf("source logical_decoding_work_mem = %s, want 64kB", got)
	}
	e.src.Exec(t, "CREATE TABLE narrow (id int PRIMARY KEY, v int NOT NULL)")
	p := e.start("replicate")
	peak := e2eWatchPeakRSS(p)
	p.waitLog(t, "streaming", 2*time.Minute)

	start := time.Now()
	e.src.Exec(t, "INSERT INTO narrow SELECT i, i % 97 FROM generate_series(1, 1000000) i")
	e.sync(t, p, 8*time.Minute)
	took := time.Since(start)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	hwm := peak.Load()
	t.Logf("1M-row transaction replicated into MariaDB in %v; pgrelay peak RSS (VmHWM) %d KiB", took.Round(time.Millisecond), hwm)
	if hwm == 0 {
		t.Fatalf("could not read VmHWM of pgrelay from /proc")
	}
	if hwm >= e2eMaxRSSKiB {
		t.Errorf("pgrelay peak RSS %d KiB, want < %d KiB", hwm, e2eMaxRSSKiB)
	}
	if got := e.query(t, "SELECT COUNT(*) FROM narrow"); got != "1000000" {
		t.Errorf("target holds %s rows, want 1000000", got)
	}
	if got, want := e.query(t, "SELECT SUM(v) FROM narrow"), e.src.QueryString(t, "SELECT sum(v) FROM public.narrow"); got != want {
		t.Errorf("target SUM(v) %s, source %s", got, want)
	}
}
