package integration

// End-to-end tests of target and source set-ups a tester found pgrelay
// stumbling on: target database defaults, names pgrelay uses for itself,
// and targets of an older major than the source.

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestE2ETargetXMLOptionDocument: a target database whose default is
// xmloption = document still takes the xml fragments (content) a source
// holds, in the copy and in the stream: pgrelay's target sessions pin
// xmloption = content, as pg_dump does.
func TestE2ETargetXMLOptionDocument(t *testing.T) {
	e2eEachMajor(t, testE2ETargetXMLOptionDocument)
}

func testE2ETargetXMLOptionDocument(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.tgt.Exec(t, "ALTER DATABASE "+pgx.Identifier{e.tgt.DB}.Sanitize()+" SET xmloption = document")
	e.src.Exec(t, `CREATE TABLE xf (id int PRIMARY KEY, x xml, xs xml[]);
		INSERT INTO xf VALUES (1, 'abc<a/>def', ARRAY['t<b/>'::xml, '<c/>']), (2, '<doc/>', NULL);
		CREATE TABLE xfull (x xml, n int);
		ALTER TABLE xfull REPLICA IDENTITY FULL;
		INSERT INTO xfull VALUES ('one<a/>two', 1)`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, `INSERT INTO xf VALUES (3, 'x<c/>y', ARRAY['u<v/>'::xml]);
		UPDATE xf SET x = 'z<d/>' WHERE id = 1;
		UPDATE xfull SET n = 2 WHERE n = 1;
		INSERT INTO xfull VALUES ('frag<d/>', 3)`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if n := e2eCompare(t, e); n != 2 {
		t.Errorf("compared %d tables, want 2", n)
	}
}
