package integration

// Helpers of the end-to-end tests with a MariaDB target (e2e_mysql_test.go):
// the set-up, waits on the target, and a comparison of the source and the
// target row by row that does not share verify's code: each side's values
// brought to one form by SQL and by a few rules of the mapping (DESIGN.md).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// myE2E is one replication set-up into MariaDB: a source database, a
// MariaDB database, a slot and a publication of its own.
type myE2E struct {
	t     testing.TB
	bin   string
	src   *harness.PG
	my    *harness.MY
	db    *sql.DB // the test's own queries on the target
	slot  string
	pub   string
	tmp   string
	extra []string
}

// myE2EPair makes a fresh source of major and a fresh MariaDB database.
func myE2EPair(t *testing.T, major int) *myE2E {
	t.Helper()
	src := harness.Postgres(t, major)
	my := harness.MariaDB(t)
	n := e2eSerial.Add(1)
	return &myE2E{
		t:    t,
		bin:  e2eBinary(t),
		src:  src,
		my:   my,
		db:   my.Open(t),
		slot: fmt.Sprintf("e2e_my_slot_%d", n),
		pub:  fmt.Sprintf("e2e_my_pub_%d", n),
		tmp:  t.TempDir(),
	}
}

// with is the set-up with more settings.
func (e *myE2E) with(settings ...string) *myE2E {
	x := *e
	x.extra = append(slices.Clone(e.extra), settings...)
	return &x
}

func (e *myE2E) environ() []string {
	return e2eEnviron(e.tmp, e.src.URL(), e.my.URL(), e.slot, e.pub, e.extra)
}

// start runs `pgrelay args...` in the background (e2eStart).
func (e *myE2E) start(args ...string) *e2eProc {
	e.t.Helper()
	return e2eStart(e.t, e.bin, e.environ(), args...)
}

func (e *myE2E) run(timeout time.Duration, args ...string) (*e2eProc, int) {
	e.t.Helper()
	p := e.start(args...)
	return p, p.wait(e.t, timeout)
}

func (e *myE2E) mustRun(timeout time.Duration, args ...string) *e2eProc {
	e.t.Helper()
	p, code := e.run(timeout, args...)
	if code != 0 {
		e.t.Fatalf("%s exited %d, want 0; log:\n%s", p.name, code, p.logs())
	}
	return p
}

// query returns the first column of the first row of query on the target as
// text ("" for NULL, or for no row).
func (e *myE2E) query(t testing.TB, query string, args ...any) string {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	var v sql.NullString
	err := e.db.QueryRowContext(ctx, query, args...).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("target query %s: %v", query, err)
	}
	return v.String
}

// wait polls the target until query (one value) returns "1". Errors (a
// table not created yet) count as not yet; p, when not nil, is the running
// pgrelay whose exit ends the wait early.
func (e *myE2E) wait(t testing.TB, p *e2eProc, timeout time.Duration, what, query string, args ...any) {
	t.Helper()
	ctx := e2eCtx(t, timeout+10*time.Second)
	err := harness.Await(timeout, 50*time.Millisecond, what+" on the target", func() error {
		var v sql.NullString
		err := e.db.QueryRowContext(ctx, query, args...).Scan(&v)
		if err == nil && v.String != "1" {
			err = fmt.Errorf("the query says %q", v.String)
		}
		if err != nil && p != nil && p.exited() {
			return harness.Abort(fmt.Errorf("%s exited with %v", p.name, p.err))
		}
		return err
	})
	if err != nil {
		msg := err.Error()
		if p != nil {
			msg += "; log of " + p.name + ":\n" + p.logs()
		}
		t.Fatal(msg)
	}
}

