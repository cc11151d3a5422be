package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var (
	mariaDB1011 = MySQLServer{MariaDB: true, Version: 101119}
	mysql84     = MySQLServer{Version: 80400}
)

// mysqlGoldenCases are the PostgreSQL dialect's cases plus those of what
// MySQL does differently.
func mysqlGoldenCases() []goldenCase {
	items := func(cols ...Column) *Table { return table("public", "items", IdentityDefault, cols...) }
	wide := table("public", "wide", IdentityDefault, col("id", "bigint", key))
	for i := range 80 {
		wide.Columns = append(wide.Columns, col(fmt.Sprintf("c%02d", i), "character varying(255)"))
	}
	cases := append(goldenCases(),
		goldenCase{name: "my_types", t: &Table{RelationID: 16500, Schema: "public", Name: "types", ReplicaIdentity: IdentityDefault,
			Columns: []Column{
				{Name: "id", TypeOID: 20, TypeMod: -1, TypeName: "bigint", Key: true, NotNull: true},
				{Name: "b", TypeOID: 16, TypeMod: -1, TypeName: "boolean"},
				{Name: "i2", TypeOID: 21, TypeMod: -1, TypeName: "smallint"},
				{Name: "i4", TypeOID: 23, TypeMod: -1, TypeName: "integer"},
				{Name: "o", TypeOID: 26, TypeMod: -1, TypeName: "oid"},
				{Name: "f4", TypeOID: 700, TypeMod: -1, TypeName: "real"},
				{Name: "f8", TypeOID: 701, TypeMod: -1, TypeName: "double precision"},
				{Name: "n", TypeOID: 1700, TypeMod: -1, TypeName: "numeric"},
				{Name: "n12_4", TypeOID: 1700, TypeMod: 12<<16 | 4 + 4, TypeName: "numeric(12,4)"},
				{Name: "n_neg", TypeOID: 1700, TypeMod: 2<<16 | (-3 & 0x7ff) + 4, TypeName: "numeric(2,-3)"},
				{Name: "n_huge", TypeOID: 1700, TypeMod: 100<<16 | 2 + 4, TypeName: "numeric(100,2)"},
				{Name: "t", TypeOID: 25, TypeMod: -1, TypeName: "text"},
				{Name: "vc", TypeOID: 1043, TypeMod: 20 + 4, TypeName: "character varying(20)"},
				{Name: "vc_long", TypeOID: 1043, TypeMod: 1000 + 4, TypeName: "character varying(1000)"},
				{Name: "vc_any", TypeOID: 1043, TypeMod: -1, TypeName: "character varying"},
				{Name: "ch", TypeOID: 1042, TypeMod: 3 + 4, TypeName: "character(3)"},
				{Name: "ch_long", TypeOID: 1042, TypeMod: 300 + 4, TypeName: "character(300)"},
				{Name: "by", TypeOID: 17, TypeMod: -1, TypeName: "bytea"},
				{Name: "d", TypeOID: 1082, TypeMod: -1, TypeName: "date"},
				{Name: "tm", TypeOID: 1083, TypeMod: -1, TypeName: "time without time zone"},
				{Name: "tm3", TypeOID: 1083, TypeMod: 3, TypeName: "time(3) without time zone"},
				{Name: "ts", TypeOID: 1114, TypeMod: -1, TypeName: "timestamp without time zone"},
				{Name: "tstz", TypeOID: 1184, TypeMod: 0, TypeName: "timestamp(0) with time zone"},
				{Name: "u", TypeOID: 2950, TypeMod: -1, TypeName: "uuid"},
				{Name: "j", TypeOID: 114, TypeMod: -1, TypeName: "json"},
				{Name: "jb", TypeOID: 3802, TypeMod: -1, TypeName: "jsonb"},
				{Name: "ia", TypeOID: 1007, TypeMod: -1, TypeName: "integer[]"},
				{Name: "ta", TypeOID: 1009, TypeMod: -1, TypeName: "text[]"},
				{Name: "ip", TypeOID: 869, TypeMod: -1, TypeName: "inet"},
				{Name: "mac", TypeOID: 829, TypeMod: -1, TypeName: "macaddr"},
				{Name: "iv", TypeOID: 1186, TypeMod: -1, TypeName: "interval"},
				{Name: "x", TypeOID: 142, TypeMod: -1, TypeName: "xml"},
				{Name: "bits", TypeOID: 1562, TypeMod: 16, TypeName: "bit varying(16)"},
				{Name: "nm", TypeOID: 19, TypeMod: -1, TypeName: "name"},
				{Name: "ttz", TypeOID: 1266, TypeMod: -1, TypeName: "time with time zone"},
			}}},
		goldenCase{name: "my_text_key", t: items(col("code", "text", key), col("v", "text"))},
		goldenCase{name: "my_text_bytea_int_key", t: items(
			col("id", "bigint", key), col("code", "text", key), col("raw", "bytea", key), col("v", "text"))},
		goldenCase{name: "my_varchar_key_short", t: items(
			col("a", "character varying(10)", key),
			col("b", "text", key))},
		goldenCase{name: "my_char_key", t: items(col("c", "character(8)", key))},
		goldenCase{name: "my_key_shared_budget", t: items(
			col("a", "character(255)", key),
			col("b", "uuid", key),
			col("c", "uuid", key),
			col("d", "uuid", key),
			col("e", "uuid", key),
			col("f", "uuid", key),
			col("g", "uuid", key),
			col("h", "uuid", key),
			col("i", "uuid", key),
			col("j", "uuid", key),
			col("k", "uuid", key),
			col("l", "uuid", key),
			col("m", "uuid", key),
			col("n", "uuid", key),
			col("o", "uuid", key),
			col("p", "text", key))},
		goldenCase{name: "my_json_key", t: items(col("doc", "jsonb", key))},
		goldenCase{name: "my_case_collision", t: items(col("Id", "bigint", key), col("id", "text"))},
		goldenCase{name: "my_long_name", t: table("public", strings.Repeat("t", 65), IdentityDefault, col("id", "bigint", key))},
		goldenCase{name: "my_long_column", t: items(col("id", "bigint", key), col(strings.Repeat("ü", 65), "text"))},
		goldenCase{name: "my_wide_row", t: wide},
		goldenCase{name: "my_constant_defaults", t: items(
			col("id", "bigint", key),
			col("t", "text", dflt("'it''s'::text"), constant("it's")),
			col("n", "numeric(5,2)", dflt("1.50"), constant("1.50")),
			col("b", "boolean", dflt("true"), constant("true")),
			col("by", "bytea", dflt(`'\x00ff'::bytea`), constant(`\x00ff`)),
			col("j", "jsonb", dflt(`'{"a": 1}'::jsonb`), constant(`{"a": 1}`)),
			col("f", "double precision", dflt(`'NaN'::double precision`), constant("NaN")),
			col("e", "integer", dflt("(1 + 2)")),
			col("at", "timestamp with time zone", volatile("now()")),
			col("z", "text", dflt("NULL::text"), func(c *Column) { c.DefaultValue = &Value{Null: true, TypeName: "text"} }),
		)},
		goldenCase{name: "my_alter_text_joins_key", prev: items(
			col("id", "bigint", key, attnum(1)), col("code", "text", attnum(2))),
			t: table("public", "items", IdentityIndex,
				col("id", "bigint", key, attnum(1)), col("code", "text", key, attnum(2)))},
		goldenCase{name: "my_alter_text_leaves_key", prev: items(
			col("id", "bigint", key, attnum(1)), col("code", "text", key, attnum(2))),
			t: items(col("id", "bigint", key, attnum(1)), col("code", "text", attnum(2)))},
		goldenCase{name: "my_alter_fill_text", prev: items(col("id", "bigint", key, attnum(1))),
			t: items(col("id", "bigint", key, attnum(1)),
				col("note", "text", dflt("'new'::text"), constant("new"), fill("old"), attnum(2)),
				col("doc", "jsonb", fill(`{"k": [1, 2]}`), attnum(3)),
				col("tags", "text[]", dflt(`'{a,"b c"}'::text[]`), constant(`{a,"b c"}`), attnum(4)),
				col("f", "double precision", fill("NaN"), attnum(5)))},
		goldenCase{name: "my_alter_expression_default", prev: items(col("id", "bigint", key, attnum(1))),
			t: items(col("id", "bigint", key, attnum(1)),
				col("e", "integer", dflt("(1 + 2)"), attnum(2)))},
		goldenCase{name: "my_alter_chain_rename", prev: table("public", "pair", IdentityDefault,
			col("id", "integer", key, attnum(1)), col("a", "text", attnum(2)), col("b", "text", attnum(3))),
			t: table("public", "pair", IdentityDefault,
				col("id", "integer", key, attnum(1)), col("b", "text", attnum(2)), col("c", "text", attnum(3)))},
	)
	return cases
}

