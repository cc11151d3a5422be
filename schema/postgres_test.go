package schema

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Builders for test tables.

func col(name, typeName string, opts ...func(*Column)) Column {
	oid, typmod := testTypeOID(typeName)
	c := Column{Name: name, TypeName: typeName, TypeOID: oid, TypeMod: typmod}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// testTypeOID finds a built-in type's OID and typmod from its name as
// format_type spells it; text's for a name it does not know.
func testTypeOID(name string) (uint32, int32) {
	base, array := strings.CutSuffix(name, "[]")
	bare := base
	if open := strings.IndexByte(base, '('); open >= 0 {
		if close := strings.IndexByte(base, ')'); close > open {
			bare = strings.TrimSpace(base[:open] + base[close+1:])
		}
	}
	var oid uint32 = 25
	for o, n := range builtinTypeNames {
		if n == bare {
			oid = o
		}
	}
	for o, n := range map[uint32]string{1042: "character", 1043: "character varying", 1700: "numeric", 1083: "time without time zone",
		1114: "timestamp without time zone", 1184: "timestamp with time zone", 1266: "time with time zone", 1186: "interval",
		1560: "bit", 1562: "bit varying"} {
		if n == bare {
			oid = o
		}
	}
	typmod := baseTypmod(oid, base)
	if array {
		for a, e := range builtinArrayElems {
			if e == oid {
				return a, typmod
			}
		}
	}
	return oid, typmod
}

func key(c *Column)     { c.Key = true; c.NotNull = true }
func notNull(c *Column) { c.NotNull = true }
func dflt(expr string) func(*Column) {
	return func(c *Column) { c.Default = SourceExpr(expr); c.DefaultValue = ConstantOf(c.Default, c.TypeName) }
}
func volatile(expr string) func(*Column) {
	return func(c *Column) { c.Default = SourceExpr(expr); c.VolatileDefault = true }
}
func portable(expr string) func(*Column) {
	return func(c *Column) { c.Default = SourceExpr(expr); c.VolatileDefault = true; c.PortableDefault = true }
}
func attnum(n int16) func(*Column) { return func(c *Column) { c.Attnum = n } }
func fill(text string) func(*Column) {
	return func(c *Column) { c.Fill = &Value{Text: text, TypeName: c.TypeName} }
}
func keyAt(pos int16) func(*Column) {
	return func(c *Column) { c.Key, c.NotNull, c.KeyPosition = true, true, pos }
}
func collation(name string) func(*Column) { return func(c *Column) { c.Collation = name } }
func ofType(typ *Type) func(*Column) {
	return func(c *Column) { c.Type = typ; c.TypeOID = typ.OID }
}

func table(schema, name string, identity byte, cols ...Column) *Table {
	return &Table{RelationID: 16400, Schema: schema, Name: name, ReplicaIdentity: identity, Columns: cols}
}

// User types of the "types" cases.
var (
	moodType = &Type{OID: 17001, Namespace: "app", Name: "mood", Category: CategoryEnum, BaseOID: 17001,
		EnumLabels: []string{"sad", "ok", "happy", "it's \\ odd"}}
	moodArrayType = &Type{OID: 17002, Namespace: "app", Name: "_mood", Category: CategoryArray, BaseOID: 17001, BaseName: "app.mood"}
	posintType    = &Type{OID: 17003, Namespace: "app", Name: "posint", Category: CategoryDomain, BaseOID: 23, BaseName: "integer",
		DomainNotNull: true, DomainDefault: "1", DomainChecks: []SourceExpr{`CONSTRAINT "posint_check" CHECK ((VALUE > 0))`}}
	codeType = &Type{OID: 17004, Namespace: "ref", Name: "code", Category: CategoryDomain, BaseOID: 1043, BaseName: "character varying(8)", DomainCollation: `pg_catalog."C"`,
		DomainChecks: []SourceExpr{`CONSTRAINT "code_check" CHECK (((VALUE)::text ~ '^[A-Z]+$'::text))`, `CONSTRAINT "Long ""enough""" CHECK ((length((VALUE)::text) > 1))`}}
	addressType = &Type{OID: 17005, Namespace: "app", Name: "address", Category: CategoryComposite, BaseOID: 17005,
		Attributes: []Attribute{
			{Name: "street", TypeOID: 25, TypeName: "text"},
			{Name: "zip", TypeOID: 17004, TypeName: "ref.code"},
			{Name: "Floor No", TypeOID: 17003, TypeName: "app.posint"},
		}}
	addressArrayType = &Type{OID: 17006, Namespace: "app", Name: "_address", Category: CategoryArray, BaseOID: 17005, BaseName: "app.address"}
	spanType         = &Type{OID: 17007, Namespace: "app", Name: "span", Category: CategoryRange, BaseOID: 701, BaseName: "double precision"}
	extType          = &Type{OID: 17008, Namespace: "public", Name: "citext", Category: CategoryBase, BaseOID: 17008}
	dollarType       = &Type{OID: 17009, Namespace: "app", Name: "tag", Category: CategoryEnum, BaseOID: 17009,
		EnumLabels: []string{"$pgrelay$", "plain"}}
)

type goldenCase struct {
	name string
	prev *Table // nil: a create case
	t    *Table
}

func goldenCases() []goldenCase {
	usersV1 := table("public", "users", IdentityDefault,
		col("id", "integer", key, attnum(1)),
		col("name", "text", notNull, attnum(2)),
		col("email", "character varying(255)", attnum(3)),
		col("score", "integer", dflt("0"), attnum(4)),
	)
	return []goldenCase{
		{name: "create_simple", t: table("public", "users", IdentityDefault,
			col("id", "bigint", key),
			col("name", "text", notNull),
			col("email", "character varying(255)"),
			col("created_at", "timestamp with time zone", notNull, volatile("now()")),
		)},
		{name: "create_composite_key", t: table("sales", "order_items", IdentityIndex,
			col("order_id", "bigint", key),
			col("line", "integer", key),
			col("qty", "numeric(10,2)", notNull, dflt("0")),
			col("note", "text"),
		)},
		{name: "create_identity_nothing", t: table("public", "events", IdentityNothing,
			col("at", "timestamp without time zone"),
			col("payload", "jsonb"),
		)},
		{name: "create_identity_full", t: table("public", "log", IdentityFull,
			col("at", "timestamp(3) with time zone", notNull),
			col("line", "text"),
		)},
		{name: "create_no_columns", t: table("public", "empty", IdentityDefault)},
		{name: "create_weird_identifiers", t: table(`My "Schema"`, "Order Items ü", IdentityDefault,
			col("Id", "integer", key),
			col(`we"ird`, "text", key),
			col("with space", "text"),
			col("ünïcödé 名前", "text"),
			col("select", "text"),
			col(`back\slash 'quote'`, "text", dflt(`'it''s \ here'::text`)),
		)},
		{name: "create_user_types", t: &Table{RelationID: 16401, Schema: "app", Name: "people", ReplicaIdentity: IdentityDefault,
			Columns: []Column{
				col("id", "app.posint", key, ofType(posintType)),
				col("mood", "app.mood", notNull, dflt("'ok'::app.mood"), ofType(moodType)),
				col("moods", "app.mood[]", ofType(moodArrayType)),
				col("home", "app.address", ofType(addressType)),
				col("homes", "app.address[]", ofType(addressArrayType)),
				col("span", "app.span", ofType(spanType)),
				col("tag", "app.tag", ofType(dollarType)),
			},
			Types: []*Type{posintType, moodType, moodArrayType, codeType, addressType, addressArrayType, spanType, dollarType},
		}},
		{name: "create_numeric_varchar", t: table("public", "prices", IdentityDefault,
			col("sku", "character varying(32)", key),
			col("price", "numeric(12,4)", notNull),
			col("ratio", "numeric"),
			col("code", "character(3)"),
			col("bits", "bit varying(16)"),
			col("at", "timestamp(3) without time zone"),
			col("tags", "character varying(20)[]"),
			col("matrix", "double precision[]"),
		)},
		{name: "create_defaults", t: table("public", "defaults", IdentityDefault,
			col("id", "integer", key, volatile("nextval('public.defaults_id_seq'::regclass)")),
			col("n", "integer", notNull, dflt("42")),
			col("label", "text", dflt("'none'::text")),
			col("sum", "integer", dflt("(1 + 2)")),
			col("uid", "uuid", volatile("public.my_uuid()")),
			col("at", "timestamp with time zone", portable("CURRENT_TIMESTAMP")),
			col("rnd", "uuid", portable("gen_random_uuid()")),
		)},
		{name: "alter_add_drop", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("score", "integer", dflt("0"), attnum(4)),
			col("nickname", "text", dflt("'anon'::text"), notNull, attnum(5)),
			col("visits", "bigint", attnum(6)),
		)},
		{name: "alter_add_volatile_default", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("email", "character varying(255)", attnum(3)),
			col("score", "integer", dflt("0"), attnum(4)),
			col("joined", "timestamp with time zone", volatile("now()"), attnum(5)),
		)},
		// Columns added while pgrelay was behind: existing rows hold the value of
		// the default of the time (attmissingval), not the default of now.
		{name: "alter_add_fill_values", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("email", "character varying(255)", attnum(3)),
			col("score", "integer", dflt("0"), attnum(4)),
			col("status", "text", notNull, fill("active"), attnum(5)),
			col("level", "integer", dflt("2"), fill("1"), attnum(6)),
			col("since", "timestamp with time zone", volatile("now()"), fill("2026-01-01 00:00:00+00"), attnum(7)),
		)},
		{name: "alter_type_change", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("id", "bigint", key, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("email", "character varying(320)", attnum(3)),
			col("score", "numeric(6,1)", dflt("0.0"), attnum(4)),
		)},
		{name: "create_key_order", t: table("sales", "order_items", IdentityDefault,
			col("line", "integer", keyAt(2)),
			col("note", "text"),
			col("order_id", "bigint", keyAt(1)),
		)},
		{name: "create_collations", t: table("public", "names", IdentityDefault,
			col("id", "integer", key),
			col("name", "text", collation(`"pg_catalog"."C"`)),
			col("sort_key", "character varying(20)", collation(`"pg_catalog"."POSIX"`), notNull),
		)},
		{name: "alter_collations", prev: table("public", "names", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", collation(`"pg_catalog"."C"`), attnum(2)),
			col("sort_key", "text", attnum(3)),
			col("kept", "text", collation(`"pg_catalog"."C"`), attnum(4)),
		), t: table("public", "names", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", attnum(2)),
			col("sort_key", "text", collation(`"pg_catalog"."POSIX"`), attnum(3)),
			col("kept", "character varying(9)", collation(`"pg_catalog"."C"`), attnum(4)),
			col("added", "text", collation(`"pg_catalog"."C"`), attnum(5)),
		)},
		{name: "alter_defaults_not_null", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", attnum(2), dflt("''::text")),
			col("email", "character varying(255)", notNull, attnum(3)),
			col("score", "integer", volatile("(random() * (10)::double precision)::integer"), attnum(4)),
		)},
		{name: "alter_key_change", prev: usersV1, t: table("public", "users", IdentityIndex,
			col("id", "integer", key, attnum(1)),
			col("name", "text", key, attnum(2)),
			col("email", "character varying(255)", attnum(3)),
			col("score", "integer", dflt("0"), attnum(4)),
		)},
		{name: "alter_key_dropped", prev: usersV1, t: table("public", "users", IdentityFull,
			col("id", "integer", notNull, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("email", "character varying(255)", attnum(3)),
			col("score", "integer", dflt("0"), attnum(4)),
		)},
		{name: "alter_key_added", prev: table("public", "log", IdentityNothing,
			col("id", "integer", notNull, attnum(1)),
			col("line", "text", attnum(2)),
		), t: table("public", "log", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("line", "text", attnum(2)),
		)},
		{name: "alter_rename_columns", prev: usersV1, t: table("public", "users", IdentityDefault,
			col("user_id", "integer", key, attnum(1)),
			col("email", "text", notNull, attnum(2)), // was name; takes the name email drops
			col("score", "integer", dflt("0"), attnum(4)),
		)},
		{name: "alter_swap_columns", prev: table("public", "pair", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("a", "text", attnum(2)),
			col("b", "text", attnum(3)),
		), t: table("public", "pair", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("b", "text", attnum(2)),
			col("a", "text", attnum(3)),
		)},
		{name: "alter_rename_without_attnum", prev: table("public", "pair", IdentityDefault,
			col("id", "integer", key),
			col("a", "text"),
		), t: table("public", "pair", IdentityDefault,
			col("id", "integer", key),
			col("b", "text"),
		)},
		{name: "alter_move_table", prev: usersV1, t: table("archive", "Old Users", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("name", "text", notNull, attnum(2)),
			col("email", "character varying(255)", attnum(3)),
			col("score", "integer", dflt("0"), attnum(4)),
		)},
		{name: "alter_unchanged", prev: usersV1, t: usersV1},
		{name: "create_generated", t: withGenerated(table("public", "boxes", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("w", "integer", attnum(3)),
			col("h", "integer", attnum(4)),
		), GeneratedColumn{Name: "label", TypeName: "text", Expr: "('box '::text || id)", Attnum: 2},
			GeneratedColumn{Name: "area", TypeName: "integer", Expr: "(w * h)", Attnum: 5})},
		{name: "alter_generated", prev: withGenerated(table("public", "boxes", IdentityDefault,
			col("id", "integer", key, attnum(1)),
			col("w", "integer", attnum(3)),
			col("h", "integer", attnum(4)),
		), GeneratedColumn{Name: "label", TypeName: "text", Expr: "('box '::text || id)", Attnum: 2},
			GeneratedColumn{Name: "area", TypeName: "integer", Expr: "(w * h)", Attnum: 5},
			GeneratedColumn{Name: "old", TypeName: "integer", Expr: "(w + 1)", Attnum: 6},
			GeneratedColumn{Name: "frozen", TypeName: "integer", Expr: "(h + 1)", Attnum: 7}),
			t: withGenerated(table("public", "boxes", IdentityDefault,
				col("id", "integer", key, attnum(1)),
				col("w", "integer", attnum(3)),
				col("h", "integer", attnum(4)),
				col("frozen", "integer", attnum(7)),
			), GeneratedColumn{Name: "label", TypeName: "text", Expr: "('box '::text || id)", Attnum: 2},
				GeneratedColumn{Name: "area", TypeName: "bigint", Expr: "(w * h)::bigint", Attnum: 5},
				GeneratedColumn{Name: "depth", TypeName: "integer", Expr: "(w - h)", Attnum: 8})},
	}
}

