package integration

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

// myTarget is a fresh MariaDB database with an open, set-up MySQL sink.
func myTarget(t *testing.T, opts mysql.Options) (*harness.MY, *mysql.Sink) {
	t.Helper()
	tg := &mySinkTarget{my: harness.MariaDB(t), opts: opts}
	s := tg.open(t)
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return tg.my, s
}

func wantMyQuery(t *testing.T, my *harness.MY, want, query string, args ...any) {
	t.Helper()
	if got := my.QueryString(t, query, args...); got != want {
		t.Fatalf("%s: got %q, want %q", query, got, want)
	}
}

// syncBuffer is a log sink for a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// typesTable has a column of each kind the MySQL mapping treats apart.
func typesTable() *schema.Table {
	c := func(name, typeName string, oid uint32, typmod int32) schema.Column {
		return schema.Column{Name: name, TypeName: typeName, TypeOID: oid, TypeMod: typmod}
	}
	cols := []schema.Column{
		{Name: "id", TypeName: "integer", TypeOID: 23, TypeMod: -1, Key: true, NotNull: true, Attnum: 1},
		c("b", "boolean", 16, -1), c("i8", "bigint", 20, -1), c("f4", "real", 700, -1), c("f8", "double precision", 701, -1),
		c("n", "numeric", 1700, -1), c("n52", "numeric(5,2)", 1700, 5<<16|2+4), c("t", "text", 25, -1),
		c("ch", "character(4)", 1042, 8), c("by", "bytea", 17, -1), c("d", "date", 1082, -1),
		c("tm", "time without time zone", 1083, -1), c("ts", "timestamp without time zone", 1114, -1),
		c("tz", "timestamp with time zone", 1184, -1), c("u", "uuid", 2950, -1), c("j", "jsonb", 3802, -1),
		c("ia", "integer[]", 1007, -1), c("ta", "text[]", 1009, -1), c("iv", "interval", 1186, -1),
	}
	for i := range cols {
		cols[i].Attnum = int16(i + 1)
	}
	return &schema.Table{RelationID: 17100, Schema: "public", Name: "typed", ReplicaIdentity: schema.IdentityDefault, Columns: cols}
}

