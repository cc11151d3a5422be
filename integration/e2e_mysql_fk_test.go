package integration

// End-to-end tests of foreign keys on a MariaDB target through the binary:
// made at the end of migrate where MySQL can hold them, enforced for the
// application's sessions but never for pgrelay's, and kept through the
// source's column changes (dropped before one and made again after it, also
// across a stop between the two).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// myFKSchema has foreign keys of every kind a MySQL target meets: with
// actions, deferrable, on a varchar key, two of one name in two tables (and
// two whose names then grow past 64 characters); two MySQL cannot hold (a text column that maps to
// LONGTEXT, a bigint referencing an int); and objects MySQL never holds.
const myFKSchema = `
CREATE TABLE parent (id int PRIMARY KEY, name text);
INSERT INTO parent SELECT i, 'p' || i FROM generate_series(1, 50) i;
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id) ON DELETE CASCADE, note varchar(40));
INSERT INTO child SELECT i, i % 50 + 1, 'c' || i FROM generate_series(1, 100) i;
CREATE TABLE item (id int PRIMARY KEY, child_id int NOT NULL,
	CONSTRAINT item_child_fk FOREIGN KEY (child_id) REFERENCES child (id) DEFERRABLE INITIALLY DEFERRED);
INSERT INTO item SELECT i, i % 10 + 1 FROM generate_series(1, 30) i;
CREATE TABLE tagged (code varchar(20) PRIMARY KEY, n int NOT NULL);
INSERT INTO tagged VALUES ('red', 1), ('green', 2), ('blue', 3);
CREATE TABLE tagref (id int PRIMARY KEY, code varchar(20) REFERENCES tagged (code) ON UPDATE CASCADE);
INSERT INTO tagref VALUES (1, 'red'), (2, 'blue'), (3, NULL);
CREATE TABLE other (id int PRIMARY KEY);
INSERT INTO other SELECT generate_series(1, 5);
CREATE TABLE a1 (id int PRIMARY KEY, pid int CONSTRAINT fk_same REFERENCES other (id));
CREATE TABLE a2 (id int PRIMARY KEY, pid int CONSTRAINT fk_same REFERENCES other (id));
CREATE TABLE long_table_name_number_one_of_two (id int PRIMARY KEY, pid int CONSTRAINT fk_a_shared_name_long_enough_to_cut REFERENCES other (id));
CREATE TABLE long_table_name_number_two_of_two (id int PRIMARY KEY, pid int CONSTRAINT fk_a_shared_name_long_enough_to_cut REFERENCES other (id));
INSERT INTO a1 VALUES (1, 1); INSERT INTO a2 VALUES (1, 2); INSERT INTO long_table_name_number_one_of_two VALUES (1, 3);
CREATE TABLE textkey (code text PRIMARY KEY);
CREATE TABLE textref (id int PRIMARY KEY, code text REFERENCES textkey (code));
CREATE TABLE bigref (id int PRIMARY KEY, pid bigint REFERENCES parent (id));
CREATE TABLE serialt (id serial PRIMARY KEY, v text);
INSERT INTO serialt (v) VALUES ('a'), ('b');
CREATE SEQUENCE lonely;
CREATE VIEW child_names AS SELECT c.id, p.name FROM child c JOIN parent p ON p.id = c.parent_id;
CREATE MATERIALIZED VIEW child_count AS SELECT count(*) AS n FROM child;
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.note := coalesce(NEW.note, 'touched'); RETURN NEW; END$$;
CREATE TRIGGER child_touch BEFORE INSERT ON child FOR EACH ROW EXECUTE FUNCTION touch();
`

