package integration

// Scenarios of PostgreSQL's own logical replication test suite
// (src/test/subscription/t/100_bugs.pl), translated to pgrelay.

import (
	"strings"
	"testing"
	"time"
)

// bugsRows is a table's c1 values in order, comma-separated.
func bugsRows(table string) string {
	return "SELECT coalesce(string_agg(c1::text, ',' ORDER BY c1), '') FROM " + table
}

// TestE2ESchemaRenamedUnderTables: a schema is renamed, and a new schema of
// its old name gets a table of the same name, while replicate runs; then the
// renamed schema's table changes. PostgreSQL before 16 sends no new Relation
// message for that table (a schema rename does not invalidate it), so its
// changes still carry the old name, now the new table's. Each target table
// follows its source table by OID: the two are never merged. In one source
// transaction (also with PGRELAY_KEEP_ORDER=true) and one statement per
// transaction.
func TestE2ESchemaRenamedUnderTables(t *testing.T) {
	steps := []string{"INSERT INTO sch1.t1 VALUES (1)", "INSERT INTO sch1.k VALUES (3, 'c')", "INSERT INTO sch1.tr VALUES (10)",
		"ALTER SCHEMA sch1 RENAME TO sch2",
		"CREATE SCHEMA sch1", "CREATE TABLE sch1.t1 (c1 int)", "INSERT INTO sch1.t1 VALUES (2)", "INSERT INTO sch2.t1 VALUES (3)",
		// Updates, deletes and a truncate of the renamed schema's tables,
		// whose names the new tables hold.
		"CREATE TABLE sch1.k (id int PRIMARY KEY, v text)", "INSERT INTO sch1.k VALUES (1, 'new1'), (2, 'new2')",
		"UPDATE sch2.k SET v = 'a2' WHERE id = 1", "DELETE FROM sch2.k WHERE id = 2",
		"CREATE TABLE sch1.tr (c1 int)", "INSERT INTO sch1.tr VALUES (8)", "TRUNCATE sch2.tr"}
	cases := []struct {
		name, keepOrder string
		txns            []string
	}{
		{"one transaction", "", []string{"BEGIN; " + strings.Join(steps, "; ") + "; COMMIT"}},
		{"one transaction, keep order", "true", []string{"BEGIN; " + strings.Join(steps, "; ") + "; COMMIT"}},
		{"one transaction per statement", "", steps},
	}
	e2eEachMajor(t, func(t *testing.T, major int) {
		for _, tc := range cases {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				e := e2ePair(t, major)
				if tc.keepOrder != "" {
					e.extra = append(e.extra, "PGRELAY_KEEP_ORDER="+tc.keepOrder)
				}
				e.src.Exec(t, `CREATE SCHEMA sch1; CREATE TABLE sch1.t1 (c1 int);
					CREATE TABLE sch1.k (id int PRIMARY KEY, v text); INSERT INTO sch1.k VALUES (1, 'a'), (2, 'b');
					CREATE TABLE sch1.tr (c1 int); INSERT INTO sch1.tr VALUES (9)`)
				p := e.start("replicate")
				e2eSync(t, e, p, 2*time.Minute)
				for _, sql := range tc.txns {
					e.src.Exec(t, sql)
				}
				e2eSync(t, e, p, 2*time.Minute)
				for table, want := range map[string]string{"sch1.t1": "2", "sch2.t1": "1,3", "sch1.tr": "8", "sch2.tr": "",
					"sch1.k": "1 new1,2 new2", "sch2.k": "1 a2,3 c"} {
					q := bugsRows(table)
					if strings.HasSuffix(table, ".k") {
						q = renameRows(table)
					}
					if got := e.tgt.QueryString(t, q); got != want {
						t.Errorf("target %s holds {%s}, want {%s} as on the source", table, got, want)
					}
				}
				e2eCompare(t, e)
				// A new session finds each table by its OID again.
				e.src.Exec(t, "INSERT INTO sch2.t1 VALUES (4); INSERT INTO sch1.t1 VALUES (5)")
				e2eSyncCompareStop(t, e, p)
				p = e.start("replicate")
				e.src.Exec(t, "INSERT INTO sch2.t1 VALUES (6); INSERT INTO sch1.t1 VALUES (7)")
				e2eSyncCompareStop(t, e, p)
			})
		}
	})
}