// TestSinkMySQLValues: values at the edges of what MySQL holds arrive as
// the mapping says, and read back the same.
func TestSinkMySQLValues(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	tb := typesTable()
	ensure(t, s, tb)
	T, N := sinktest.T, sinktest.N
	mustApply(t, s, 100,
		sinktest.Ins(tb, 1, sinktest.Row(T("1"), T("t"), T("9223372036854775807"), T("3.4028235e+38"), T("2.2250738585072014e-308"),
			T("12345678901234567890123456789012345.123456789012345678901234567890"), T("-999.99"), T("tab\t'q' \\ 🎉 \x01"),
			T("ab  "), T(`\x00ff5c27`), T("1000-01-01"), T("23:59:59.999999"), T("9999-12-31 23:59:59.999999"),
			T("2024-05-06 07:08:09.123456+05:30"), T("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), T(`{"a": [1, 2.5], "b": "x\"y"}`),
			T("{{1,2},{NULL,4}}"), T(`{a,"b c","NULL",NULL}`), T("1 year 2 mons 3 days 04:05:06.7"))),
		sinktest.Ins(tb, 2, sinktest.Row(T("2"), T("f"), N(), N(), N(), T("0.000000000000000000000000000001"), N(), T(""), N(), T(`\x`), N(), N(), N(),
			T("1000-01-01 00:30:00+00"), N(), N(), T("{}"), N(), N())),
	)
	want := map[string]string{
		"b": "1", "i8": "9223372036854775807", "f4 = CAST(3.4028234663852886e+38 AS FLOAT)": "1", "n": "12345678901234567890123456789012345.123456789012345678901234567890",
		"n52": "-999.99", "t": "tab\t'q' \\ 🎉 \x01", "ch": "ab", "HEX(`by`)": "00FF5C27", "d": "1000-01-01", "tm": "23:59:59.999999",
		"ts": "9999-12-31 23:59:59.999999", "tz": "2024-05-06 01:38:09.123456", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		"j": `{"a": [1, 2.5], "b": "x\"y"}`, "ia": "[[1,2],[null,4]]", "ta": `["a","b c","NULL",null]`, "iv": "1 year 2 mons 3 days 04:05:06.7",
		"f8 = 2.2250738585072014e-308": "1",
	}
	for expr, v := range want {
		if !strings.Contains(expr, "`") && !strings.Contains(expr, " ") {
			expr = "`" + expr + "`"
		}
		wantMyQuery(t, my, v, "SELECT "+expr+" FROM typed WHERE id = 1")
	}
	wantMyQuery(t, my, "0.000000000000000000000000000001", "SELECT n FROM typed WHERE id = 2")
	wantMyQuery(t, my, "", "SELECT HEX(`by`) FROM typed WHERE id = 2")
	wantMyQuery(t, my, "1", "SELECT `by` IS NOT NULL AND `t` = '' FROM typed WHERE id = 2")
	wantMyQuery(t, my, "[]", "SELECT ia FROM typed WHERE id = 2")
	// Updates and deletes find rows by key, with the same conversions.
	mustApply(t, s, 200,
		sinktest.Upd(tb, 101, sinktest.Row(T("1"), T("f"), sinktest.U(), N(), N(), T("1.5"), N(), T("new"), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N())),
		sinktest.Del(tb, 102, source.OldKey, sinktest.Row(T("2"), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N(), N())),
	)
	wantMyQuery(t, my, "0|9223372036854775807|1.500000000000000000000000000000|new", "SELECT CONCAT_WS('|', b, i8, n, t) FROM typed")

	// Text keys compare as on PostgreSQL: 'a', 'A' and 'a ' are three rows.
	keyed := &schema.Table{RelationID: 17101, Schema: "public", Name: "texts", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{{Name: "k", TypeName: "text", TypeOID: 25, TypeMod: -1, Key: true, NotNull: true, Attnum: 1}}}
	ensure(t, s, keyed)
	mustApply(t, s, 300, sinktest.Ins(keyed, 201, sinktest.Row(T("a"))), sinktest.Ins(keyed, 202, sinktest.Row(T("A"))),
		sinktest.Ins(keyed, 203, sinktest.Row(T("a "))), sinktest.Ins(keyed, 204, sinktest.Row(T("ä"))))
	mustApply(t, s, 400, sinktest.Del(keyed, 301, source.OldKey, sinktest.Row(T("a "))))
	wantMyQuery(t, my, "3", "SELECT COUNT(*) FROM texts")
	wantMyQuery(t, my, "A,a,ä", "SELECT GROUP_CONCAT(k ORDER BY HEX(k)) FROM texts")
	// A key longer than its VARCHAR is an error, not a truncation.
	err := pgApply(t, s, 500, sinktest.Ins(keyed, 401, sinktest.Row(T(strings.Repeat("x", 769)))))
	if err == nil || !strings.Contains(err.Error(), "texts") || !strings.Contains(err.Error(), source.LSN(401).String()) || !errors.Is(err, sink.ErrValueRejected) {
		t.Fatalf("a key of 769 characters: %v", err)
	}
}

// TestSinkMySQLUnfitValues: a value MySQL cannot hold stops the transaction
// with an error naming table, column, key and LSN, and nothing of it is
// applied; with UnfitAsNull it is stored as NULL, logged and counted.
func TestSinkMySQLUnfitValues(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	tb := typesTable()
	ensure(t, s, tb)
	T, N := sinktest.T, sinktest.N
	row := func(id, col, v string) source.Tuple {
		r := make(source.Tuple, len(tb.Columns))
		for i := range r {
			r[i] = N()
		}
		r[0] = T(id)
		for i, c := range tb.Columns {
			if c.Name == col {
				r[i] = T(v)
			}
		}
		return r
	}
	mustApply(t, s, 10, sinktest.Ins(tb, 1, row("1", "t", "kept")))
	cases := []struct{ col, value, reason string }{
		{"f8", "NaN", "NaN"}, {"f4", "-Infinity", "infinity"}, {"n", "Infinity", "infinity"},
		{"n", "1234567890123456789012345678901234567", "digits before the point"},
		{"n", "0.1234567890123456789012345678901234", "digits after the point"},
		{"d", "infinity", "infinite"}, {"d", "0999-12-31", "1000 to 9999"}, {"ts", "10000-01-01 00:00:00", "1000 to 9999"},
		{"ts", "2000-01-01 00:00:00 BC", "1000 to 9999"}, {"tz", "9999-12-31 23:30:00-01", "in UTC"}, {"tm", "24:00:00", "24:00:00"},
	}
	at := source.LSN(100)
	for _, c := range cases {
		at += 10
		err := pgApply(t, s, at+5,
			sinktest.Ins(tb, at, row("50", "t", "not kept")),
			sinktest.Upd(tb, at+1, row("1", "t", "changed")),
			sinktest.Ins(tb, at+2, row("2", c.col, c.value)))
		if err == nil {
			t.Fatalf("%s %s: no error", c.col, c.value)
		}
		for _, part := range []string{"typed", `"` + c.col + `"`, c.reason, "(id)=(2)", (at + 2).String(), mysql.UnfitSetting} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s %s: error %q does not mention %q", c.col, c.value, err, part)
			}
		}
		if errors.Is(err, sink.ErrRetryable) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %s: error %q is retryable or not one line", c.col, c.value, err)
		}
	}
	wantMyQuery(t, my, "1|kept", "SELECT GROUP_CONCAT(CONCAT_WS('|', id, t)) FROM typed")
	if p, err := s.Progress(t.Context(), sinktest.Slot); err != nil || p.LSN != 10 {
		t.Fatalf("progress %v, %v; want 0/A", p.LSN, err)
	}

	// With UnfitAsNull: NULL, one log line each, counted.
	var logs syncBuffer
	_, s2 := myTarget(t, mysql.Options{UnfitAsNull: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ensure(t, s2, tb)
	var chs []*sink.Change
	for i, c := range cases {
		chs = append(chs, sinktest.Ins(tb, source.LSN(1000+i), row(strconv.Itoa(100+i), c.col, c.value)))
	}
	mustApply(t, s2, 2000, chs...)
	if got := s2.Stats().UnfitNulled; got != int64(len(cases)) {
		t.Errorf("UnfitNulled = %d, want %d", got, len(cases))
	}
	if n := strings.Count(logs.String(), "stored as NULL"); n != len(cases) {
		t.Errorf("%d log lines about NULLs, want %d:\n%s", n, len(cases), logs.String())
	}
	if !strings.Contains(logs.String(), "(id)=(100)") || !strings.Contains(logs.String(), "f8") {
		t.Errorf("the log does not name the key and column:\n%s", logs.String())
	}
	// A key column still refuses.
	keyed := &schema.Table{RelationID: 17102, Schema: "public", Name: "fkeys", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{{Name: "k", TypeName: "double precision", TypeOID: 701, TypeMod: -1, Key: true, NotNull: true, Attnum: 1}}}
	ensure(t, s2, keyed)
	if err := pgApply(t, s2, 3000, sinktest.Ins(keyed, 2500, sinktest.Row(T("NaN")))); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN key with UnfitAsNull: %v", err)
	}
}