func constant(text string) func(*Column) {
	return func(c *Column) { c.DefaultValue = &Value{Text: text, TypeName: c.TypeName} }
}

// renderMySQL is what a MySQL golden file holds: the statements a sink runs,
// each with the condition under which it runs.
func renderMySQL(d *MySQLDialect, c goldenCase) string {
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
		for i := range t.Columns {
			if why := d.DefaultLeftOut(t, i); why != "" {
				b.WriteString(fmt.Sprintf("-- default of %s left out: %s\n", t.Columns[i].Name, why))
			}
		}
	}
	if c.prev == nil {
		b.WriteString("-- create\n")
		create(c.t)
		return b.String()
	}
	b.WriteString("-- create (previous version)\n")
	create(c.prev)
	b.WriteString("-- alter\n")
	steps, err := d.AlterSteps(c.prev, c.t)
	if err != nil {
		b.WriteString("-- error: " + err.Error() + "\n")
		return b.String()
	}
	for _, s := range steps {
		if s.When.Kind != Always {
			b.WriteString("-- " + s.When.String() + "\n")
		}
		b.WriteString(s.SQL + ";\n\n")
	}
	return b.String()
}

func TestMySQLGolden(t *testing.T) {
	for _, flavour := range []struct {
		dir    string
		server MySQLServer
	}{{"mariadb", mariaDB1011}, {"mysql8", mysql84}} {
		t.Run(flavour.dir, func(t *testing.T) {
			d := NewMySQL(flavour.server, "target_db")
			dir := filepath.Join("testdata", "mysql", flavour.dir)
			want := map[string]bool{}
			for _, c := range mysqlGoldenCases() {
				want[c.name+".sql"] = true
				t.Run(c.name, func(t *testing.T) {
					got := renderMySQL(d, c)
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
						t.Fatalf("read golden file (run go test ./schema -run TestMySQLGolden -update): %v", err)
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
		})
	}
}

func TestMySQLQuoteIdent(t *testing.T) {
	d := NewMySQL(mariaDB1011, "db")
	for in, want := range map[string]string{
		"users":      "`users`",
		"we`ird":     "`we``ird`",
		"``":         "``````",
		"with space": "`with space`",
		`dq"`:        "`dq\"`",
		"":           "``",
	} {
		if got := d.QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMySQLIndexName(t *testing.T) {
	short := "orders_customer_id_idx"
	if got := MySQLIndexName(short); got != short {
		t.Errorf("MySQLIndexName(%q) = %q, want it unchanged", short, got)
	}
	long1 := strings.Repeat("x", 60) + "_first_idx"
	long2 := strings.Repeat("x", 60) + "_other_idx"
	n1, n2 := MySQLIndexName(long1), MySQLIndexName(long2)
	if len([]rune(n1)) != 64 || n1 == n2 || MySQLIndexName(long1) != n1 || !strings.HasPrefix(n1, strings.Repeat("x", 55)+"_") {
		t.Errorf("MySQLIndexName: %q, %q: want 64 characters, deterministic, distinct", n1, n2)
	}
	if n := MySQLIndexName(strings.Repeat("ü", 70)); len([]rune(n)) != 64 {
		t.Errorf("MySQLIndexName of 70 ü: %q has %d characters", n, len([]rune(n)))
	}
}

// TestMySQLErrorsNameBoth: refusals name what the user must change.
func TestMySQLErrorsNameBoth(t *testing.T) {
	d := NewMySQL(mariaDB1011, "db")
	_, err := d.CreateTable(table("public", "t", IdentityDefault, col("Id", "bigint", key), col("ID", "text")))
	if err == nil || !strings.Contains(err.Error(), `"Id"`) || !strings.Contains(err.Error(), `"ID"`) || !strings.Contains(err.Error(), "public.t") {
		t.Errorf("case collision: %v", err)
	}
	many := table("public", "many", IdentityFull)
	for i := range 1018 {
		many.Columns = append(many.Columns, col(fmt.Sprintf("c%d", i), "integer"))
	}
	if _, err := d.CreateTable(many); err == nil || !strings.Contains(err.Error(), "1018 columns") || !strings.Contains(err.Error(), "1017") {
		t.Errorf("1018 columns: %v", err)
	}
	many.Columns = many.Columns[:1017]
	if _, err := d.CreateTable(many); err != nil {
		t.Errorf("1017 columns: %v", err)
	}
	var tooMany []Column
	for i := range 17 {
		tooMany = append(tooMany, col(fmt.Sprintf("k%d", i), "integer", key))
	}
	if _, err := d.CreateTable(table("public", "k17", IdentityDefault, tooMany...)); err == nil || !strings.Contains(err.Error(), "17 columns") {
		t.Errorf("17 key columns: %v", err)
	}
	_, err = d.AlterTable(table("public", "t", IdentityDefault, col("id", "bigint", key, attnum(1))),
		table("public", "t", IdentityDefault, col("id", "bigint", key, attnum(1)), col("at", "timestamp with time zone", volatile("now()"), attnum(2))))
	if !errors.Is(err, ErrVolatileDefault) {
		t.Errorf("volatile default added: %v, want ErrVolatileDefault", err)
	}
}

// TestMySQLServerChoices: what differs between MySQL 8 and MariaDB, and the
// servers pgrelay refuses.
func TestMySQLServerChoices(t *testing.T) {
	for _, c := range []struct {
		version                                        string
		want                                           string
		supported, alias, doubles, exprDefault, detach bool
		collation                                      string
		localInfile                                    bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", "MariaDB 10.11.19", true, false, false, false, false, "utf8mb4_nopad_bin", true},
		{"5.5.5-10.5.2-MariaDB-log", "MariaDB 10.5.2", true, false, false, false, false, "utf8mb4_nopad_bin", true},
		{"10.5.1-MariaDB", "MariaDB 10.5.1", false, false, false, false, false, "utf8mb4_nopad_bin", true},
		{"10.4.30-MariaDB", "MariaDB 10.4.30", false, false, false, false, false, "utf8mb4_nopad_bin", true},
		{"8.0.18", "MySQL 8.0.18", true, false, true, true, false, "utf8mb4_0900_bin", false},
		{"8.0.19", "MySQL 8.0.19", true, true, true, true, false, "utf8mb4_0900_bin", false},
		{"8.0.29-0ubuntu0.22.04.2", "MySQL 8.0.29", true, true, true, true, true, "utf8mb4_0900_bin", false},
		{"8.4.0-log", "MySQL 8.4.0", true, true, true, true, true, "utf8mb4_0900_bin", false},
		{"5.7.44", "MySQL 5.7.44", false, false, true, true, false, "utf8mb4_0900_bin", false},
	} {
		s, err := ParseMySQLServer(c.version)
		if err != nil {
			t.Fatalf("ParseMySQLServer(%q): %v", c.version, err)
		}
		if s.String() != c.want || (s.Supported() == nil) != c.supported || s.RowAlias() != c.alias ||
			s.JSONNumbersAsDoubles() != c.doubles || s.ExpressionDefaults() != c.exprDefault ||
			s.XADetachOnPrepare() != c.detach || s.Collation() != c.collation || s.LocalInfileDefault() != c.localInfile {
			t.Errorf("%q: %s supported=%v alias=%v doubles=%v exprDefault=%v detach=%v collation=%s infile=%v", c.version, s,
				s.Supported() == nil, s.RowAlias(), s.JSONNumbersAsDoubles(), s.ExpressionDefaults(), s.XADetachOnPrepare(), s.Collation(), s.LocalInfileDefault())
		}
		if err := s.Supported(); err != nil && (!strings.Contains(err.Error(), "MySQL 8.0 or later, or MariaDB 10.5.2 or later") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%q: %v", c.version, err)
		}
	}
	for _, bad := range []string{"", "abc", "8", "8.x.1"} {
		if _, err := ParseMySQLServer(bad); err == nil {
			t.Errorf("ParseMySQLServer(%q): no error", bad)
		}
	}
}