// sync writes marker rows on the source and waits until the target has the
// last: everything committed on the source before is on the target then.
func (e *myE2E) sync(t testing.TB, p *e2eProc, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	e.src.Exec(t, "CREATE TABLE IF NOT EXISTS public.e2e_sync (token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
	for range 2 {
		token := fmt.Sprintf("sync-%d-%d", time.Now().UnixNano(), rand.Int64())
		e.src.Exec(t, "INSERT INTO public.e2e_sync (token) VALUES ($1)", token)
		e.wait(t, p, timeout-time.Since(start), "marker "+token, "SELECT COUNT(*) FROM e2e_sync WHERE token = ?", token)
	}
}

// progress is the slot's stored position on the target; 0 when none.
func (e *myE2E) progress(t testing.TB) pglogrepl.LSN {
	t.Helper()
	if e.query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgrelay_progress'") != "1" {
		return 0
	}
	s := e.query(t, "SELECT lsn FROM pgrelay_progress WHERE slot = ?", e.slot)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("pgrelay_progress.lsn %q: %v", s, err)
	}
	return pglogrepl.LSN(n)
}

// crashCheck runs after a kill: the stored position never goes back, and the
// source was never told more than the target durably holds. It reports
// whether the position moved since the last kill.
func (e *myE2E) crashCheck(t testing.TB, last *pglogrepl.LSN, round int) bool {
	t.Helper()
	progress := e.progress(t)
	if progress < *last {
		t.Errorf("kill %d: stored progress went back from %s to %s", round, *last, progress)
	}
	advanced := progress > *last
	*last = progress
	if progress == 0 {
		return false
	}
	s := e.src.QueryString(t, "SELECT coalesce((SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1), '0/0')", e.slot)
	if confirmed := e2eLSN(t, "confirmed_flush_lsn", s); confirmed > progress {
		t.Errorf("kill %d: slot confirmed %s, past what the target holds (%s): feedback before durability", round, confirmed, progress)
	}
	return advanced
}

// verify runs `pgrelay verify` and fails the test unless it finds every
// table equal (exit 0); it returns the report.
func (e *myE2E) verify(t testing.TB) string {
	t.Helper()
	p, code := e.run(5*time.Minute, "verify")
	out := strings.Join(p.out.all(), "\n")
	if code != 0 {
		t.Errorf("pgrelay verify exited %d, want 0 (equal):\n%s\nlog:\n%s", code, out, p.logs())
	}
	// Schema public maps to the target's database: no table was renamed.
	if l, ok := p.findLog("still has the name the source table had"); ok {
		t.Errorf("verify takes a table's target name for a rename: %v", l)
	}
	return out
}

// myColumn is a published column: its name, the source type it has (a
// domain's base type), and the type's kind for the comparison.
type myColumn struct {
	name, typ string
	kind      string // the typname of the base type, or "array"
}

// publishedTables lists the publication's tables (schema, name).
func (e *myE2E) publishedTables(t testing.TB, ctx context.Context, src *pgx.Conn) [][2]string {
	t.Helper()
	rows, err := src.Query(ctx, "SELECT schemaname::text, tablename::text FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2", e.pub)
	if err != nil {
		t.Fatalf("compare: list published tables: %v", err)
	}
	var out [][2]string
	var s, n string
	if _, err := pgx.ForEachRow(rows, []any{&s, &n}, func() error { out = append(out, [2]string{s, n}); return nil }); err != nil {
		t.Fatalf("compare: list published tables: %v", err)
	}
	return out
}

// compare checks that every published table holds the same rows on the
// target as on the source. Each value is brought to one form: on the source
// by SQL (booleans as 1/0, bytea and times spelled as MySQL spells them,
// timestamptz in UTC, arrays as JSON), on the target as MySQL returns it,
// and then by rules both sides share (decimal zeros, float precision,
// trailing blanks of char(n), JSON documents compared as values). Rows are
// compared as multisets. It returns the number of rows compared.
func (e *myE2E) compare(t testing.TB) int {
	t.Helper()
	ctx := e2eCtx(t, 5*time.Minute)
	src := e.src.Conn(t)
	if _, err := src.Exec(ctx, e2eSessionSQL); err != nil {
		t.Fatalf("compare: session settings: %v", err)
	}
	total := 0
	for _, tb := range e.publishedTables(t, ctx, src) {
		cols := e.columns(t, ctx, src, tb)
		srcRows := e.sourceRows(t, ctx, src, tb, cols)
		tgtRows := e.targetRows(t, ctx, tb, cols)
		total += len(srcRows)
		if d := myRowDiff(srcRows, tgtRows); d != "" {
			t.Errorf("table %s.%s differs: %s", tb[0], tb[1], d)
		}
	}
	return total
}