// TestSinkMySQLSession: the sink's sessions behave like a replica's: foreign
// keys are not checked, timestamps are UTC, zero dates and too-long values
// are refused; a server that may lose commits is named by the preflight.
func TestSinkMySQLSession(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	parent, child := sinktest.ItemsTable("public", "parent"), sinktest.ItemsTable("public", "child")
	ensure(t, s, parent, child)
	my.Exec(t, "ALTER TABLE child ADD CONSTRAINT child_parent_fk FOREIGN KEY (id) REFERENCES parent (id)")
	mustApply(t, s, 100,
		sinktest.Ins(child, 1, sinktest.Row(sinktest.T("5"), sinktest.N(), sinktest.N())),
		sinktest.Ins(parent, 2, sinktest.Row(sinktest.T("1"), sinktest.T("p"), sinktest.N())))
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM child WHERE id = 5")

	ctx := t.Context()
	my.Exec(t, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
	t.Cleanup(func() { my.Exec(t, "SET GLOBAL innodb_flush_log_at_trx_commit = 1") })
	problems, err := s.Preflight(ctx, []string{"public"})
	my.Exec(t, "SET GLOBAL innodb_flush_log_at_trx_commit = 1")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Kind != sink.ProblemSetting || problems[0].Object != "innodb_flush_log_at_trx_commit = 2" ||
		!strings.Contains(problems[0].Fix, "SET GLOBAL innodb_flush_log_at_trx_commit = 1") {
		t.Errorf("preflight of a server that may lose commits: %+v, want innodb_flush_log_at_trx_commit named with the fix", problems)
	}
	if problems, err := s.Preflight(ctx, []string{"public"}); err != nil || len(problems) != 0 {
		t.Errorf("preflight of a durable server: %+v, %v", problems, err)
	}
}

// TestSinkMySQLConnectErrors: what cannot connect says why in one line,
// without the password.
func TestSinkMySQLConnectErrors(t *testing.T) {
	my := harness.MariaDB(t)
	ctx := t.Context()
	for _, c := range []struct{ url, want string }{
		{strings.Replace(my.URL(), "/"+my.DB, "/no_such_db", 1), `database "no_such_db" does not exist`},
		{strings.Replace(my.URL(), ":"+my.Password+"@", ":wrong-secret@", 1), "refused the user or password"},
	} {
		_, err := mysql.New(ctx, c.url, mysql.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), my.Password) {
			t.Errorf("%s: %v, want one mentioning %q without the password", c.want, err, c.want)
		}
	}
}