// foreignKeys are the foreign keys of the target's database, by name, as
// information_schema shows them.
func (e *myE2E) foreignKeys(t testing.TB) map[string]string {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	rows, err := e.db.QueryContext(ctx, `SELECT k.CONSTRAINT_NAME, CONCAT(k.TABLE_NAME, '(', GROUP_CONCAT(k.COLUMN_NAME ORDER BY k.ORDINAL_POSITION), ')->',
			k.REFERENCED_TABLE_NAME, '(', GROUP_CONCAT(k.REFERENCED_COLUMN_NAME ORDER BY k.ORDINAL_POSITION), ') ON DELETE ', MIN(r.DELETE_RULE), ' ON UPDATE ', MIN(r.UPDATE_RULE))
		FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.REFERENTIAL_CONSTRAINTS r
			ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME
		WHERE k.TABLE_SCHEMA = DATABASE() AND r.CONSTRAINT_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL
		GROUP BY k.CONSTRAINT_NAME, k.TABLE_NAME, k.REFERENCED_TABLE_NAME`)
	if err != nil {
		t.Fatalf("foreign keys of the target: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		out[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// appTarget runs stmts in one transaction of an application's session on
// the target (foreign key checks on), rolled back: the error of the first
// that fails, and the last's single value.
func (e *myE2E) appTarget(t testing.TB, stmts ...string) (string, error) {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // rolled back on purpose
	var v sql.NullString
	for i, stmt := range stmts {
		if i == len(stmts)-1 && strings.HasPrefix(stmt, "SELECT") {
			err = tx.QueryRowContext(ctx, stmt).Scan(&v)
		} else {
			_, err = tx.ExecContext(ctx, stmt)
		}
		if err != nil {
			return "", err
		}
	}
	return v.String, nil
}

// appSource does what appTarget does on the source.
func (e *myE2E) appSource(t testing.TB, stmts ...string) (string, error) {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	conn := e.src.Conn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rolled back on purpose
	var v *string
	for i, stmt := range stmts {
		if i == len(stmts)-1 && strings.HasPrefix(stmt, "SELECT") {
			err = tx.QueryRow(ctx, stmt).Scan(&v)
		} else {
			_, err = tx.Exec(ctx, stmt)
		}
		if err != nil {
			return "", err
		}
	}
	if _, err := tx.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		return "", err
	}
	if v == nil {
		return "", nil
	}
	return *v, nil
}

// fkViolation reports whether err is a foreign key's refusal, on either side.
func fkViolation(err error) bool {
	var me *gomysql.MySQLError
	var pe *pgconn.PgError
	return errors.As(err, &me) && (me.Number == 1452 || me.Number == 1451) || errors.As(err, &pe) && pe.Code == "23503"
}

// TestE2EMySQLForeignKeys: migrate makes the foreign keys MySQL can hold
// (named for MySQL, reported with how MySQL checks them otherwise) and lists
// what it cannot; the target is ready to switch to, listing what to port.
// The application's sessions on the target are refused a row that breaks a
// key and take one that keeps it, as on the source, and ON DELETE CASCADE
// works there; replicate keeps applying with the keys in place: a parent's
// delete cascaded on the source (its children's deletes follow in the
// stream), a delete of a parent before its children, rows that keep a
// deferred key only at commit.
func TestE2EMySQLForeignKeys(t *testing.T) {
	e2eEachMajor(t, testE2EMySQLForeignKeys)
}

func testE2EMySQLForeignKeys(t *testing.T, major int) {
	e := myE2EPair(t, major)
	e.src.Exec(t, myFKSchema)
	p := e.mustRun(3*time.Minute, "migrate")
	report := strings.Join(p.out.all(), "\n")
	for _, want := range []string{
		"note: foreign key item_child_fk on public.item: DEFERRABLE on the source: MySQL checks a foreign key at each row, never at commit",
		"note: foreign key fk_same on public.a1: named a1_fk_same on MySQL",
		"note: foreign key fk_same on public.a2: named a2_fk_same on MySQL",
		"note: foreign key fk_a_shared_name_long_enough_to_cut on public.long_table_name_number_one_of_two: named long_table_name_number_one_of_two_fk_a_shared_name_long_",
		"note: foreign key fk_a_shared_name_long_enough_to_cut on public.long_table_name_number_two_of_two: named long_table_name_number_two_of_two_fk_a_shared_name_long_",
		"not carried: foreign key textref_code_fkey on public.textref: not carried to MySQL: column " + e.my.DB + ".textref.code is LONGTEXT on MySQL",
		"not carried: foreign key bigref_pid_fkey on public.bigref: not carried to MySQL: column " + e.my.DB + ".bigref.pid is BIGINT(20) on MySQL and the column it references, " + e.my.DB + ".parent.id, INT(11)",
		"not carried: view public.child_names: not carried to MySQL",
		"not carried: materialized view public.child_count: not carried to MySQL",
		"not carried: function public.touch(): not carried to MySQL",
		"not carried: trigger child_touch on public.child: not carried to MySQL",
		"not carried: sequence public.lonely: not carried to MySQL",
		"ready to switch: yes (",
		"schema objects are not carried (listed): port those the application needs yourself",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("migrate's report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "left out:") || strings.Contains(report, "sequence public.serialt_id_seq") {
		t.Errorf("migrate's report lists something left out, or the serial's sequence (an AUTO_INCREMENT):\n%s", report)
	}
	fks := e.foreignKeys(t)
	var short []string
	for name := range fks {
		if strings.HasPrefix(name, "long_table_name_number_") {
			short = append(short, name)
		}
	}
	slices.Sort(short)
	if len(short) != 2 || len(short[0]) != 64 || len(short[1]) != 64 {
		t.Fatalf("the target's foreign keys: %q, want two named past 64 characters, cut to 64", fks)
	}
	want := map[string]string{
		"child_parent_id_fkey": "child(parent_id)->parent(id) ON DELETE CASCADE ON UPDATE NO ACTION",
		"item_child_fk":        "item(child_id)->child(id) ON DELETE NO ACTION ON UPDATE NO ACTION",
		"tagref_code_fkey":     "tagref(code)->tagged(code) ON DELETE NO ACTION ON UPDATE CASCADE",
		"a1_fk_same":           "a1(pid)->other(id) ON DELETE NO ACTION ON UPDATE NO ACTION",
		"a2_fk_same":           "a2(pid)->other(id) ON DELETE NO ACTION ON UPDATE NO ACTION",
		short[0]:               "long_table_name_number_one_of_two(pid)->other(id) ON DELETE NO ACTION ON UPDATE NO ACTION",
		short[1]:               "long_table_name_number_two_of_two(pid)->other(id) ON DELETE NO ACTION ON UPDATE NO ACTION",
	}
	if len(fks) != len(want) {
		t.Errorf("the target's foreign keys: %q, want %d of them", fks, len(want))
	}
	for name, def := range want {
		if fks[name] != def {
			t.Errorf("foreign key %s on the target: %q, want %q", name, fks[name], def)
		}
	}
	// Made without a table copy, each with its index.
	if got := e.query(t, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'child' AND INDEX_NAME = 'child_parent_id_fkey' AND COLUMN_NAME = 'parent_id'"); got != "1" {
		t.Errorf("child has %s indexes named after its foreign key on parent_id, want 1", got)
	}

	// The application's statements behave on the target as on the source.
	for _, c := range []struct {
		what    string
		stmts   []string
		refused bool
		value   string
	}{
		{"a child of no parent", []string{"INSERT INTO child (id, parent_id, note) VALUES (1000, 12345, 'orphan')"}, true, ""},
		{"a child of a parent", []string{"INSERT INTO child (id, parent_id, note) VALUES (1000, 7, 'ok')", "SELECT COUNT(*) FROM child WHERE parent_id = 7"}, false, "3"},
		{"a tag of no tag", []string{"INSERT INTO tagref VALUES (10, 'mauve')"}, true, ""},
		{"deleting a parent cascades", []string{"DELETE FROM parent WHERE id = 40", "SELECT COUNT(*) FROM child WHERE parent_id = 40"}, false, "0"},
		{"deleting a child an item references", []string{"DELETE FROM child WHERE id = 3"}, true, ""},
		{"a tag's new code cascades", []string{"UPDATE tagged SET code = 'RED' WHERE code = 'red'", "SELECT code FROM tagref WHERE id = 1"}, false, "RED"},
		{"two tables' keys of one name", []string{"INSERT INTO a2 VALUES (5, 99)"}, true, ""},
	} {
		srcValue, srcErr := e.appSource(t, c.stmts...)
		tgtValue, tgtErr := e.appTarget(t, c.stmts...)
		if c.refused {
			if !fkViolation(srcErr) || !fkViolation(tgtErr) {
				t.Errorf("%s: source %v, target %v; want a foreign key's refusal on both", c.what, srcErr, tgtErr)
			}
			continue
		}
		if srcErr != nil || tgtErr != nil || srcValue != c.value || tgtValue != c.value {
			t.Errorf("%s: source %q, %v; target %q, %v; want %q on both", c.what, srcValue, srcErr, tgtValue, tgtErr, c.value)
		}
	}
	// DEFERRABLE INITIALLY DEFERRED: the source checks at commit, MySQL at
	// once, as the report said.
	if _, err := e.appSource(t, "INSERT INTO item VALUES (900, 777)", "INSERT INTO child VALUES (777, 1, 'late')"); err != nil {
		t.Errorf("source, a deferred key kept at commit: %v", err)
	}
	if _, err := e.appTarget(t, "INSERT INTO item VALUES (900, 777)", "INSERT INTO child VALUES (777, 1, 'late')"); !fkViolation(err) {
		t.Errorf("target, a deferred key kept at commit: %v, want MySQL's refusal at the first row", err)
	}

	st, raw := e.status(t)
	notCarried := map[string]bool{}
	if st.Cutover != nil {
		for _, o := range st.Cutover.NotCarried {
			notCarried[o.Kind+" "+o.Name] = o.State == "not carried" && o.Reason != ""
		}
	}
	for _, o := range []string{"foreign key textref_code_fkey on public.textref", "foreign key bigref_pid_fkey on public.bigref", "view public.child_names",
		"materialized view public.child_count", "function public.touch()", "trigger child_touch on public.child", "sequence public.lonely"} {
		if !notCarried[o] {
			t.Errorf("status after migrate does not list %s as not carried", o)
		}
	}
	if st.Cutover == nil || !st.Cutover.Ready || len(st.Cutover.LeftOut) != 0 {
		t.Errorf("status after migrate: want ready, nothing left out:\n%s", raw)
	}

	// replicate applies through the keys: pgrelay's sessions do not check
	// them (nor cascade).
	r := e.start("replicate")
	r.waitLog(t, "streaming", 2*time.Minute)
	for _, step := range []string{
		// Cascaded on the source: the children's deletes follow the parent's.
		`DELETE FROM parent WHERE id = 45`,
		// A parent before its children, in one transaction.
		`BEGIN; DELETE FROM item WHERE child_id IN (SELECT id FROM child WHERE parent_id = 6);
		 DELETE FROM parent WHERE id = 6; COMMIT`,
		// Rows that keep the deferred key at commit only.
		`BEGIN; INSERT INTO item VALUES (901, 778); INSERT INTO parent VALUES (60, 'p60'); INSERT INTO child VALUES (778, 60, 'late'); COMMIT`,
		// A key's new value cascades on the source; the target gets each row.
		`UPDATE tagged SET code = 'BLUE' WHERE code = 'blue'`,
		`UPDATE child SET parent_id = parent_id + 1 WHERE id BETWEEN 20 AND 30; INSERT INTO a1 SELECT i, i % 5 + 1 FROM generate_series(2, 40) i`,
	} {
		e.src.Exec(t, step)
	}
	e.sync(t, r, 2*time.Minute)
	if n := e.compare(t); n < 150 {
		t.Errorf("compared %d rows", n)
	}
	if got := len(e.foreignKeys(t)); got != len(want) {
		t.Errorf("%d foreign keys on the target after replicate, want %d", got, len(want))
	}
	if code := r.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, r.logs())
	}
	e.verify(t)
	// A second migrate finds them all there; one that copies the tables
	// anew empties the referenced ones first (TRUNCATE, which MySQL takes
	// under a foreign key only with its checks off, as pgrelay's sessions
	// run).
	again := strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n")
	if !strings.Contains(again, "ready to switch: yes") || strings.Contains(again, "left out:") {
		t.Errorf("second migrate's report:\n%s", again)
	}
	e.my.Exec(t, "INSERT INTO parent VALUES (999, 'only on the target, gone with the copy')")
	e.with("PGRELAY_SNAPSHOT=always").mustRun(3*time.Minute, "migrate")
	e.compare(t)
	if got := len(e.foreignKeys(t)); got != len(want) {
		t.Errorf("%d foreign keys on the target after the tables were copied anew, want %d", got, len(want))
	}
}

// TestE2EMySQLForeignKeyDDL: the source's column changes under foreign keys
// reach MariaDB, which refuses them under a key: the keys in the way are
// dropped before each change and made again after it. A referencing
// column widened is made again at once; a key whose two sides change type
// one after the other is made again when the second side arrives (listed as
// left out in between); a key whose column the source drops is listed left
// out, until the next migrate makes what the source has. A change stopped
// between the drop and the remake (a later step the target refuses) makes
// the key again when pgrelay finishes the change on its next run.
func TestE2EMySQLForeignKeyDDL(t *testing.T) {
	e2eEachMajor(t, testE2EMySQLForeignKeyDDL)
}

func testE2EMySQLForeignKeyDDL(t *testing.T, major int) {
	e := myE2EPair(t, major)
	e.src.Exec(t, myFKSchema)
	e.mustRun(3*time.Minute, "migrate")
	fk := func(name string) string { t.Helper(); return e.foreignKeys(t)[name] }
	away := func() string {
		t.Helper()
		return e.query(t, "SELECT CONCAT(COUNT(*), ':', COALESCE(GROUP_CONCAT(constraint_name ORDER BY constraint_name), '')) FROM pgrelay_foreign_key_away")
	}
	leftOut := func() []string {
		t.Helper()
		st, _ := e.status(t)
		var out []string
		for _, o := range st.Cutover.LeftOut {
			out = append(out, o.Name)
		}
		return out
	}

	r := e.start("replicate")
	r.waitLog(t, "streaming", 2*time.Minute)
	// A referencing varchar widened: MySQL keys varchars of two lengths.
	e.src.Exec(t, `ALTER TABLE tagref ALTER COLUMN code TYPE varchar(30); INSERT INTO tagref VALUES (4, 'green')`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("tagref_code_fkey"); got != "tagref(code)->tagged(code) ON DELETE NO ACTION ON UPDATE CASCADE" {
		t.Errorf("tagref_code_fkey after code was widened: %q", got)
	}
	if got := e.query(t, "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tagref' AND COLUMN_NAME = 'code'"); got != "varchar(30)" {
		t.Errorf("tagref.code is %s on the target", got)
	}
	// Both sides of child_parent_id_fkey become bigint, the parent first.
	e.src.Exec(t, `DROP VIEW child_names; ALTER TABLE parent ALTER COLUMN id TYPE bigint; INSERT INTO parent VALUES (3000000000, 'big')`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("child_parent_id_fkey"); got != "" {
		t.Errorf("child_parent_id_fkey between a bigint and an int: %q, want none yet", got)
	}
	if got := away(); got != "1:child_parent_id_fkey" {
		t.Errorf("pgrelay_foreign_key_away with one side changed: %s", got)
	}
	if lo := leftOut(); len(lo) != 1 || lo[0] != "child_parent_id_fkey on public.child" {
		t.Errorf("status with one side changed lists left out %q, want child_parent_id_fkey", lo)
	}
	e.src.Exec(t, `ALTER TABLE child ALTER COLUMN parent_id TYPE bigint; INSERT INTO child VALUES (2000, 3000000000, 'big')`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("child_parent_id_fkey"); got != "child(parent_id)->parent(id) ON DELETE CASCADE ON UPDATE NO ACTION" {
		t.Errorf("child_parent_id_fkey after both sides changed: %q", got)
	}
	if got := away(); got != "0:" {
		t.Errorf("pgrelay_foreign_key_away after both sides changed: %s", got)
	}
	if lo := leftOut(); len(lo) != 0 {
		t.Errorf("status after both sides changed lists left out %q", lo)
	}
	// A column renamed and made nullable in one change.
	e.src.Exec(t, `ALTER TABLE item RENAME COLUMN child_id TO the_child; ALTER TABLE item ALTER COLUMN the_child DROP NOT NULL;
		INSERT INTO item VALUES (950, NULL)`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("item_child_fk"); got != "item(the_child)->child(id) ON DELETE NO ACTION ON UPDATE NO ACTION" {
		t.Errorf("item_child_fk after its column was renamed and made nullable: %q", got)
	}

	// Stopped between the drop and the remake: a later step of the change
	// (narrowing id) fails on a row only the target has.
	e.my.Exec(t, "INSERT INTO tagref VALUES (100000, 'green')")
	e.src.Exec(t, `ALTER TABLE tagref ALTER COLUMN code TYPE varchar(40), ALTER COLUMN id TYPE smallint; INSERT INTO tagref VALUES (6, 'red')`)
	code := r.wait(t, 3*time.Minute)
	if code == 0 {
		t.Fatalf("replicate exited 0 although the target refused the change; log:\n%s", r.logs())
	}
	if !strings.Contains(r.logs(), "MODIFY COLUMN `id` SMALLINT") {
		t.Errorf("replicate's log does not name the refused step:\n%s", r.logs())
	}
	if got := fk("tagref_code_fkey"); got != "" {
		t.Errorf("tagref_code_fkey while the change is half done: %q (the drop comes first); log:\n%s", got, r.logs())
	}
	if got := away(); got != "1:tagref_code_fkey" {
		t.Errorf("pgrelay_foreign_key_away while the change is half done: %s", got)
	}
	e.my.Exec(t, "DELETE FROM tagref WHERE id = 100000")
	r = e.start("replicate")
	e.sync(t, r, 2*time.Minute)
	if got := fk("tagref_code_fkey"); got != "tagref(code)->tagged(code) ON DELETE NO ACTION ON UPDATE CASCADE" {
		t.Errorf("tagref_code_fkey after the change was finished: %q", got)
	}
	if got := e.query(t, "SELECT CONCAT(COLUMN_TYPE, ' ', (SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tagref' AND COLUMN_NAME = 'code')) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tagref' AND COLUMN_NAME = 'id'"); got != "smallint(6) varchar(40)" {
		t.Errorf("tagref's id and code after the change was finished: %s", got)
	}
	if got := away(); got != "0:" {
		t.Errorf("pgrelay_foreign_key_away after the change was finished: %s", got)
	}

	// The source drops a referencing column, and its key with it.
	e.src.Exec(t, `ALTER TABLE a1 DROP COLUMN pid; INSERT INTO a1 VALUES (100)`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("a1_fk_same"); got != "" {
		t.Errorf("a1_fk_same after its column was dropped: %q", got)
	}
	if lo := leftOut(); len(lo) != 1 || lo[0] != "a1_fk_same on public.a1" {
		t.Errorf("status after a key's column was dropped lists left out %q, want a1_fk_same", lo)
	}
	// And a referenced key column (with CASCADE: the key on the source goes
	// too), the table taking another primary key.
	e.src.Exec(t, `ALTER TABLE tagged DROP COLUMN code CASCADE; ALTER TABLE tagged ADD PRIMARY KEY (n); INSERT INTO tagged VALUES (10)`)
	e.sync(t, r, 2*time.Minute)
	if got := fk("tagref_code_fkey"); got != "" {
		t.Errorf("tagref_code_fkey after the column it references was dropped: %q", got)
	}
	lo := leftOut()
	slices.Sort(lo)
	if lo := strings.Join(lo, ", "); lo != "a1_fk_same on public.a1, tagref_code_fkey on public.tagref" {
		t.Errorf("status after a referenced column was dropped lists left out %q", lo)
	}
	e.compare(t)
	if code := r.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, r.logs())
	}
	e.verify(t)
	// The next migrate makes what the source has: nothing left out.
	report := strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n")
	if !strings.Contains(report, "ready to switch: yes") || strings.Contains(report, "left out:") {
		t.Errorf("migrate after the changes:\n%s", report)
	}
	if got := away(); got != "0:" {
		t.Errorf("pgrelay_foreign_key_away after migrate: %s", got)
	}
}

// TestE2EMySQLForeignKeyCrash: replicate is killed again and again while
// the source changes a column under a foreign key over and over (each DROP
// NOT NULL redefines the column on the target: the key is dropped before
// and made again after); at the end the key is there as on the source,
// nothing is left recorded out of the way, and the rows are equal. The log
// says how many kills fell between a drop and its remake.
func TestE2EMySQLForeignKeyCrash(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE parent (id int PRIMARY KEY);
		INSERT INTO parent SELECT generate_series(1, 20);
		CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id), n int);
		INSERT INTO child SELECT i, i % 20 + 1, 0 FROM generate_series(1, 2000) i`)
	e.mustRun(3*time.Minute, "migrate")
	if got := len(e.foreignKeys(t)); got != 1 {
		t.Fatalf("%d foreign keys after migrate, want 1", got)
	}
	rng := e2eRand(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan error, 1)
	go func() {
		conn, err := pgx.Connect(ctx, e.src.URL())
		if err != nil {
			changes <- err
			return
		}
		defer conn.Close(context.Background())
		for i := 0; ctx.Err() == nil; i++ {
			change := "SET NOT NULL"
			if i%2 == 1 {
				change = "DROP NOT NULL"
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER TABLE child ALTER COLUMN parent_id %s; UPDATE child SET n = n + 1 WHERE id %% 97 = %d`, change, i%97)); err != nil {
				if ctx.Err() == nil {
					changes <- err
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(changes)
	}()
	kills := 10 + rng.IntN(6)
	last, between := e.progress(t), 0
	for i := 1; i <= kills; i++ {
		p := e.start("replicate")
		time.Sleep(e2eKillDelay(rng))
		if p.exited() {
			t.Fatalf("kill %d: replicate exited by itself (%v); log:\n%s", i, p.err, p.logs())
		}
		p.kill()
		e.crashCheck(t, &last, i)
		if e.query(t, "SELECT COUNT(*) FROM pgrelay_foreign_key_away") != "0" {
			between++ // killed between the key's drop and its remake
		}
	}
	cancel()
	if err := <-changes; err != nil {
		t.Fatalf("the source's changes: %v", err)
	}
	final := e.start("replicate")
	e.sync(t, final, 3*time.Minute)
	if got := e.foreignKeys(t)["child_parent_id_fkey"]; got != "child(parent_id)->parent(id) ON DELETE NO ACTION ON UPDATE NO ACTION" {
		t.Errorf("child_parent_id_fkey at the end: %q", got)
	}
	if got := e.query(t, "SELECT COUNT(*) FROM pgrelay_foreign_key_away"); got != "0" {
		t.Errorf("%s foreign keys still recorded out of the way", got)
	}
	if got := e.query(t, "SELECT COUNT(*) FROM pgrelay_relation WHERE pending IS NOT NULL"); got != "0" {
		t.Errorf("%s changes still pending", got)
	}
	e.compare(t)
	e.verify(t)
	if code := final.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, final.logs())
	}
	t.Logf("%d kills, %d of them between a drop of the key and its remake", kills, between)
}
