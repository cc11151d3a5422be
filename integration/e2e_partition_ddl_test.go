package integration

// DDL on a partitioned table after a migration attached the target's
// partitions (PGRELAY_SCHEMA=all): PostgreSQL refuses to add, drop, retype or
// rename a column of an attached partition, so the sink makes each change
// once on the target's partitioned table, which makes it on every partition,
// and takes the other partitions' identical changes as made.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2ESchemaPartitionDDL: a partitioned table of 3 partitions, published
// partition by partition and through its root. Columns are added (with a
// default), dropped, retyped and renamed on the source's partitioned table
// while replicate runs and while pgrelay is stopped, changes reaching one
// partition and not another; the target's partitions stay attached, every
// partition's rows and columns equal the source's, and queries on the
// partitioned table behave the same on both sides.
func TestE2ESchemaPartitionDDL(t *testing.T) {
	for _, via := range []bool{false, true} {
		t.Run(fmt.Sprintf("via_root=%t", via), func(t *testing.T) {
			t.Parallel()
			testE2ESchemaPartitionDDL(t, via)
		})
	}
}

func testE2ESchemaPartitionDDL(t *testing.T, viaRoot bool) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE pd (id int NOT NULL, k int NOT NULL, a int, b text, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
		CREATE TABLE pd_1 PARTITION OF pd FOR VALUES IN (1);
		CREATE TABLE pd_2 PARTITION OF pd FOR VALUES IN (2);
		CREATE TABLE pd_3 PARTITION OF pd FOR VALUES IN (3);
		INSERT INTO pd SELECT i, 1 + i % 3, i * 10, 'b' || i FROM generate_series(1, 30) i;
		CREATE VIEW pd_v AS SELECT id, k, a FROM pd WHERE id % 2 = 0`)
	if viaRoot {
		e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR ALL TABLES WITH (publish_via_partition_root = true)")
	}
	e.mustRun(3*time.Minute, "migrate")
	const attached = `SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'public.pd'::regclass`
	if got := e.tgt.QueryString(t, attached); got != "pd_1,pd_2,pd_3" {
		t.Fatalf("after migrate, the target's partitions of pd: %s", got)
	}

	// While replicate runs: each change reaches pd_1 first, pd_2 not at
	// all until the end.
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, `ALTER TABLE pd ADD COLUMN c int DEFAULT 7;
		INSERT INTO pd (id, k, a, b) VALUES (101, 1, 1, 'x');
		INSERT INTO pd (id, k, a, b, c) VALUES (102, 3, 1, 'y', 8)`)
	e.src.Exec(t, `ALTER TABLE pd DROP COLUMN b;
		UPDATE pd SET a = a + 1 WHERE id = 101;
		INSERT INTO pd (id, k, a) VALUES (103, 3, 2)`)
	e.src.Exec(t, `DROP VIEW pd_v; ALTER TABLE pd ALTER COLUMN a TYPE bigint; CREATE VIEW pd_v AS SELECT id, k, a FROM pd WHERE id % 2 = 0;
		INSERT INTO pd (id, k, a) VALUES (104, 1, 5000000000)`)
	e.src.Exec(t, `UPDATE pd SET c = 9 WHERE id = 3; DELETE FROM pd WHERE id = 6`) // pd_1 (3 % 3 = 0), then pd_1
	if !viaRoot {
		// pd_2's own replica identity: its primary key on the target is
		// the partitioned table's, and stays.
		e.src.Exec(t, `ALTER TABLE pd_2 REPLICA IDENTITY FULL`)
	}
	e.src.Exec(t, `INSERT INTO pd (id, k, a) VALUES (105, 3, 6000000000); UPDATE pd SET a = -1 WHERE k = 2 AND id < 10`)
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}

	// While pgrelay is stopped: two changes in a row before any partition's
	// next row, a rename among them.
	e.src.Exec(t, `ALTER TABLE pd ADD COLUMN d text NOT NULL DEFAULT 'dd';
		ALTER TABLE pd RENAME COLUMN a TO a2;
		INSERT INTO pd (id, k, a2) VALUES (201, 2, 7)`)
	e.src.Exec(t, `ALTER TABLE pd ALTER COLUMN c TYPE numeric(10,2), DROP COLUMN d;
		INSERT INTO pd (id, k, a2, c) VALUES (202, 1, 8, 1.5), (203, 3, 9, 2.25)`)
	out := strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n")
	if !strings.Contains(out, "caught up") {
		t.Errorf("migrate printed %q", out)
	}
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, attached); got != "pd_1,pd_2,pd_3" {
		t.Errorf("at the end, the target's partitions of pd: %s", got)
	}
	e2eSameOutcomes(t, e, []string{
		`SELECT id, k, a2, c FROM public.pd ORDER BY id`,
		`SELECT * FROM public.pd_v ORDER BY id`,
		`SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.pd'::regclass AND attnum > 0 AND NOT attisdropped`,
		`INSERT INTO public.pd (id, k, a2) VALUES (900, 2, 1) RETURNING id, k, a2, c, tableoid::regclass`,
	})
	if viaRoot {
		return // a detached partition changes what the publication publishes of pd
	}
	e.tgt.Exec(t, "DELETE FROM public.pd WHERE id = 900") // the source's comes through the stream

	// A partition detached on the source and changed on its own is
	// detached on the target too; the partitioned table's next change
	// reaches the others only.
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, `ALTER TABLE pd DETACH PARTITION pd_3;
		ALTER TABLE pd_3 ADD COLUMN only3 text DEFAULT 'o', DROP COLUMN c;
		INSERT INTO pd_3 (id, k, a2) VALUES (301, 3, 1)`)
	e.src.Exec(t, `ALTER TABLE pd ADD COLUMN e int DEFAULT 5;
		INSERT INTO pd (id, k, a2) VALUES (302, 1, 2)`)
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}
	if got := e.tgt.QueryString(t, attached); got != "pd_1,pd_2" {
		t.Errorf("after pd_3 was detached on the source, the target's partitions of pd: %s", got)
	}
	e2eSameOutcomes(t, e, []string{
		`SELECT id, k, a2, c, e FROM public.pd ORDER BY id`,
		`SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.pd_3'::regclass AND attnum > 0 AND NOT attisdropped`,
	})
}