// TestSinkMySQLFullIdentityTypes: under REPLICA IDENTITY FULL a row is found
// by all its old values, of every type: a float4 compares as a FLOAT, JSON
// and bytes as what they are, NULLs with <=>; one of two identical rows is
// changed, never both.
func TestSinkMySQLFullIdentityTypes(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	tb := &schema.Table{RelationID: 17200, Schema: "public", Name: "full_types", ReplicaIdentity: schema.IdentityFull, Columns: []schema.Column{
		{Name: "f", TypeName: "real", TypeOID: 700, TypeMod: -1, Attnum: 1},
		{Name: "d", TypeName: "double precision", TypeOID: 701, TypeMod: -1, Attnum: 2},
		{Name: "j", TypeName: "jsonb", TypeOID: 3802, TypeMod: -1, Attnum: 3},
		{Name: "b", TypeName: "bytea", TypeOID: 17, TypeMod: -1, Attnum: 4},
		{Name: "tz", TypeName: "timestamp with time zone", TypeOID: 1184, TypeMod: -1, Attnum: 5},
		{Name: "n", TypeName: "numeric", TypeOID: 1700, TypeMod: -1, Attnum: 6},
		{Name: "t", TypeName: "text", TypeOID: 25, TypeMod: -1, Attnum: 7},
	}}
	ensure(t, s, tb)
	T, N := sinktest.T, sinktest.N
	row := sinktest.Row(T("0.1"), T("0.1"), T(`{"a": [1, 2]}`), T(`\x00ff`), T("2024-01-01 00:00:00+02"), T("1.50"), N())
	mustApply(t, s, 10, sinktest.Ins(tb, 1, row), sinktest.Ins(tb, 2, row), sinktest.Ins(tb, 3, sinktest.Row(T("0.2"), N(), N(), N(), N(), N(), T("other"))))
	changed := sinktest.Row(T("0.1"), T("0.1"), T(`{"a": [1, 2]}`), T(`\x00ff`), T("2024-01-01 00:00:00+02"), T("1.50"), T("changed"))
	mustApply(t, s, 20, sinktest.UpdOld(tb, 11, source.OldFull, row, changed))
	wantMyQuery(t, my, "NULL:1,changed:1,other:1", "SELECT GROUP_CONCAT(CONCAT(COALESCE(t, 'NULL'), ':', c) ORDER BY t) FROM (SELECT t, COUNT(*) c FROM full_types GROUP BY t) x")
	mustApply(t, s, 30, sinktest.Del(tb, 21, source.OldFull, row), sinktest.Del(tb, 22, source.OldFull, changed),
		sinktest.Del(tb, 23, source.OldFull, sinktest.Row(T("0.2"), N(), N(), N(), N(), N(), T("other"))))
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM full_types")
	err := pgApply(t, s, 40, sinktest.Del(tb, 31, source.OldFull, row))
	if err == nil || !strings.Contains(err.Error(), "full_types") || !strings.Contains(err.Error(), "row not found") {
		t.Fatalf("deleting a row that is gone: %v", err)
	}
}