func (e *myE2E) columns(t testing.TB, ctx context.Context, src *pgx.Conn, tb [2]string) []myColumn {
	t.Helper()
	rows, err := src.Query(ctx, `SELECT a.attname::text, format_type(b.oid, CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END),
			CASE WHEN b.typcategory = 'A' THEN 'array' ELSE b.typname::text END
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
		WHERE a.attrelid = (quote_ident($1) || '.' || quote_ident($2))::regclass AND a.attnum > 0 AND NOT a.attisdropped
			AND a.attgenerated = ''
		ORDER BY a.attnum`, tb[0], tb[1])
	if err != nil {
		t.Fatalf("compare: columns of %s.%s: %v", tb[0], tb[1], err)
	}
	var cols []myColumn
	var c myColumn
	if _, err := pgx.ForEachRow(rows, []any{&c.name, &c.typ, &c.kind}, func() error { cols = append(cols, c); return nil }); err != nil {
		t.Fatalf("compare: columns of %s.%s: %v", tb[0], tb[1], err)
	}
	return cols
}

// sourceExpr is how the source spells column c for the comparison.
func sourceExpr(c myColumn) string {
	id := pgx.Identifier{c.name}.Sanitize()
	switch c.kind {
	case "bool":
		return "CASE WHEN " + id + " THEN '1' WHEN NOT " + id + " THEN '0' END"
	case "bytea":
		return "encode(" + id + ", 'hex')"
	case "timestamptz":
		return "to_char(" + id + " AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
	case "timestamp":
		return "to_char(" + id + ", 'YYYY-MM-DD HH24:MI:SS.US')"
	case "array":
		return "to_json(" + id + ")::text"
	}
	// The output function's form (inet's ::text adds /32).
	return "CASE WHEN " + id + " IS NOT NULL THEN format('%s', " + id + ") END"
}

// targetExpr is how the target spells column c for the comparison.
func targetExpr(c myColumn) string {
	id := myQuote(c.name)
	switch c.kind {
	case "bytea":
		return "LOWER(HEX(" + id + "))"
	case "timestamptz", "timestamp":
		return "DATE_FORMAT(" + id + ", '%Y-%m-%d %H:%i:%s.%f')"
	case "time":
		return "TIME_FORMAT(" + id + ", '%H:%i:%s.%f')"
	case "float4":
		return "CAST(" + id + " AS DOUBLE)"
	}
	return id
}

// myNull stands for NULL in compared rows.
const myNull = "\x00NULL"

// normalize brings a value of column c, from either side, to the form both
// compare in.
func normalize(c myColumn, v string) string {
	if v == myNull {
		return v
	}
	switch c.kind {
	case "numeric":
		return trimDecimal(v)
	case "time", "timestamp", "timestamptz":
		return trimDecimal(v)
	case "float4":
		f, err := strconv.ParseFloat(v, 32)
		if err != nil {
			return "bad float4 " + v
		}
		return strconv.FormatFloat(float64(float32(f)), 'g', -1, 32)
	case "float8":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "bad float8 " + v
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case "bpchar":
		return strings.TrimRight(v, " ")
	case "json", "jsonb", "array":
		return canonicalJSON(v)
	}
	return v
}

