package integration

// End-to-end tests of a MariaDB target through the built binary: what
// migrate, replicate, status, verify and teardown do for a PostgreSQL
// target, with the same guarantees, compared row by row with the source
// (e2e_mysql_helpers_test.go) and by pgrelay verify.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// myTypesSchema is a source of many types, every value one MySQL holds.
const myTypesSchema = `
CREATE TYPE my_mood AS ENUM ('sad', 'ok', 'happy', 'it''s "odd"');
CREATE DOMAIN my_posint AS int CHECK (VALUE > 0);
CREATE TABLE types_all (
    id       bigint PRIMARY KEY,
    i2       int2,
    i4       int4 NOT NULL,
    i8       int8,
    num      numeric(20,6),
    num_free numeric,
    f8       float8,
    f4       real,
    txt      text,
    vc       varchar(40),
    ch       char(6),
    raw      bytea,
    flag     bool,
    day      date,
    tm       time(3),
    at       timestamptz,
    ts       timestamp(3),
    uid      uuid,
    doc      jsonb,
    js       json,
    ints     int[],
    words    text[],
    nums     numeric[],
    mood     my_mood,
    pos      my_posint,
    span     interval,
    addr     inet,
    big      text
);
INSERT INTO types_all
SELECT i, (i % 32000)::int2, i * 7, i::int8 * 1000000007,
       round((i * 3.14159)::numeric, 6), i::numeric / 7, i / 3.0, (i / 9.0)::real,
       'row ' || i || E'\ttab\nnewline \\ backslash ünïcødé 🐘 ''quote''', 'vc' || i, 'c' || (i % 100),
       decode(md5(i::text), 'hex') || '\x00ff5c0a'::bytea, i % 3 = 0,
       date '2000-01-01' + i, time '10:00:00.123' + i * interval '1 second',
       timestamptz '2024-02-29 12:34:56.789012+05:30' + i * interval '1 hour',
       timestamp '1999-12-31 23:59:59.999' + i * interval '1 minute',
       md5('uid' || i)::uuid,
       jsonb_build_object('id', i, 'name', 'n' || i, 'tags', jsonb_build_array('a', i, NULL), 'esc', E'q"\\\n\u00e9', 'f', i / 4.0),
       ('{"b": ' || i || ', "a": [1, 2.50, "x"]}')::json,
       ARRAY[i, NULL, -i], ARRAY['a b', 'c,d', E'e"f', NULL, 'g\h'], ARRAY[i / 8.0, 1e20],
       (ARRAY['sad', 'ok', 'happy', 'it''s "odd"'])[1 + i % 4]::my_mood, i,
       make_interval(days => i, secs => i / 10.0), ('10.0.' || (i % 256) || '.' || (i % 7))::inet,
       CASE WHEN i % 50 = 0 THEN (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 400) g) END
FROM generate_series(1, 500) i;
INSERT INTO types_all (id, i2, i4, i8, num, num_free, f8, f4, txt, vc, ch, raw, flag, day, tm, at, ts, uid, doc, js, ints, words, nums, mood, pos, span, addr, big) VALUES
 (1001, -32768, -2147483648, -9223372036854775808, -99999999999999.999999, -0.000000000000000000000000000001, -1.7976931348623157e308, -3.4028235e38,
  '', '', '', '\x'::bytea, false, '1000-01-01', '00:00:00', '1000-01-02 00:00:00+00', '1000-01-01 00:00:00', '00000000-0000-0000-0000-000000000000',
  '{}', '[]', '{}', '{}', '{}', 'sad', 1, '-178000000 years', '::1', ''),
 (1002, 32767, 2147483647, 9223372036854775807, 99999999999999.999999, 12345678901234567890123456789012345.123456789012345678901234567890, 5e-324, 1.17549435e-38,
  E'\\N', 'x', 'abc   ', '\x5c4e'::bytea, true, '9999-12-31', '23:59:59.999', '9999-12-30 23:59:59.999999+00', '9999-12-31 23:59:59.999', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '[1, "two", {"three": [3]}]', '"a string"', '{{1,2},{3,4}}', '{{"x","y"},{"z",NULL}}', '{0.5,-0.25}', 'happy', 2147483647, '1 year 2 mons 3 days 04:05:06.789', '2001:db8::/32', repeat('toast me ', 2000)),
 (1003, 0, 0, 0, 0, 0, 0, 0, E'\r\n\\r\\n\b\f\v', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'null', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE SCHEMA "{{app}}";
CREATE TABLE "{{app}}"."Order Lines" ("Order" int, "Line" int, "Note" text, PRIMARY KEY ("Order", "Line"));
INSERT INTO "{{app}}"."Order Lines" SELECT i / 10, i % 10, 'note ' || i FROM generate_series(1, 300) i;
CREATE TABLE full_ident (a int, b text, c numeric);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
INSERT INTO full_ident SELECT i % 20, CASE WHEN i % 3 = 0 THEN NULL ELSE 'b' || (i % 5) END, i / 4.0 FROM generate_series(1, 200) i;
INSERT INTO full_ident VALUES (1, 'twin', 1), (1, 'twin', 1), (NULL, NULL, NULL);
CREATE TABLE toasty (id int PRIMARY KEY, n int, blob text, bin bytea);
INSERT INTO toasty SELECT i, 0, (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 300) g),
       (SELECT string_agg(decode(md5(i::text || g::text), 'hex'), ''::bytea) FROM generate_series(1, 300) g)
FROM generate_series(1, 20) i;
CREATE TABLE keyed (id int PRIMARY KEY, k2 text UNIQUE, v int);
INSERT INTO keyed SELECT i, 'k' || i, i FROM generate_series(1, 1000) i;
CREATE INDEX keyed_v ON keyed (v);
CREATE TABLE evolving (id int PRIMARY KEY, small int, short varchar(10), gone text);
INSERT INTO evolving SELECT i, i, 's' || i, 'gone' FROM generate_series(1, 100) i;
`

