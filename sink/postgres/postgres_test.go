package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

func TestAppendCopyText(t *testing.T) {
	cases := map[string]string{
		"plain":            "plain",
		"":                 "",
		"a\tb":             `a\tb`,
		"a\nb\r\n":         `a\nb\r\n`,
		`back\slash`:       `back\\slash`,
		`\N`:               `\\N`,
		"\\.":              `\\.`,
		"ünï 日本 🎉":         "ünï 日本 🎉",
		"\\\t\n\r\\":       `\\\t\n\r\\`,
		"trailing\\":       `trailing\\`,
		"\x01\x7f control": "\x01\x7f control",
	}
	for in, want := range cases {
		if got := string(appendCopyText(nil, []byte(in))); got != want {
			t.Errorf("appendCopyText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInsertRunEncode(t *testing.T) {
	tb := &schema.Table{Schema: "s", Name: "t", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{{Name: "a"}, {Name: "b"}}}
	ts := newTableStatements(schema.Postgres, tb)
	var r insertRun
	for _, row := range []source.Tuple{
		{{Kind: source.ValueText, Data: []byte("1")}, {Kind: source.ValueNull}},
		{{Kind: source.ValueText, Data: []byte("x\ty")}, {Kind: source.ValueText, Data: []byte{}}},
	} {
		if !r.add(ts, &sink.Change{Kind: sink.Insert, Table: tb, New: row}) {
			t.Fatal("text row refused")
		}
	}
	if r.add(ts, &sink.Change{Kind: sink.Insert, Table: tb, New: source.Tuple{{Kind: source.ValueBinary, Data: []byte{1}}, {Kind: source.ValueNull}}}) {
		t.Fatal("binary row accepted into a COPY run")
	}
	if got, want := string(r.encode(nil)), "1\t\\N\nx\\ty\t\n"; got != want {
		t.Fatalf("encode = %q, want %q", got, want)
	}
	if ts.copySQL != `COPY "s"."t" ("a", "b") FROM STDIN` {
		t.Fatalf("copy SQL %q", ts.copySQL)
	}
}

func table(identity byte, cols ...schema.Column) *schema.Table {
	return &schema.Table{Schema: "public", Name: "T x", ReplicaIdentity: identity, Columns: cols}
}

func v(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }

var (
	null      = source.Value{Kind: source.ValueNull}
	unchanged = source.Value{Kind: source.ValueUnchanged}
)

// TestStatementSQL pins the SQL generated for each change shape.
func TestStatementSQL(t *testing.T) {
	keyed := table(schema.IdentityDefault,
		schema.Column{Name: "id", Key: true, TypeOID: 20},
		schema.Column{Name: "Name", TypeOID: 25},
		schema.Column{Name: `q"t`, TypeOID: 25})
	full := table(schema.IdentityFull,
		schema.Column{Name: "a", TypeOID: 20},
		schema.Column{Name: "j", TypeOID: 114},
		schema.Column{Name: "d", TypeOID: 99999, Type: &schema.Type{Category: schema.CategoryDomain, BaseOID: 600}})
	comp := &schema.Type{Category: schema.CategoryComposite}
	compKeyed := table(schema.IdentityDefault,
		schema.Column{Name: "k", Key: true, TypeOID: 99990, TypeName: "public.comp", Type: comp},
		schema.Column{Name: "v", TypeOID: 23})
	compFull := table(schema.IdentityFull,
		schema.Column{Name: "k", TypeOID: 99990, TypeName: "public.comp", Type: comp},
		schema.Column{Name: "dk", TypeOID: 99991, TypeName: "public.dcomp", Type: &schema.Type{Category: schema.CategoryDomain, BaseOID: 99990}},
		schema.Column{Name: "ak", TypeOID: 99992, TypeName: "public.comp[]", Type: &schema.Type{Category: schema.CategoryArray, BaseOID: 99990}})
	collated := table(schema.IdentityFull,
		schema.Column{Name: "c", TypeOID: 25, Collation: "public.nd"},
		schema.Column{Name: "p", TypeOID: 25},
		schema.Column{Name: "d", TypeOID: 99993, TypeName: "public.ndtext", Type: &schema.Type{Category: schema.CategoryDomain, BaseOID: 25}},
		schema.Column{Name: "u", TypeOID: 99994, TypeName: "public.citext", Type: &schema.Type{Category: schema.CategoryBase, BaseOID: 99994}, Collation: "public.nd"})
	cases := []struct {
		name    string
		tb      *schema.Table
		ch      sink.Change
		sql     string
		oids    []uint32
		wantErr string
	}{
		{name: "update all", tb: keyed,
			ch:  sink.Change{Kind: sink.Update, New: source.Tuple{v("1"), v("n"), null}},
			sql: `UPDATE "public"."T x" SET "id" = $1, "Name" = $2, "q""t" = $3 WHERE "id" = $4`, oids: []uint32{0, 0, 0, 0}},
		{name: "update unchanged toast left out", tb: keyed,
			ch:  sink.Change{Kind: sink.Update, New: source.Tuple{v("1"), unchanged, v("x")}},
			sql: `UPDATE "public"."T x" SET "id" = $1, "q""t" = $2 WHERE "id" = $3`, oids: []uint32{0, 0, 0}},
		{name: "key change by old key tuple", tb: keyed,
			ch:  sink.Change{Kind: sink.Update, OldKind: source.OldKey, Old: source.Tuple{v("1"), null, null}, New: source.Tuple{v("2"), unchanged, unchanged}},
			sql: `UPDATE "public"."T x" SET "id" = $1 WHERE "id" = $2`, oids: []uint32{0, 0}},
		{name: "delete by key", tb: keyed,
			ch:  sink.Change{Kind: sink.Delete, OldKind: source.OldKey, Old: source.Tuple{v("1"), null, null}},
			sql: `DELETE FROM "public"."T x" WHERE "id" = $1`, oids: []uint32{0}},
		{name: "full update with nulls and text-compared types", tb: full,
			ch:   sink.Change{Kind: sink.Update, OldKind: source.OldFull, Old: source.Tuple{null, v("{}"), v("(1,2)")}, New: source.Tuple{v("1"), v("{}"), v("(1,2)")}},
			sql:  `UPDATE "public"."T x" SET "a" = $1, "j" = $2, "d" = $3 WHERE ctid = coalesce((SELECT ctid FROM "public"."T x" WHERE "a" IS NULL AND "j"::text = $4::text AND "d"::text = $5::text LIMIT 1 FOR UPDATE SKIP LOCKED), (SELECT ctid FROM "public"."T x" WHERE "a" IS NULL AND "j"::text = $4::text AND "d"::text = $5::text LIMIT 1))`,
			oids: []uint32{0, 0, 0, 114, 600}},
		{name: "full delete skips unsent old values", tb: full,
			ch:  sink.Change{Kind: sink.Delete, OldKind: source.OldFull, Old: source.Tuple{v("1"), unchanged, null}},
			sql: `DELETE FROM "public"."T x" WHERE ctid = coalesce((SELECT ctid FROM "public"."T x" WHERE "a" = $1 AND "d" IS NULL LIMIT 1 FOR UPDATE SKIP LOCKED), (SELECT ctid FROM "public"."T x" WHERE "a" = $1 AND "d" IS NULL LIMIT 1))`, oids: []uint32{0}},
		{name: "composite key cast to its type", tb: compKeyed,
			ch:  sink.Change{Kind: sink.Update, New: source.Tuple{v("(1,a)"), v("2")}},
			sql: `UPDATE "public"."T x" SET "k" = $1, "v" = $2 WHERE "k" = $3::public.comp`, oids: []uint32{0, 0, 0}},
		{name: "composite key delete", tb: compKeyed,
			ch:  sink.Change{Kind: sink.Delete, OldKind: source.OldKey, Old: source.Tuple{v("(1,a)"), null}},
			sql: `DELETE FROM "public"."T x" WHERE "k" = $1::public.comp`, oids: []uint32{0}},
		{name: "full composite and domain cast, array not", tb: compFull,
			ch:   sink.Change{Kind: sink.Delete, OldKind: source.OldFull, Old: source.Tuple{v("(1,a)"), v("(2,b)"), v(`{"(3,c)"}`)}},
			sql:  `DELETE FROM "public"."T x" WHERE ctid = coalesce((SELECT ctid FROM "public"."T x" WHERE "k" = $1::public.comp AND "k"::text = $1::public.comp::text AND "dk" = $2::public.dcomp AND "dk"::text = $2::public.dcomp::text AND "ak" = $3 AND "ak"::text = $3::text LIMIT 1 FOR UPDATE SKIP LOCKED), (SELECT ctid FROM "public"."T x" WHERE "k" = $1::public.comp AND "k"::text = $1::public.comp::text AND "dk" = $2::public.dcomp AND "dk"::text = $2::public.dcomp::text AND "ak" = $3 AND "ak"::text = $3::text LIMIT 1))`,
			oids: []uint32{0, 0, 0}},
		{name: "full: columns of another collation also compared byte for byte", tb: collated,
			ch:   sink.Change{Kind: sink.Delete, OldKind: source.OldFull, Old: source.Tuple{v("ä"), v("b"), v("c"), v("d")}},
			sql:  `DELETE FROM "public"."T x" WHERE ctid = coalesce((SELECT ctid FROM "public"."T x" WHERE "c" = $1 AND "c" COLLATE pg_catalog."C" = $1 AND "p" = $2 AND "d" = $3::public.ndtext AND "d" COLLATE pg_catalog."C" = $3::public.ndtext AND "u" = $4 AND "u"::text COLLATE pg_catalog."C" = $4::text LIMIT 1 FOR UPDATE SKIP LOCKED), (SELECT ctid FROM "public"."T x" WHERE "c" = $1 AND "c" COLLATE pg_catalog."C" = $1 AND "p" = $2 AND "d" = $3::public.ndtext AND "d" COLLATE pg_catalog."C" = $3::public.ndtext AND "u" = $4 AND "u"::text COLLATE pg_catalog."C" = $4::text LIMIT 1))`,
			oids: []uint32{0, 0, 0, 0}},
		{name: "key not sent", tb: keyed,
			ch:      sink.Change{Kind: sink.Update, New: source.Tuple{unchanged, v("n"), null}},
			wantErr: `key column "id" was not sent`},
		{name: "wrong arity", tb: keyed,
			ch:      sink.Change{Kind: sink.Update, New: source.Tuple{v("1")}},
			wantErr: "new row has 1 values, table has 3 columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTableStatements(schema.Postgres, c.tb)
			locate := c.ch.Old
			if c.ch.OldKind == source.OldNone {
				locate = c.ch.New
			}
			key, err := ts.shapeKey(nil, &c.ch, locate)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := ts.buildShape(key)
			if st.sql != c.sql {
				t.Fatalf("SQL\n got %s\nwant %s", st.sql, c.sql)
			}
			if fmt.Sprint(st.paramOIDs) != fmt.Sprint(c.oids) {
				t.Fatalf("param OIDs %v, want %v", st.paramOIDs, c.oids)
			}
		})
	}
	if got := newTableStatements(schema.Postgres, keyed).insertStatement().sql; got != `INSERT INTO "public"."T x" ("id", "Name", "q""t") VALUES ($1, $2, $3)` {
		t.Fatalf("insert SQL %s", got)
	}
}

func TestKeyText(t *testing.T) {
	tb := table(schema.IdentityIndex, schema.Column{Name: "a", Key: true}, schema.Column{Name: "x"}, schema.Column{Name: "b", Key: true})
	ts := newTableStatements(schema.Postgres, tb)
	got := string(ts.keyText(nil, source.Tuple{v("1"), null, v(strings.Repeat("z", 100))}))
	want := "(a, b)=(1, " + strings.Repeat("z", 64) + "…)"
	if got != want {
		t.Fatalf("keyText = %q, want %q", got, want)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err       error
		lost      bool
		retryable bool
	}{
		{&pgconn.PgError{Code: "40001"}, false, true},
		{&pgconn.PgError{Code: "40P01"}, false, true},
		{&pgconn.PgError{Code: "57P01"}, true, true},
		{&pgconn.PgError{Code: "08006"}, true, true},
		{&pgconn.PgError{Code: "23505"}, false, false},
		{&pgconn.PgError{Code: "22P02"}, true, false},
		{io.ErrUnexpectedEOF, true, true},
		{io.ErrUnexpectedEOF, false, false},
		{fmt.Errorf("wrapped: %w", errors.Join(errors.New("x"), &pgconn.PgError{Code: "40001"})), false, true},
	} {
		err := classify(changeError(sink.ChangeError{Op: "insert into", Table: `"t"`, Err: c.err}), c.lost)
		if got := errors.Is(err, sink.ErrRetryable); got != c.retryable {
			t.Errorf("classify(%v, lost=%v): retryable %v, want %v", c.err, c.lost, got, c.retryable)
		}
	}
}

// TestClassifyReadOnly: a write a read-only target refuses is marked so, and
// is not retried as a whole transaction.
func TestClassifyReadOnly(t *testing.T) {
	err := classify(changeError(sink.ChangeError{Op: "insert into", Err: &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}}), false)
	if !errors.Is(err, sink.ErrReadOnly) || errors.Is(err, sink.ErrRetryable) {
		t.Errorf("classify(25006): read-only %v, retryable %v; want true, false", errors.Is(err, sink.ErrReadOnly), errors.Is(err, sink.ErrRetryable))
	}
	if err := classify(errors.New("x"), false); errors.Is(err, sink.ErrReadOnly) {
		t.Errorf("another error is marked read-only")
	}
}

// A COPY or batch cut short by the stop signal reads as the cancellation, not
// as the closed connection; the target's own errors stay faults.
func TestCutBy(t *testing.T) {
	closed := errors.New("write tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection")
	pgErr := &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := cutBy(live, closed); err != closed {
		t.Errorf("live context: %v, want the error unchanged", err)
	}
	if err := cutBy(ended, closed); !errors.Is(err, context.Canceled) || !errors.Is(err, closed) {
		t.Errorf("ended context, connection closed by the cancel: %v, want it to wrap both", err)
	}
	if err := cutBy(ended, pgErr); errors.Is(err, context.Canceled) {
		t.Errorf("ended context, the target's own error: %v, want it unchanged (a fault, not a stop)", err)
	}
	already := fmt.Errorf("copy: %w", context.Canceled)
	if err := cutBy(ended, already); err != already {
		t.Errorf("ended context, error already the cancellation: %v, want it unchanged", err)
	}
}

// A change's value the target refuses (class 22, or a domain's check) is marked
// for the applier, which retries it only after a type changed on the source.
func TestClassifyValueRejected(t *testing.T) {
	for _, c := range []struct {
		err      error
		rejected bool
	}{
		{changeError(sink.ChangeError{Op: "insert into", Err: &pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type integer: "y"`}}), true},
		{changeError(sink.ChangeError{Op: "update", Err: &pgconn.PgError{Code: "23514"}}), true},
		{changeError(sink.ChangeError{Op: "insert into", Err: &pgconn.PgError{Code: "22003"}}), true},
		{changeError(sink.ChangeError{Op: "insert into", Err: &pgconn.PgError{Code: "23505"}}), false},
		{changeError(sink.ChangeError{Op: "insert into", Err: &pgconn.PgError{Code: "22P02", Message: "malformed record literal"}}), false}, // retryable already
		{fmt.Errorf("sink/postgres: ensure table: %w", &pgconn.PgError{Code: "22P02"}), false},                                              // not a change's value
	} {
		err := classify(c.err, false)
		if got := errors.Is(err, sink.ErrValueRejected); got != c.rejected {
			t.Errorf("classify(%v): value rejected %v, want %v", c.err, got, c.rejected)
		}
	}
}

func TestChangeErrorText(t *testing.T) {
	err := changeError(sink.ChangeError{Op: "insert into", Table: `"public"."t"`, LSN: 0x16B3748,
		Err: &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: `duplicate key value violates unique constraint "t_pkey"`}})
	want := `sink/postgres: insert into "public"."t" at source LSN 0/16B3748: duplicate key value violates unique constraint "t_pkey" (SQLSTATE 23505)`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatal("ChangeError does not unwrap to the PgError")
	}
	set := changeError(sink.ChangeError{Op: "update", Table: `"t"`, LSN: 0x10, LastLSN: 0x20,
		Err: &pgconn.PgError{Code: "23514", Message: `new row for relation "t" violates check constraint "c"`, Detail: "Failing row contains (5,\n -1)."}})
	if got, want := set.Error(), `sink/postgres: update "t" at source LSN 0/10..0/20: new row for relation "t" violates check constraint "c" (SQLSTATE 23514): Failing row contains (5, -1).`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	run := changeError(sink.ChangeError{Op: "copy into", Table: `"t"`, LSN: 0x10, LastLSN: 0x20, Err: errors.New("boom")})
	if got := run.Error(); got != `sink/postgres: copy into "t" at source LSN 0/10..0/20: boom` {
		t.Fatalf("got %s", got)
	}
	// Classes 22 and 23 are the target refusing the row itself.
	if !errors.Is(err, sink.ErrChangeRefused) || !errors.Is(set, sink.ErrChangeRefused) || errors.Is(run, sink.ErrChangeRefused) {
		t.Errorf("refused: unique %v, check %v, other %v; want true, true, false",
			errors.Is(err, sink.ErrChangeRefused), errors.Is(set, sink.ErrChangeRefused), errors.Is(run, sink.ErrChangeRefused))
	}
}

func TestCopyLine(t *testing.T) {
	for _, c := range []struct {
		err    error
		line   int
		column string
	}{
		{changeError(sink.ChangeError{Err: &pgconn.PgError{Code: "23505", Where: `COPY pipe, line 151`}}), 151, ""},
		{&pgconn.PgError{Where: `COPY t, line 3, column id: "x"`}, 3, "id"},
		{&pgconn.PgError{Where: `COPY t, line 4, column Odd: "Name": "x"`}, 4, "Odd"},
		{&pgconn.PgError{Where: `COPY t, line 5, column b`}, 5, "b"},
		{errors.New("x"), 0, ""},
	} {
		if line, column := copyLine(c.err); line != c.line || column != c.column {
			t.Errorf("copyLine(%v) = %d, %q, want %d, %q", c.err, line, column, c.line, c.column)
		}
	}
	// The column is named, and for a name the target lacks, what to do.
	err := changeError(sink.ChangeError{Op: "copy (input line 1) into", Table: `"public"."rv"`,
		Err: &pgconn.PgError{Code: "42P01", Message: `relation "x" does not exist`}})
	refusedColumn(err, "r")
	if got, want := err.Error(), `sink/postgres: copy (input line 1) into "public"."rv" column "r": relation "x" does not exist (SQLSTATE 42P01); the column's values name objects`; !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s…", got, want)
	}
}

func TestOptionsValidate(t *testing.T) {
	var o Options
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.BatchSize != 1000 || o.CopyThreshold != 64 || o.BatchBytes == 0 || o.CopyBytes == 0 {
		t.Fatalf("defaults %+v", o)
	}
	bad := Options{BatchSize: -1}
	if err := bad.Validate(); err == nil {
		t.Fatal("negative BatchSize accepted")
	}
	off := Options{CopyThreshold: -1}
	if err := off.Validate(); err != nil || off.CopyThreshold != -1 {
		t.Fatalf("CopyThreshold -1 (off): %+v %v", off, err)
	}
}

func TestBinaryOK(t *testing.T) {
	if !binaryOK(&schema.Column{TypeOID: 23}) {
		t.Fatal("int4 refused")
	}
	if !binaryOK(&schema.Column{TypeOID: 50000, Type: &schema.Type{Category: schema.CategoryEnum}}) {
		t.Fatal("enum refused")
	}
	if binaryOK(&schema.Column{TypeOID: 50001, Type: &schema.Type{Category: schema.CategoryComposite}}) {
		t.Fatal("composite accepted: its binary form carries OIDs of the source")
	}
}

func TestAppendArrayElement(t *testing.T) {
	cases := []struct {
		v    source.Value
		want string
	}{
		{source.Value{Kind: source.ValueNull}, `NULL`},
		{source.Value{Kind: source.ValueText, Data: []byte("NULL")}, `"NULL"`},
		{source.Value{Kind: source.ValueText}, `""`},
		{source.Value{Kind: source.ValueText, Data: []byte(`a"b\c, {d}`)}, `"a\"b\\c, {d}"`},
		{source.Value{Kind: source.ValueText, Data: []byte(" pad ")}, `" pad "`},
	}
	for _, c := range cases {
		if got := string(appendArrayElement(nil, c.v)); got != c.want {
			t.Errorf("appendArrayElement(%q) = %s, want %s", c.v.Data, got, c.want)
		}
	}
}

func TestBuildSet(t *testing.T) {
	tb := &schema.Table{Schema: "s", Name: "t", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{
		{Name: "k", TypeOID: 23, TypeName: "integer", Key: true},
		{Name: "Note", TypeOID: 1042, TypeName: "character(4)"},
		{Name: "big", TypeOID: 25, TypeName: "text"},
	}}
	ts := newTableStatements(schema.Postgres, tb)
	if !ts.setCapable() {
		t.Fatal("a table of integer, character(4) and text may use set statements")
	}
	upd := ts.buildSet([]byte("Uvvu|v"))
	wantSQL := `UPDATE "s"."t" AS d SET "k" = v.c1, "Note" = v.c2 FROM unnest($1::integer[], $2::character(4)[]) AS v(c1, c2) WHERE d."k" = v.c1`
	if upd.sql != wantSQL {
		t.Errorf("update:\n got %s\nwant %s", upd.sql, wantSQL)
	}
	wantFind := `SELECT v.o FROM unnest($1::integer[]) WITH ORDINALITY AS v(c1, o) WHERE NOT EXISTS (SELECT FROM "s"."t" AS d WHERE d."k" = v.c1) ORDER BY v.o LIMIT 1`
	if upd.findSQL != wantFind || fmt.Sprint(upd.keyParams) != "[0]" {
		t.Errorf("update find:\n got %s %v\nwant %s [0]", upd.findSQL, upd.keyParams, wantFind)
	}
	del := ts.buildSet([]byte("Dv"))
	wantSQL = `DELETE FROM "s"."t" AS d USING unnest($1::integer[]) WITH ORDINALITY AS v(c1, o) WHERE d."k" = v.c1 RETURNING v.o`
	if del.sql != wantSQL {
		t.Errorf("delete:\n got %s\nwant %s", del.sql, wantSQL)
	}

	for name, c := range map[string]schema.Column{
		"array":     {Name: "a", TypeOID: 1007, TypeName: "integer[]"},
		"composite": {Name: "a", TypeOID: 70001, TypeName: "public.pair", Type: &schema.Type{Category: schema.CategoryComposite}},
		"json key":  {Name: "a", TypeOID: 114, TypeName: "json", Key: true},
	} {
		tb := &schema.Table{Schema: "s", Name: "t", ReplicaIdentity: schema.IdentityDefault, Columns: []schema.Column{{Name: "k", TypeOID: 23, TypeName: "integer", Key: true}, c}}
		if newTableStatements(schema.Postgres, tb).setCapable() {
			t.Errorf("%s column: set statements allowed", name)
		}
	}
	full := &schema.Table{Schema: "s", Name: "t", ReplicaIdentity: schema.IdentityFull, Columns: []schema.Column{{Name: "k", TypeOID: 23, TypeName: "integer"}}}
	if newTableStatements(schema.Postgres, full).setCapable() {
		t.Error("REPLICA IDENTITY FULL: set statements allowed")
	}
}

func TestSQLHead(t *testing.T) {
	block := "DO $pgrelay$\nBEGIN\n\tIF NOT EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.typname = 'é') THEN\n\t\tCREATE TYPE \"public\".\"é\" AS ENUM ('a', 'b', 'c', 'd', 'e', 'f', 'g');\n\tEND IF;\nEND\n$pgrelay$"
	got := sqlHead(block)
	if strings.Contains(got, "\n") || len([]rune(got)) != 120 || !strings.HasPrefix(got, "DO $pgrelay$ BEGIN IF NOT EXISTS (SELECT") || !strings.HasSuffix(got, "…") {
		t.Errorf("sqlHead = %q", got)
	}
	if got := sqlHead("CREATE SCHEMA IF NOT EXISTS \"x\""); got != "CREATE SCHEMA IF NOT EXISTS \"x\"" {
		t.Errorf("short statement: %q", got)
	}
}

// TestNoPublishedColumns: a table with no published column gets statements
// that name none: INSERT … DEFAULT VALUES, COPY without a column list (a row
// is an empty line), and under REPLICA IDENTITY FULL an update or delete of
// any one row.
func TestNoPublishedColumns(t *testing.T) {
	none := table(schema.IdentityDefault)
	ts := newTableStatements(schema.Postgres, none)
	if got, want := ts.insertStatement().sql, `INSERT INTO "public"."T x" DEFAULT VALUES`; got != want {
		t.Errorf("insert SQL %s, want %s", got, want)
	}
	if got, want := ts.copySQL, `COPY "public"."T x" FROM STDIN`; got != want {
		t.Errorf("copy SQL %s, want %s", got, want)
	}
	var r insertRun
	for range 2 {
		if !r.add(ts, &sink.Change{Kind: sink.Insert, Table: none, New: source.Tuple{}}) {
			t.Fatal("row refused")
		}
	}
	if got := string(r.encode(nil)); got != "\n\n" {
		t.Errorf("encode = %q, want two empty lines", got)
	}

	full := newTableStatements(schema.Postgres, table(schema.IdentityFull))
	for _, c := range []struct {
		ch  sink.Change
		sql string
	}{
		{sink.Change{Kind: sink.Update, OldKind: source.OldFull, Old: source.Tuple{}, New: source.Tuple{}}, `SELECT FROM "public"."T x" LIMIT 1`},
		{sink.Change{Kind: sink.Delete, OldKind: source.OldFull, Old: source.Tuple{}}, `DELETE FROM "public"."T x" WHERE ctid = coalesce((SELECT ctid FROM "public"."T x" WHERE true LIMIT 1 FOR UPDATE SKIP LOCKED), (SELECT ctid FROM "public"."T x" WHERE true LIMIT 1))`},
	} {
		key, err := full.shapeKey(nil, &c.ch, c.ch.Old)
		if err != nil {
			t.Fatal(err)
		}
		if got := full.buildShape(key).sql; got != c.sql {
			t.Errorf("%c SQL %s, want %s", c.ch.Kind, got, c.sql)
		}
	}
}

func TestSequenceBehind(t *testing.T) {
	const max = 1<<63 - 1
	for _, c := range []struct {
		name               string
		inc, last, srcLast int64
		called, srcCalled  bool
		behind             bool
	}{
		{"equal", 1, 10, 10, true, true, false},
		{"target ahead", 1, 11, 10, true, true, false},
		{"target behind", 1, 9, 10, true, true, true},
		{"same value, target not called", 1, 10, 10, false, true, true},
		{"same value, source not called", 1, 10, 10, true, false, false},
		{"descending, target behind", -1, -5, -9, true, true, true},
		{"descending, target ahead", -1, -9, -5, true, true, false},
		{"at the end", 1, max, max, true, true, false},
	} {
		if got := sequenceBehind(c.inc, c.last, c.called, c.srcLast, c.srcCalled); got != c.behind {
			t.Errorf("%s: behind %v, want %v", c.name, got, c.behind)
		}
	}
	if got := nextValue(1<<63-1, true, 1); got != "past its end" {
		t.Errorf("nextValue at the end: %s", got)
	}
	if got := nextValue(5, false, 1) + "," + nextValue(5, true, 2); got != "5,7" {
		t.Errorf("nextValue: %s", got)
	}
}