// TestSinkMySQLReconnect: a session the server killed fails the
// transaction in hand as retryable; the next one reconnects.
func TestSinkMySQLReconnect(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	items := sinktest.ItemsTable("public", "reconnect")
	ensure(t, s, items)
	T, N := sinktest.T, sinktest.N
	mustApply(t, s, 10, sinktest.Ins(items, 1, sinktest.Row(T("1"), N(), N())))
	ids := my.QueryString(t, `SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`)
	for id := range strings.SplitSeq(ids, ",") {
		if id != "" {
			my.Exec(t, "KILL CONNECTION "+id)
		}
	}
	err := pgApply(t, s, 20, sinktest.Ins(items, 11, sinktest.Row(T("2"), N(), N())))
	if err == nil || !errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("a transaction on a killed session: %v, want a retryable error", err)
	}
	mustApply(t, s, 30, sinktest.Ins(items, 21, sinktest.Row(T("2"), N(), N())))
	wantMyQuery(t, my, "2", "SELECT COUNT(*) FROM reconnect")
	if p, _ := s.Progress(t.Context(), sinktest.Slot); p.LSN != 30 {
		t.Fatalf("progress %s, want 0/1E", p.LSN)
	}
}

// TestSinkMySQLValueOverPacket: a row larger than the server's
// max_allowed_packet is refused with the setting to raise, not retried.
func TestSinkMySQLValueOverPacket(t *testing.T) {
	my, _ := myTarget(t, mysql.Options{})
	my.Exec(t, "SET GLOBAL max_allowed_packet = 1048576")
	t.Cleanup(func() { my.Exec(t, "SET GLOBAL max_allowed_packet = 16777216") })
	s := (&mySinkTarget{my: my}).open(t)
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	my.Exec(t, "SET GLOBAL max_allowed_packet = 16777216")
	items := sinktest.ItemsTable("public", "big")
	ensure(t, s, items)
	big := strings.Repeat("x", 2<<20)
	err := pgApply(t, s, 10, sinktest.Ins(items, 5, sinktest.Row(sinktest.T("1"), sinktest.T(big), sinktest.N())))
	if err == nil || !strings.Contains(err.Error(), "max_allowed_packet") || !strings.Contains(err.Error(), "big") || errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("a 2 MiB row over a 1 MiB packet: %v", err)
	}
	// Smaller rows still go, in batches under the limit.
	var chs []*sink.Change
	for i := range 40 {
		chs = append(chs, sinktest.Ins(items, source.LSN(10+i), sinktest.Row(sinktest.T(strconv.Itoa(i)), sinktest.T(strings.Repeat("y", 100<<10)), sinktest.N())))
	}
	mustApply(t, s, 100, chs...)
	wantMyQuery(t, my, "40", "SELECT COUNT(*) FROM big")
}
