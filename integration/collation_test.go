package integration

import (
	"testing"
	"time"
)

// TestE2EFullIdentityNondeterministicCollation: under REPLICA IDENTITY FULL,
// rows whose text values are equal under a nondeterministic ICU collation
// but differ in bytes (U+00E4 and U+0061 U+0308: ä precomposed and
// decomposed) are told apart: the row the source changed, byte for byte, is
// the one changed on the target. PostgreSQL's own apply compares them under
// the column's collation and takes either. A column of the collation, of a
// domain of it (created on the target with it), an array of it and a varchar
// of it; updates and deletes, each of the pair's two rows first in the table.
func TestE2EFullIdentityNondeterministicCollation(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		e := e2ePair(t, major)
		const collation = `CREATE COLLATION nd (provider = icu, locale = 'und', deterministic = false)`
		e.tgt.Exec(t, collation)
		e.src.Exec(t, collation+`;
			CREATE DOMAIN ndtext AS text COLLATE nd;
			CREATE TABLE fc (v text COLLATE nd, n int);
			CREATE TABLE fd (v ndtext, n int);
			CREATE TABLE fa (v text[] COLLATE nd, n int);
			CREATE TABLE fv (v varchar(10) COLLATE nd, n int)`)
		tables := []string{"fc", "fd", "fa", "fv"}
		pre, de := `U&'\00E4bc'`, `U&'\0061\0308bc'`
		// value is a value of table tb's column.
		value := func(tb, v string) string {
			if tb == "fa" {
				return "ARRAY[" + v + "]"
			}
			return v
		}
		for _, tb := range tables {
			v1, v2 := value(tb, pre), value(tb, de)
			e.src.Exec(t, "ALTER TABLE "+tb+" REPLICA IDENTITY FULL; INSERT INTO "+tb+" VALUES ("+
				v1+", 1), ("+v2+", 1), ("+v2+", 2), ("+v1+", 2), ("+v2+", 3), ("+v1+", 3), ("+v1+", 4), ("+v2+", 4)")
		}
		if got := e.src.QueryString(t, "SELECT count(DISTINCT v) FROM fc"); got != "1" {
			t.Fatalf("the source's collation nd tells %s values apart, want them equal", got)
		}
		e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
		const domainCollation = "SELECT coalesce(collname, '-') FROM pg_type LEFT JOIN pg_collation c ON c.oid = typcollation WHERE typname = 'ndtext'"
		if got := e.tgt.QueryString(t, domainCollation); got != "nd" {
			t.Errorf("the target's domain ndtext has collation %s, want nd as on the source", got)
		}
		p := e.start("replicate")
		e2eSync(t, e, p, 2*time.Minute)
		for _, tb := range tables {
			// The decomposed row of pairs 1 and 3 is updated, the
			// precomposed one of pairs 2 and 4 deleted.
			e.src.Exec(t, "UPDATE "+tb+` SET n = n * 10 WHERE n IN (1, 3) AND v::text COLLATE "C" = `+value(tb, de)+`::text;
				DELETE FROM `+tb+` WHERE n IN (2, 4) AND v::text COLLATE "C" = `+value(tb, pre)+`::text`)
		}
		e2eSyncCompareStop(t, e, p)
	})
}