func withGenerated(t *Table, g ...GeneratedColumn) *Table {
	t.Generated = g
	return t
}

// render is what a golden file holds: the statements a sink runs, in order.
func render(d Dialect, c goldenCase) string {
	var b strings.Builder
	write := func(stmts []string) {
		for _, s := range stmts {
			b.WriteString(s + ";\n\n")
		}
	}
	create := func(t *Table) {
		schema, _ := d.TargetTable(t)
		write([]string{d.CreateSchema(schema)})
		write(d.CreateTypes(t))
		stmts, err := d.CreateTable(t)
		if err != nil {
			b.WriteString("-- error: " + err.Error() + "\n")
			return
		}
		write(stmts)
	}
	if c.prev == nil {
		b.WriteString("-- create\n")
		create(c.t)
		return b.String()
	}
	b.WriteString("-- create (previous version)\n")
	create(c.prev)
	b.WriteString("-- alter\n")
	write(d.CreateTypes(c.t))
	stmts, err := d.AlterTable(c.prev, c.t)
	if err != nil {
		b.WriteString("-- error: " + err.Error() + "\n")
		return b.String()
	}
	write(stmts)
	return b.String()
}

func TestPostgresGolden(t *testing.T) {
	dir := filepath.Join("testdata", "postgres")
	want := map[string]bool{}
	for _, c := range goldenCases() {
		want[c.name+".sql"] = true
		t.Run(c.name, func(t *testing.T) {
			got := render(Postgres, c)
			path := filepath.Join(dir, c.name+".sql")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run go test ./schema -run TestPostgresGolden -update): %v", err)
			}
			if got != string(golden) {
				t.Errorf("%s differs from the generated SQL (rerun with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, golden)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, e := range entries {
		if !want[e.Name()] {
			stale = append(stale, e.Name())
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("golden files without a case (delete them): %v", stale)
	}
}

func TestPostgresQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{
		"users":      `"users"`,
		"Users":      `"Users"`,
		`we"ird`:     `"we""ird"`,
		`""`:         `""""""`,
		"with space": `"with space"`,
		"a\x00b":     `"ab"`,
		"ü":          `"ü"`,
		"":           `""`,
	} {
		if got := Postgres.QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestPostgresAlterIdentityAddedError: an identity column added to a table
// gave the source's existing rows values from its sequence, which the target
// cannot know: refused like a volatile default, naming the column and the fix.
func TestPostgresAlterIdentityAddedError(t *testing.T) {
	prev := table("app", "users", IdentityDefault, col("id", "integer", key, attnum(1)))
	for _, kind := range []string{"ALWAYS", "BY DEFAULT"} {
		next := table("app", "users", IdentityDefault, col("id", "integer", key, attnum(1)),
			col("n", "bigint", func(c *Column) { c.Identity = kind }, attnum(2)))
		_, err := Postgres.AlterTable(prev, next)
		if !errors.Is(err, ErrVolatileDefault) {
			t.Fatalf("%s: err = %v, want ErrVolatileDefault", kind, err)
		}
		for _, part := range []string{"app.users", `"n"`, "GENERATED " + kind + " AS IDENTITY", "PGRELAY_SNAPSHOT=always"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q does not mention %q", kind, err, part)
			}
		}
		// Already there: no error.
		if _, err := Postgres.AlterTable(next, next); err != nil {
			t.Errorf("%s: identity column already on the target: %v", kind, err)
		}
		// Before a copy, which replaces the rows: no error.
		recopy := *next
		recopy.Recopy = true
		if stmts, err := Postgres.AlterTable(prev, &recopy); err != nil || !strings.Contains(strings.Join(stmts, ";"), `ADD COLUMN IF NOT EXISTS "n" bigint`) {
			t.Errorf("%s: before a copy: %v, %q", kind, err, stmts)
		}
	}
}

func TestPostgresAlterVolatileDefaultError(t *testing.T) {
	prev := table("app", "users", IdentityDefault, col("id", "integer", key, attnum(1)))
	next := table("app", "users", IdentityDefault, col("id", "integer", key, attnum(1)),
		col("token", "uuid", volatile("gen_random_uuid()"), attnum(2)))
	_, err := Postgres.AlterTable(prev, next)
	if !errors.Is(err, ErrVolatileDefault) {
		t.Fatalf("err = %v, want ErrVolatileDefault", err)
	}
	for _, part := range []string{"app.users", `"token"`, "gen_random_uuid()", "cannot be reproduced"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	// A volatile default on an existing column is no error: the target drops it.
	prev2 := table("app", "users", IdentityDefault, col("id", "integer", key, attnum(1)), col("token", "uuid", attnum(2)))
	stmts, err := Postgres.AlterTable(prev2, next)
	if err != nil || len(stmts) != 0 {
		t.Fatalf("AlterTable = %q, %v; want no statements (the target had no default)", stmts, err)
	}
}

func TestPostgresErrors(t *testing.T) {
	if _, err := Postgres.AlterTable(nil, table("a", "b", IdentityDefault)); err == nil {
		t.Error("AlterTable(nil, t) succeeded")
	}
	if _, err := Postgres.CreateTable(nil); err == nil {
		t.Error("CreateTable(nil) succeeded")
	}
	noType := table("a", "b", IdentityDefault, Column{Name: "x", TypeOID: 99999})
	_, err := Postgres.CreateTable(noType)
	if err == nil || !strings.Contains(err.Error(), `a.b column "x"`) {
		t.Errorf("CreateTable without type name: err = %v", err)
	}
	if _, err := Postgres.AlterTable(table("a", "b", IdentityDefault), noType); err == nil {
		t.Error("AlterTable to a column without type name succeeded")
	}
}

func TestPostgresCreateTypesSkipsExtensionAndBuiltinTypes(t *testing.T) {
	builtinDomain := &Type{OID: 13000, Namespace: "information_schema", Name: "cardinal_number", Category: CategoryDomain, BaseOID: 23, BaseName: "integer"}
	tbl := &Table{Schema: "public", Name: "t", Columns: []Column{col("nick", "public.citext", ofType(extType)), col("n", "information_schema.cardinal_number")},
		Types: []*Type{extType, builtinDomain, moodArrayType}}
	if stmts := Postgres.CreateTypes(tbl); len(stmts) != 0 {
		t.Errorf("CreateTypes = %q, want nothing: extension base types, built-in domains and arrays are not created", stmts)
	}
}

func TestDoBlockTag(t *testing.T) {
	got := doBlock("x $pgrelay$ y $pgrelay1$")
	if !strings.HasPrefix(got, "DO $pgrelay2$\n") || !strings.HasSuffix(got, "\n$pgrelay2$") {
		t.Errorf("doBlock chose a tag in the body: %q", got)
	}
}

// A column whose number was unknown in prev (its facts were read after a
// later rename) pairs with the unmatched column holding a number prev's
// table already had: a rename, not a drop and an add.
func TestMatchColumnsUnknownAttnum(t *testing.T) {
	prev := &Table{Columns: []Column{{Name: "id", Attnum: 1}, {Name: "v"}, {Name: "c", Attnum: 3}}}
	next := &Table{Columns: []Column{{Name: "id", Attnum: 1}, {Name: "vv", Attnum: 2}, {Name: "c", Attnum: 3}}}
	m := matchColumns(prev, next)
	if m.newOf[1] != 1 || len(m.newOf) != 3 {
		t.Fatalf("v and vv not paired: %v", m.newOf)
	}
	// A column numbered past every one prev knew is new: v was dropped.
	next = &Table{Columns: []Column{{Name: "id", Attnum: 1}, {Name: "c", Attnum: 3}, {Name: "w", Attnum: 4}}}
	if m := matchColumns(prev, next); len(m.newOf) != 2 {
		t.Fatalf("w paired with v: %v", m.newOf)
	}
}

func TestPostgresMoveTable(t *testing.T) {
	for _, tc := range []struct {
		from, to [2]string
		want     string
	}{
		{[2]string{"s", "a"}, [2]string{"s", "a"}, ""},
		{[2]string{"s", "a"}, [2]string{"s", `b"x`}, `ALTER TABLE "s"."a" RENAME TO "b""x"`},
		{[2]string{"s", "a"}, [2]string{"T", "a"}, `CREATE SCHEMA IF NOT EXISTS "T";ALTER TABLE "s"."a" SET SCHEMA "T"`},
		{[2]string{"s", "a"}, [2]string{"T", "b"}, `CREATE SCHEMA IF NOT EXISTS "T";ALTER TABLE "s"."a" SET SCHEMA "T";ALTER TABLE "T"."a" RENAME TO "b"`},
	} {
		got := strings.Join(Postgres.MoveTable(tc.from[0], tc.from[1], tc.to[0], tc.to[1]), ";")
		if got != tc.want {
			t.Errorf("MoveTable(%v, %v) = %s, want %s", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestPostgresOmitDefault: a default the target cannot create (OmitDefault)
// is left out of CREATE TABLE and of a changed column, and after the fill of
// an added column; the default that fills an added column's existing rows
// stays, since those rows hold its values on the source.
func TestPostgresOmitDefault(t *testing.T) {
	omit := func(c *Column) { c.OmitDefault = true }
	created := table("public", "u", IdentityDefault,
		col("id", "uuid", key, portable("pg_catalog.uuidv7()"), omit, attnum(1)),
		col("v", "text", dflt("'x'::text"), attnum(2)))
	stmts, err := Postgres.CreateTable(created)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stmts, "\n"); strings.Contains(got, "uuidv7") || !strings.Contains(got, "DEFAULT 'x'::text") {
		t.Errorf("CREATE TABLE with an omitted default:\n%s", got)
	}

	prev := table("public", "u", IdentityDefault,
		col("id", "uuid", key, attnum(1)),
		col("n", "integer", dflt("0"), attnum(2)))
	next := table("public", "u", IdentityDefault,
		col("id", "uuid", key, attnum(1)),
		col("n", "integer", dflt("pg_catalog.newer(1)"), omit, attnum(2)),
		col("c", "text", dflt("pg_catalog.casefold('AB'::text)"), fill("ab"), omit, attnum(3)),
		col("d", "text", dflt("pg_catalog.casefold('CD'::text)"), omit, attnum(4)))
	stmts, err = Postgres.AlterTable(prev, next)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(stmts, "\n")
	for _, want := range []string{
		`ALTER TABLE "public"."u" ALTER COLUMN "n" DROP DEFAULT`,
		`ALTER TABLE "public"."u" ADD COLUMN IF NOT EXISTS "c" text DEFAULT 'ab'::text`,
		`ALTER TABLE "public"."u" ALTER COLUMN "c" DROP DEFAULT`,
		`ALTER TABLE "public"."u" ADD COLUMN IF NOT EXISTS "d" text DEFAULT pg_catalog.casefold('CD'::text)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ALTER TABLE with omitted defaults lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "newer") || strings.Contains(got, "casefold('AB'") {
		t.Errorf("ALTER TABLE sets an omitted default:\n%s", got)
	}
}

// A column the publication stops publishing (column list, 15+) is not a
// column dropped: AlterTable refuses rather than drop the target's values.
func TestPostgresColumnListChanged(t *testing.T) {
	d := PostgresDialect{}
	unsent := func(name string, attnum int16) GeneratedColumn {
		return GeneratedColumn{Name: name, TypeName: "text", Attnum: attnum}
	}
	all := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("a", "text", attnum(2)), col("d", "text", attnum(4)))
	narrow := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("a", "text", attnum(2)))
	narrow.Generated = []GeneratedColumn{unsent("d", 4)}
	if _, err := d.AlterTable(all, narrow); !errors.Is(err, ErrColumnListChanged) || !strings.Contains(err.Error(), "no longer publishes d") {
		t.Errorf("narrowed: %v", err)
	}
	// Sent again (a widened list, or a column added while pgrelay lagged,
	// whose facts came before its message): not told apart, so followed.
	if _, err := d.AlterTable(narrow, all); err != nil {
		t.Errorf("widened: %v", err)
	}
	// Dropped on the source: no longer in the catalog at all.
	dropped := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("a", "text", attnum(2)))
	if _, err := d.AlterTable(all, dropped); err != nil {
		t.Errorf("dropped column: %v", err)
	}
	// Dropped and added again under the same name: another attribute number.
	readded := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("a", "text", attnum(2)))
	readded.Generated = []GeneratedColumn{unsent("d", 5)}
	if _, err := d.AlterTable(all, readded); err != nil {
		t.Errorf("re-added column: %v", err)
	}
}

// InferRenamed: a column named in the message by a name the catalog no longer
// has (renamed and renamed back since) takes the number of the column built
// at its place, whose name the message lacks and the catalog still has; the
// column list check and ALTER TABLE then see a rename. Anything else is left
// alone.
func TestInferRenamed(t *testing.T) {
	d := PostgresDialect{}
	unsent := func(name string, attnum int16) GeneratedColumn {
		return GeneratedColumn{Name: name, TypeName: "text", Attnum: attnum}
	}
	built := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("v", "text", attnum(2)), col("w", "text", attnum(3)))
	middle := func() *Table {
		m := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("v1", "text"), col("w", "text", attnum(3)))
		m.Generated = []GeneratedColumn{unsent("v", 2)}
		return m
	}
	m := middle()
	if !InferRenamed(built, m) || m.Columns[1].Attnum != 2 || len(m.Generated) != 0 {
		t.Fatalf("renamed back: inferred %v, columns %+v, generated %+v", false, m.Columns, m.Generated)
	}
	stmts, err := d.AlterTable(built, m)
	if err != nil || !strings.Contains(strings.Join(stmts, "\n"), `RENAME COLUMN "v" TO "v1"`) {
		t.Fatalf("renamed back: %v\n%s", err, strings.Join(stmts, "\n"))
	}
	// Without the inference, the column-list check refuses.
	if _, err := d.AlterTable(built, middle()); !errors.Is(err, ErrColumnListChanged) {
		t.Fatalf("not inferred: %v", err)
	}

	// Left alone: another column out of place (one added or dropped since),
	// the built column's name still in the message, the catalog's column at
	// that number under another name (renamed twice), a message of another
	// length (a column list).
	for name, m := range map[string]*Table{
		"out of place": func() *Table {
			m := middle()
			m.Columns[2].Attnum = 4
			return m
		}(),
		"name still sent": func() *Table {
			m := middle()
			m.Columns[2].Name = "v"
			return m
		}(),
		"renamed twice": func() *Table {
			m := middle()
			m.Generated = []GeneratedColumn{unsent("v2", 2)}
			return m
		}(),
		"other length": func() *Table {
			m := middle()
			m.Columns = m.Columns[:2]
			return m
		}(),
	} {
		if InferRenamed(built, m) || m.Columns[1].Attnum != 0 {
			t.Errorf("%s: inferred a rename: %+v", name, m.Columns)
		}
	}
	if InferRenamed(nil, middle()) {
		t.Error("inferred from no built definition")
	}
}

// A version from a prepared transaction's own DDL (a drop and an add look
// the same) is not taken for a rename.
func TestInferRenamedUncommitted(t *testing.T) {
	built := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("v", "text", attnum(2)))
	m := table("public", "t", IdentityDefault, col("id", "integer", key, attnum(1)), col("vv", "text"))
	m.Generated = []GeneratedColumn{{Name: "v", TypeName: "text", Attnum: 2}}
	m.Uncommitted = true
	if InferRenamed(built, m) || m.Columns[1].Attnum != 0 {
		t.Fatalf("inferred a rename in uncommitted DDL: %+v", m.Columns)
	}
}