// myMixedDML changes every table of myTypesSchema: each string is one
// source transaction.
var myMixedDML = []string{
	// Mixed DML on many types, several changes of one row in one transaction.
	`INSERT INTO types_all (id, i4, txt, doc, ints, at, f4, num_free) SELECT i, i, 'new ' || i, jsonb_build_object('n', i), ARRAY[i], now(), i / 7.0, i / 3.0 FROM generate_series(2000, 2300) i;
	 UPDATE types_all SET txt = txt || ' updated', num = num * 2, flag = NOT flag, day = day + 1 WHERE id % 7 = 0 AND id < 1000;
	 UPDATE types_all SET doc = doc || '{"more": true}', words = array_append(words, 'more') WHERE id % 11 = 0;
	 DELETE FROM types_all WHERE id % 13 = 0;
	 UPDATE types_all SET i4 = -i4 WHERE id = 14; UPDATE types_all SET i4 = i4 * 2 WHERE id = 14;
	 INSERT INTO types_all (id, i4) VALUES (5000, 1); DELETE FROM types_all WHERE id = 5000; INSERT INTO types_all (id, i4, txt) VALUES (5000, 2, 'again')`,
	// Unchanged TOAST: the big columns stay as they are on the target.
	`UPDATE toasty SET n = n + 1; UPDATE types_all SET i2 = 7 WHERE big IS NOT NULL`,
	`UPDATE toasty SET blob = blob || 'x' WHERE id = 3; UPDATE toasty SET bin = NULL WHERE id = 4`,
	// REPLICA IDENTITY FULL: rows found by every old value, NULLs and twins included.
	`UPDATE full_ident SET c = c + 100 WHERE a = 3; DELETE FROM full_ident WHERE b IS NULL AND a = 6;
	 DELETE FROM full_ident WHERE ctid = (SELECT min(ctid) FROM full_ident WHERE b = 'twin');
	 UPDATE full_ident SET b = 'was null' WHERE a IS NULL`,
	// Primary-key changes, also swapping and colliding on the way.
	`UPDATE keyed SET id = id + 10000 WHERE id <= 100;
	 UPDATE keyed SET id = -id WHERE id BETWEEN 200 AND 210;
	 UPDATE "{{app}}"."Order Lines" SET "Line" = "Line" + 100 WHERE "Order" = 3`,
	`UPDATE keyed SET k2 = 'swap' WHERE id = 500; UPDATE keyed SET k2 = 'k500' WHERE id = 501; UPDATE keyed SET k2 = 'k501' WHERE id = 500`,
	// TRUNCATE, then rows again.
	`TRUNCATE "{{app}}"."Order Lines"`,
	`INSERT INTO "{{app}}"."Order Lines" VALUES (1, 1, 'after truncate')`,
	// Column changes: added with a default (older rows hold it), dropped,
	// a type widened.
	`ALTER TABLE evolving ADD COLUMN added text DEFAULT 'dflt'`,
	`INSERT INTO evolving (id, small, short) VALUES (1000, 1, 'x'); UPDATE evolving SET added = 'set' WHERE id = 5`,
	`ALTER TABLE evolving DROP COLUMN gone`,
	`ALTER TABLE evolving ALTER COLUMN small TYPE bigint, ALTER COLUMN short TYPE text`,
	`UPDATE evolving SET small = 9000000000, short = repeat('long ', 100) WHERE id = 7`,
}