// trimDecimal drops the zeros that end a decimal fraction, and the point.
func trimDecimal(v string) string {
	if !strings.Contains(v, ".") {
		return v
	}
	v = strings.TrimRight(v, "0")
	return strings.TrimSuffix(v, ".")
}

// canonicalJSON is a JSON document with its keys sorted and its numbers in
// one exact form.
func canonicalJSON(v string) string {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "bad JSON " + v
	}
	var norm func(any) any
	norm = func(x any) any {
		switch y := x.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(string(y))
			if !ok {
				return "bad number " + string(y)
			}
			return "num:" + r.RatString()
		case []any:
			for i := range y {
				y[i] = norm(y[i])
			}
		case map[string]any:
			for k := range y {
				y[k] = norm(y[k])
			}
		}
		return x
	}
	out, err := json.Marshal(norm(doc))
	if err != nil {
		return "bad JSON " + v
	}
	return string(out)
}

func (e *myE2E) sourceRows(t testing.TB, ctx context.Context, src *pgx.Conn, tb [2]string, cols []myColumn) [][]string {
	t.Helper()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = sourceExpr(c)
	}
	if len(sel) == 0 {
		sel = []string{"''"}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM ONLY " + pgx.Identifier{tb[0], tb[1]}.Sanitize()
	rows, err := src.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("compare: %s: %v", q, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals := rows.RawValues()
		row := make([]string, len(cols))
		for i := range cols {
			if vals[i] == nil {
				row[i] = myNull
			} else {
				row[i] = normalize(cols[i], string(vals[i]))
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("compare: %s: %v", q, err)
	}
	return out
}

func (e *myE2E) targetRows(t testing.TB, ctx context.Context, tb [2]string, cols []myColumn) [][]string {
	t.Helper()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = targetExpr(c)
	}
	if len(sel) == 0 {
		sel = []string{"''"}
	}
	db := tb[0]
	if db == "public" {
		db = e.my.DB
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + myQuote(db) + "." + myQuote(tb[1])
	rows, err := e.db.QueryContext(ctx, q)
	if err != nil {
		t.Errorf("compare: target table %s.%s: %v", db, tb[1], err)
		return nil
	}
	defer rows.Close()
	var out [][]string
	raw := make([]sql.RawBytes, len(sel))
	dest := make([]any, len(sel))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("compare: %s: %v", q, err)
		}
		row := make([]string, len(cols))
		for i := range cols {
			if raw[i] == nil {
				row[i] = myNull
			} else {
				row[i] = normalize(cols[i], string(raw[i]))
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("compare: %s: %v", q, err)
	}
	return out
}

// myRowDiff compares two multisets of rows; "" when equal, otherwise the
// counts and up to 5 rows only on each side.
func myRowDiff(src, tgt [][]string) string {
	key := func(r []string) string { return strings.Join(r, "\x1f") }
	count := map[string]int{}
	for _, r := range src {
		count[key(r)]++
	}
	for _, r := range tgt {
		count[key(r)]--
	}
	var onlySrc, onlyTgt []string
	for k, n := range count {
		for ; n > 0; n-- {
			onlySrc = append(onlySrc, k)
		}
		for ; n < 0; n++ {
			onlyTgt = append(onlyTgt, k)
		}
	}
	if len(onlySrc) == 0 && len(onlyTgt) == 0 {
		return ""
	}
	slices.Sort(onlySrc)
	slices.Sort(onlyTgt)
	show := func(rows []string) string {
		var b bytes.Buffer
		for i, r := range rows {
			if i == 5 {
				fmt.Fprintf(&b, "\n      … %d more", len(rows)-5)
				break
			}
			fmt.Fprintf(&b, "\n      %s", e2eShorten(strings.ReplaceAll(r, "\x1f", " | ")))
		}
		return b.String()
	}
	return fmt.Sprintf("source %d rows, target %d; only on the source:%s\n    only on the target:%s", len(src), len(tgt), show(onlySrc), show(onlyTgt))
}
