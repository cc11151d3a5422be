package integration

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestE2EPartitionRootSwitched: publish_via_partition_root switched on
// publishes a partitioned table through its root, switched off through its
// partitions; the tables copied at the other level stop being filled and keep
// stale rows on the target, next to the new level's. The publication check
// catches the switch both ways, at a start and while replicate runs, with one
// line naming the tables and what to do.
func TestE2EPartitionRootSwitched(t *testing.T) {
	e2eEachMajor(t, testE2EPartitionRootSwitched)
}

func testE2EPartitionRootSwitched(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, `CREATE TABLE pv_parts (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
		CREATE TABLE pv_low PARTITION OF pv_parts FOR VALUES FROM (0) TO (100);
		CREATE TABLE pv_high PARTITION OF pv_parts FOR VALUES FROM (100) TO (200);
		INSERT INTO pv_parts SELECT g, 'v' || g FROM generate_series(1, 199) g;
		CREATE TABLE pv_plain (id int PRIMARY KEY); INSERT INTO pv_plain VALUES (1)`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE pv_parts, pv_plain")
	e.mustRun(3*time.Minute, "migrate")
	setRoot := func(on bool) {
		e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET (publish_via_partition_root = "+map[bool]string{true: "true", false: "false"}[on]+")")
	}
	const (
		turnedOn  = "public.pv_high, public.pv_low (copied as tables of their own; now published through their root public.pv_parts, publish_via_partition_root being on: drop their target tables, which would keep stale rows); run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always"
		turnedOff = "public.pv_parts (copied through its root under publish_via_partition_root; now its partitions public.pv_high, public.pv_low are published as tables of their own: drop its target table, which would keep stale rows); run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always"
	)
	refused := func(p *e2eProc, code int, what, want string) {
		t.Helper()
		if code != 1 || !strings.Contains(p.logs(), want) {
			t.Fatalf("%s exited %d, want 1 with %q; log:\n%s", what, code, want, p.logs())
		}
	}
	watched := *e
	watched.extra = append(slices.Clone(e.extra), "PGRELAY_PUBLICATION_CHECK_INTERVAL=1s")
	// replicate streams with the publication as copied, then finds the
	// switch by itself.
	catches := func(on bool, want string) {
		t.Helper()
		p := watched.start("replicate")
		p.waitLog(t, "streaming", 2*time.Minute)
		e2eAwaitPublicationChecks(t, e, p, 2) // checks that find nothing keep it running
		setRoot(on)
		refused(p, p.wait(t, time.Minute), "replicate after the switch", want)
	}

	// Copied through the partitions; switched on: at a start, then while
	// replicate runs.
	setRoot(true)
	p, code := e.run(2*time.Minute, "migrate")
	refused(p, code, "migrate after publish_via_partition_root was turned on", turnedOn)
	// The migration made the partitioned table, its partitions attached
	// (PGRELAY_SCHEMA=all); no table for the root was copied.
	if got := e.tgt.QueryString(t, "SELECT relkind FROM pg_class WHERE oid = to_regclass('public.pv_parts')"); got != "p" {
		t.Errorf("the target's public.pv_parts is of kind %q, not the migration's partitioned table: copied next to its partitions' stale tables", got)
	}
	setRoot(false)
	catches(true, turnedOn)

	// Copied anew through the root (its partitions' tables dropped on the
	// target, as told); switched off: while replicate runs, then at a start.
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	e.tgt.Exec(t, "DROP TABLE public.pv_low, public.pv_high")
	always.mustRun(3*time.Minute, "migrate")
	setRoot(true)
	catches(false, turnedOff)
	p, code = e.run(2*time.Minute, "migrate")
	refused(p, code, "migrate after publish_via_partition_root was turned off", turnedOff)

	// As copied again: changes flow.
	setRoot(true)
	e.src.Exec(t, "INSERT INTO pv_parts VALUES (0, 'zero'); DELETE FROM pv_parts WHERE id = 150; UPDATE pv_parts SET v = 'moved', id = 150 WHERE id = 5")
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
}

// TestE2EPublicationDropped: a publication dropped while replicate runs
// leaves the slot with changes it cannot decode: the source looks the
// publication up as it was at each change, so one created again does not
// help (PostgreSQL 17 and older fail on such a change, 18 skips it with a
// warning). replicate stops with one line saying so and that
// PGRELAY_SNAPSHOT=always copies anew; a later start says the same without
// creating a publication, and does not retry; PGRELAY_SNAPSHOT=always
// recovers.
func TestE2EPublicationDropped(t *testing.T) {
	e2eEachMajor(t, testE2EPublicationDropped)
}

func testE2EPublicationDropped(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, `CREATE TABLE pd (id int PRIMARY KEY, v text); INSERT INTO pd SELECT g, 'v' || g FROM generate_series(1, 100) g`)
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "DROP PUBLICATION "+e.pub)
	e.src.Exec(t, "INSERT INTO pd VALUES (101, 'after the drop')")
	const want = "was dropped or renamed after the slot was made"
	said := func(p *e2eProc, code int, what string) {
		t.Helper()
		var lines []string
		for _, l := range p.errOut.all() {
			if strings.Contains(l, want) {
				lines = append(lines, l)
			}
		}
		if code != 1 || len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "PGRELAY_SNAPSHOT=always") {
			t.Fatalf("%s exited %d, want 1 saying the publication %s and that PGRELAY_SNAPSHOT=always copies anew; log:\n%s", what, code, want, p.logs())
		}
		if _, ok := p.findLog("will retry"); ok {
			t.Errorf("%s retried; log:\n%s", what, p.logs())
		}
	}
	said(p, p.wait(t, 2*time.Minute), "replicate after its publication was dropped")
	p, code := e.run(2*time.Minute, "replicate")
	said(p, code, "a later replicate")
	if _, ok := p.findLog("created publication"); ok {
		t.Errorf("a later replicate created the publication, which cannot help; log:\n%s", p.logs())
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("the source has publication %s after the refused start", e.pub)
	}
	// Created again by hand: the stream still cannot send what was written
	// without it.
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR ALL TABLES")
	p, code = e.run(2*time.Minute, "replicate")
	said(p, code, "replicate with the publication created again")
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	always.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
}