// TestE2EMySQLMigrateReplicate: migrate copies every kind of table into
// MariaDB; replicate then streams mixed DML, unchanged TOAST, REPLICA
// IDENTITY FULL, key changes, TRUNCATE and column changes; after each step
// the target equals the source row by row. status and verify report it
// right, a second migrate copies nothing, teardown removes pgrelay's tables.
func TestE2EMySQLMigrateReplicate(t *testing.T) {
	e2eEachMajor(t, testE2EMySQLMigrateReplicate)
}

func testE2EMySQLMigrateReplicate(t *testing.T, major int) {
	e := myE2EPair(t, major)
	// A schema of its own lands in a database of its name, on the MariaDB
	// server the tests share: a name of the test's own.
	app := strings.NewReplacer("{{app}}", "My App "+e.slot[len("e2e_my_slot_"):])
	e.src.Exec(t, app.Replace(myTypesSchema))

	first := e.mustRun(3*time.Minute, "migrate")
	if out := strings.Join(first.out.all(), "\n"); !strings.HasPrefix(out, "caught up: ") {
		t.Errorf("migrate stdout = %q, want a \"caught up: …\" line", out)
	}
	if n := e.compare(t); n < 2000 {
		t.Errorf("compared %d rows after migrate", n)
	}
	// The secondary indexes were built after the data.
	if got := e.query(t, "SELECT GROUP_CONCAT(DISTINCT INDEX_NAME ORDER BY INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'keyed'"); !strings.Contains(got, "keyed_v") || !strings.Contains(got, "PRIMARY") {
		t.Errorf("indexes of keyed on the target: %s", got)
	}
	st, raw := e.status(t)
	if !st.Seeded || !st.Slot.Exists || st.Slot.Active || len(st.Tables) != 6 || st.AppliedLSN == "" {
		t.Errorf("status after migrate: %s", raw)
	}
	for _, tb := range st.Tables {
		if tb.State != "indexed" {
			t.Errorf("table %s is %s after migrate, want indexed", tb.Table, tb.State)
		}
	}
	e.verify(t)

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	for i, step := range myMixedDML {
		e.src.Exec(t, app.Replace(step))
		e.sync(t, p, 2*time.Minute)
		if t.Failed() {
			break
		}
		if i%4 == 3 || i == len(myMixedDML)-1 {
			e.compare(t)
		}
	}
	e.compare(t)
	// Rows added before the column have the source's default.
	if got := e.query(t, "SELECT COUNT(*) FROM evolving WHERE added = 'dflt'"); got != "100" {
		t.Errorf("%s rows of evolving hold the added column's default, want 100 (99 older ones, 1 inserted)", got)
	}
	if got := e.query(t, "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'evolving' AND COLUMN_NAME = 'small'"); got != "bigint" {
		t.Errorf("evolving.small is %s on the target after the type change, want bigint", got)
	}

	// status while streaming, text and JSON.
	st, raw = e.status(t)
	applied := e2eLSN(t, "applied_lsn", st.AppliedLSN)
	wal := e2eLSN(t, "source_wal_lsn", st.SourceWALLSN)
	if !st.Slot.Active || applied == 0 || applied > wal || st.LastCommitTime == nil || !st.Seeded {
		t.Errorf("pgrelay status --json while streaming is not sane:\n%s", raw)
	}
	if confirmed := e2eLSN(t, "confirmed_flush_lsn", st.Slot.ConfirmedFlushLSN); confirmed > applied {
		t.Errorf("slot confirmed %s past the applied %s (feedback before durability)", confirmed, applied)
	}
	text := strings.Join(e.mustRun(time.Minute, "status").out.all(), "\n")
	for _, want := range []string{e.slot, "streaming to pid", "applied", "seeded", "public.keyed", "indexed"} {
		if !strings.Contains(text, want) {
			t.Errorf("pgrelay status lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`(?m)^applied\s+[0-9A-F]+/[0-9A-F]+$`).MatchString(text) {
		t.Errorf("pgrelay status has no applied LSN line:\n%s", text)
	}
	report := e.verify(t)
	for _, want := range []string{"types_all", "Order Lines", "full_ident"} {
		if !strings.Contains(report, want) {
			t.Errorf("verify's report does not name %s:\n%s", want, report)
		}
	}
	// status and verify need only read the target.
	reader := "ro_" + e.slot
	e.my.Exec(t, "CREATE USER '"+reader+"'@'%' IDENTIFIED BY 'ro-pw'; GRANT SELECT ON *.* TO '"+reader+"'@'%'")
	t.Cleanup(func() { e.my.Exec(t, "DROP USER '"+reader+"'@'%'") })
	ro := e.with(fmt.Sprintf("PGRELAY_TARGET_URL=mysql://%s:ro-pw@127.0.0.1:%d/%s", reader, e.my.Port, e.my.DB))
	if out := strings.Join(ro.mustRun(time.Minute, "status").out.all(), "\n"); !strings.Contains(out, "public.keyed") {
		t.Errorf("pgrelay status as a user that may only read:\n%s", out)
	}
	ro.verify(t)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}

	// Nothing to copy again: a second migrate catches up by streaming.
	e.src.Exec(t, "UPDATE keyed SET v = v + 1 WHERE id % 5 = 0")
	second := e.mustRun(3*time.Minute, "migrate")
	if l, ok := second.findLog("created slot"); ok {
		t.Errorf("second migrate created the slot again: %v", l)
	}
	e.compare(t)

	// A difference made on the target is found and named.
	e.my.Exec(t, "UPDATE keyed SET v = -1 WHERE id = 600")
	p2, code := e.run(5*time.Minute, "verify")
	if out := strings.Join(p2.out.all(), "\n"); code != 1 || !strings.Contains(out, "600") {
		t.Errorf("verify of a changed row: exit %d, want 1 naming key 600:\n%s\nlog:\n%s", code, out, p2.logs())
	}

	e.mustRun(time.Minute, "teardown")
	if got := e.query(t, `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'pgrelay\_%'`); got != "0" {
		t.Errorf("%s pgrelay_* tables after teardown", got)
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("the slot is still there after teardown")
	}
}

// status is `pgrelay status --json`.
func (e *myE2E) status(t testing.TB) (e2eStatus, string) {
	t.Helper()
	p := e.mustRun(time.Minute, "status", "--json")
	raw := strings.Join(p.out.all(), "\n")
	var st e2eStatus
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("pgrelay status --json: %v; output:\n%s", err, raw)
	}
	return st, raw
}

// metrics fetches what /metrics at addr says of name; "" when it says
// nothing of it.
func metricValue(t testing.TB, addr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestE2EMySQLUnfitValue: a value MySQL cannot hold (NaN, an infinite date)
// stops migrate and replicate with one line naming the table, the column,
// the row's key and the source LSN; nothing of its transaction is applied
// and nothing is lost: with PGRELAY_MYSQL_UNFIT=null the next run stores
// NULL instead, logs each value and counts it on /metrics.
func TestE2EMySQLUnfitValue(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE days (id int PRIMARY KEY, d date);
		INSERT INTO days VALUES (1, '2024-01-01'), (2, 'infinity'), (3, '2024-01-03');
		CREATE TABLE m (id int PRIMARY KEY, f float8, note text)`)

	// The copy: a date MySQL cannot hold.
	p, code := e.run(3*time.Minute, "migrate")
	out := strings.Join(p.errOut.all(), "\n")
	t.Logf("migrate stopped with: %s", p.errOut.all()[len(p.errOut.all())-1])
	if code == 0 || !strings.Contains(out, "days") || !strings.Contains(out, "infinity") || !strings.Contains(out, UnfitEnv+"=null") {
		t.Fatalf("migrate of an infinite date: exit %d, want a failure naming the table, the value and %s; log:\n%s", code, UnfitEnv, p.logs())
	}
	nulled := e.with(UnfitEnv + "=null")
	p = nulled.mustRun(3*time.Minute, "migrate")
	if l, ok := p.findLog("stored as NULL"); !ok || !strings.Contains(fmt.Sprint(l), "days") {
		t.Errorf("no log line of the value stored as NULL; log:\n%s", p.logs())
	}
	if got := e.query(t, "SELECT CONCAT_WS(',', COUNT(*), SUM(d IS NULL)) FROM days"); got != "3,1" {
		t.Errorf("days on the target: %s rows,NULLs; want 3,1", got)
	}

	// The stream: a transaction with a NaN among good rows.
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "INSERT INTO m VALUES (1, 1.5, 'before')")
	e.sync(t, p, time.Minute)
	before := e.progress(t)
	e.src.Exec(t, "INSERT INTO m VALUES (2, 2.5, 'same txn'), (3, 'NaN', 'unfit'), (4, 4.5, 'same txn')")
	lsn := e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text")
	code = p.wait(t, 2*time.Minute)
	if code != 1 {
		t.Fatalf("replicate on a NaN exited %d, want 1; log:\n%s", code, p.logs())
	}
	last := p.errOut.all()[len(p.errOut.all())-1]
	t.Logf("replicate stopped with: %s", last)
	for _, want := range []string{"pgrelay: ", "`m`", "(id)=(3)", `column "f"`, "NaN", "at source LSN ", UnfitEnv + "=null"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line does not say %q:\n%s", want, last)
		}
	}
	if !e2eLSNPattern.MatchString(last) {
		t.Errorf("the last line names no LSN:\n%s", last)
	}
	if got := e.query(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM m"); got != "1" {
		t.Errorf("rows of m on the target after the refusal: %s, want only 1 (nothing of the refused transaction)", got)
	}
	if after := e.progress(t); after != before {
		t.Errorf("the stored position moved from %s to %s past a refused transaction", before, after)
	}
	if confirmed := e2eLSN(t, "confirmed_flush_lsn", e.src.QueryString(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", e.slot)); confirmed > before {
		t.Errorf("the slot confirmed %s, past the target's %s (before %s)", confirmed, before, lsn)
	}

	// Resumed with NULL for such values: nothing lost, the NaN counted.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p = nulled.with("PGRELAY_METRICS_ADDR=" + addr).start("replicate")
	e.sync(t, p, 2*time.Minute)
	if got := e.query(t, "SELECT GROUP_CONCAT(CONCAT(id, ':', COALESCE(f, 'NULL')) ORDER BY id) FROM m"); got != "1:1.5,2:2.5,3:NULL,4:4.5" {
		t.Errorf("m on the target after the resume: %s", got)
	}
	if got := metricValue(t, addr, "pgrelay_target_unfit_nulled_total"); got != "1" {
		t.Errorf("pgrelay_target_unfit_nulled_total = %q, want 1", got)
	}
	if l, ok := p.findLog("stored as NULL"); !ok || !strings.Contains(fmt.Sprint(l), "(id)=(3)") {
		t.Errorf("no log line naming the key of the value stored as NULL; log:\n%s", p.logs())
	}
	// Once the rows MySQL cannot hold are gone on the source, both sides agree.
	e.src.Exec(t, "DELETE FROM m WHERE id = 3; DELETE FROM days WHERE id = 2")
	e.sync(t, p, time.Minute)
	e.compare(t)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.verify(t)
}

// UnfitEnv is the setting of values MySQL cannot hold.
const UnfitEnv = "PGRELAY_MYSQL_UNFIT"

// TestE2EMySQLNameReusedWhileStopped: while pgrelay is stopped a column is
// added, then a is renamed b2 and d takes the name a; the first change's
// message names a and d, which the source's catalog, read later, gives as d's
// number and none. Each target column keeps its own values (matched by those
// numbers, d would become a and the real a be dropped with its values).
func TestE2EMySQLNameReusedWhileStopped(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE nr (id int PRIMARY KEY, a text, d text); INSERT INTO nr SELECT i, 'a' || i, 'd' || i FROM generate_series(1, 3) i`)
	e.mustRun(3*time.Minute, "migrate")
	for _, stmt := range []string{"ALTER TABLE nr ADD COLUMN x int", "INSERT INTO nr VALUES (10, 'a10', 'd10', 1)",
		"ALTER TABLE nr RENAME COLUMN a TO b2", "ALTER TABLE nr RENAME COLUMN d TO a", "INSERT INTO nr VALUES (11, 'a11', 'd11', 2)"} {
		e.src.Exec(t, stmt)
	}
	e.mustRun(3*time.Minute, "migrate")
	want := "1,a1,d1 2,a2,d2 3,a3,d3 10,a10,d10,1 11,a11,d11,2"
	if got := e.query(t, "SELECT GROUP_CONCAT(CONCAT_WS(',', id, b2, a, x) ORDER BY id SEPARATOR ' ') FROM nr"); got != want {
		t.Errorf("target nr: %s, want %s", got, want)
	}
	e.compare(t)
}
