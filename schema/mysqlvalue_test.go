package schema

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// convTable is a table with one column of each kind the conversions test.
func convTable() *Table {
	return table("public", "conv", IdentityDefault,
		col("id", "bigint", key),
		col("b", "boolean"),
		col("i2", "smallint"),
		col("i4", "integer"),
		col("o", "oid"),
		col("f4", "real"),
		col("f8", "double precision"),
		col("n", "numeric"),
		col("n52", "numeric(5,2)"),
		col("t", "text"),
		col("ch", "character(5)"),
		col("by", "bytea"),
		col("d", "date"),
		col("tm", "time without time zone"),
		col("ts", "timestamp without time zone"),
		col("tz", "timestamp with time zone"),
		col("j", "jsonb"),
		col("ia", "integer[]"),
		col("ta", "text[]"),
		col("ba", "boolean[]"),
		col("na", "numeric[]"),
		col("ja", "jsonb[]"),
		col("boxes", "box[]"),
		col("u", "uuid"),
	)
}

func TestMySQLConvert(t *testing.T) {
	tb := convTable()
	idx := map[string]int{}
	for i, c := range tb.Columns {
		idx[c.Name] = i
	}
	type conv struct {
		col, in string
		kind    MySQLValueKind
		out     string // for MySQLBytes: hex
		unfit   string // a part of the error when it does not fit
		mysql8  bool   // unfit only on MySQL 8 (JSON numbers as doubles)
		mariadb bool   // checked only on MariaDB
	}
	cases := []conv{
		{col: "b", in: "t", kind: MySQLNumber, out: "1"},
		{col: "b", in: "f", kind: MySQLNumber, out: "0"},
		{col: "b", in: "x", unfit: "not a boolean"},
		{col: "i2", in: "-32768", kind: MySQLNumber, out: "-32768"},
		{col: "i2", in: "32768", unfit: "16-bit"},
		{col: "i4", in: "12 ", unfit: "32-bit"},
		{col: "id", in: "9223372036854775807", kind: MySQLNumber, out: "9223372036854775807"},
		{col: "id", in: "not a number", unfit: "64-bit"},
		{col: "o", in: "4294967295", kind: MySQLNumber, out: "4294967295"},
		{col: "o", in: "-1", unfit: "oid"},
		{col: "f4", in: "1.5e+38", kind: MySQLNumber, out: "1.5000000027488779e+38"},
		{col: "f4", in: "3.4028235e+38", kind: MySQLNumber, out: "3.4028234663852886e+38"},
		{col: "f4", in: "0.1", kind: MySQLNumber, out: "0.10000000149011612"},
		{col: "f4", in: "-0", kind: MySQLNumber, out: "-0"},
		{col: "f4", in: "NaN", unfit: "NaN"},
		{col: "f8", in: "-Infinity", unfit: "infinity"},
		{col: "f8", in: "Infinity", unfit: "infinity"},
		{col: "f8", in: "0.1", kind: MySQLNumber, out: "0.1"},
		{col: "f8", in: "1e-310", kind: MySQLNumber, out: "1e-310"},
		{col: "f8", in: "0x10", unfit: "not a number"},
		{col: "f8", in: "inf", unfit: "not a number"},
		{col: "n", in: "12345678901234567890123456789012345.123456789012345678901234567890", kind: MySQLNumber,
			out: "12345678901234567890123456789012345.12345678901234567890123456789"},
		{col: "n", in: "123456789012345678901234567890123456", unfit: "36 digits before the point"},
		{col: "n", in: "0.0000000000000000000000000000001", unfit: "31 digits after the point"},
		{col: "n", in: "0.100000000000000000000000000000000000", kind: MySQLNumber, out: "0.1"},
		{col: "n", in: "NaN", unfit: "NaN"},
		{col: "n", in: "Infinity", unfit: "infinity"},
		{col: "n", in: "-0.000", kind: MySQLNumber, out: "0"},
		{col: "n", in: "-007.50", kind: MySQLNumber, out: "-7.5"},
		{col: "n", in: "1e3", kind: MySQLNumber, out: "1000"},
		{col: "n", in: "1.5e-3", kind: MySQLNumber, out: "0.0015"},
		{col: "n52", in: "999.99", kind: MySQLNumber, out: "999.99"},
		{col: "n52", in: "1000.00", unfit: "4 digits before the point; DECIMAL(5,2) keeps 3"},
		{col: "n52", in: "1.125", unfit: "3 digits after the point"},
		{col: "t", in: "tab\there 'q' \\ 🎉", kind: MySQLString, out: "tab\there 'q' \\ 🎉"},
		{col: "ch", in: "ab   ", kind: MySQLString, out: "ab"},
		{col: "ch", in: " a b ", kind: MySQLString, out: " a b"},
		{col: "by", in: `\x00ff5c`, kind: MySQLBytes, out: "00ff5c"},
		{col: "by", in: `\x`, kind: MySQLBytes, out: ""},
		{col: "by", in: `a\\b\000\377`, kind: MySQLBytes, out: "615c6200ff"},
		{col: "by", in: `\xzz`, unfit: "bad hex"},
		{col: "d", in: "2024-02-29", kind: MySQLString, out: "2024-02-29"},
		{col: "d", in: "1000-01-01", kind: MySQLString, out: "1000-01-01"},
		{col: "d", in: "0999-12-31", unfit: "1000 to 9999"},
		{col: "d", in: "10000-01-01", unfit: "1000 to 9999"},
		{col: "d", in: "2024-01-01 BC", unfit: "1000 to 9999"},
		{col: "d", in: "infinity", unfit: "infinite"},
		{col: "d", in: "-infinity", unfit: "infinite"},
		{col: "tm", in: "23:59:59.999999", kind: MySQLString, out: "23:59:59.999999"},
		{col: "tm", in: "24:00:00", unfit: "24:00:00"},
		{col: "ts", in: "9999-12-31 23:59:59.999999", kind: MySQLString, out: "9999-12-31 23:59:59.999999"},
		{col: "ts", in: "0500-06-01 00:00:00", unfit: "1000 to 9999"},
		{col: "ts", in: "infinity", unfit: "infinite"},
		{col: "ts", in: "2000-01-01 00:00:00 BC", unfit: "1000 to 9999"},
		{col: "ts", in: "12000-01-01 00:00:00", unfit: "1000 to 9999"},
		{col: "tz", in: "2024-05-06 07:08:09.123456+02", kind: MySQLString, out: "2024-05-06 05:08:09.123456"},
		{col: "tz", in: "2024-05-06 00:08:09+05:30", kind: MySQLString, out: "2024-05-05 18:38:09"},
		{col: "tz", in: "2024-12-31 22:00:00-03:00:15", kind: MySQLString, out: "2025-01-01 01:00:15"},
		{col: "tz", in: "2024-05-06 07:08:09.5+00", kind: MySQLString, out: "2024-05-06 07:08:09.5"},
		{col: "tz", in: "1000-01-01 00:30:00+01", unfit: "in UTC"},
		{col: "tz", in: "9999-12-31 23:30:00-01", unfit: "in UTC"},
		{col: "tz", in: "-infinity", unfit: "infinite"},
		{col: "tz", in: "2024-05-06 07:08:09", unfit: "ISO form"},
		{col: "tz", in: "2024-05-06 07:08:09.123", unfit: "offset"},
		{col: "j", in: `{"a": [1, 2.5, "x\"y"], "b": null}`, kind: MySQLString, out: `{"a": [1, 2.5, "x\"y"], "b": null}`},
		{col: "j", in: `{"n": 1.00000000000000000001, "s": "1.00000000000000000001"}`, kind: MySQLString,
			out: `{"n": 1.00000000000000000001, "s": "1.00000000000000000001"}`, mariadb: true},
		{col: "j", in: `{"n": 1.00000000000000000001}`, unfit: "more precision than a double", mysql8: true},
		{col: "j", in: `{"n": 12345678901234567890, "m": -9223372036854775808, "f": 0.1, "e": 1.5e300, "z": 1.0}`, kind: MySQLString,
			out: `{"n": 12345678901234567890, "m": -9223372036854775808, "f": 0.1, "e": 1.5e300, "z": 1.0}`, mysql8: true},
		{col: "j", in: `[123456789012345678901]`, unfit: "more precision", mysql8: true},
		{col: "j", in: `[1e400]`, unfit: "beyond a double", mysql8: true},
		{col: "ia", in: "{1,2,NULL,-3}", kind: MySQLString, out: "[1,2,null,-3]"},
		{col: "ia", in: "{{1,2},{3,4}}", kind: MySQLString, out: "[[1,2],[3,4]]"},
		{col: "ia", in: "{}", kind: MySQLString, out: "[]"},
		{col: "ia", in: "[0:1]={1,2}", unfit: "explicit bounds"},
		{col: "ia", in: "{1,2", unfit: "bad array"},
		{col: "ta", in: `{a,"b c","NULL",NULL,"q\"x\\y",""}`, kind: MySQLString, out: `["a","b c","NULL",null,"q\"x\\y",""]`},
		{col: "ta", in: "{\"tab\there\nnl\"}", kind: MySQLString, out: `["tab\there\nnl"]`},
		{col: "ba", in: "{t,f,NULL}", kind: MySQLString, out: "[true,false,null]"},
		{col: "na", in: "{1.50,-2,NaN}", unfit: "JSON has no NaN"},
		{col: "na", in: "{1.50,-2}", kind: MySQLString, out: "[1.50,-2]"},
		{col: "na", in: "{0.10000000000000000001}", unfit: "more precision", mysql8: true},
		{col: "ja", in: `{"{\"a\": 1}",NULL}`, kind: MySQLString, out: `[{"a": 1},null]`},
		{col: "boxes", in: "{(1,1),(0,0);(2,2),(1,1)}", kind: MySQLString, out: `["(1,1),(0,0)","(2,2),(1,1)"]`},
		{col: "u", in: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", kind: MySQLString, out: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
	}
	for _, server := range []MySQLServer{mariaDB1011, mysql84} {
		m, err := NewMySQL(server, "db").Table(tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			i, ok := idx[c.col]
			if !ok {
				t.Fatalf("no column %s", c.col)
			}
			if c.mariadb && !server.MariaDB {
				continue
			}
			v, err := m.Convert(i, []byte(c.in))
			unfit := c.unfit != "" && (!c.mysql8 || !server.MariaDB)
			if unfit {
				var ue *UnfitError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnfit) || !strings.Contains(err.Error(), c.unfit) || !strings.Contains(err.Error(), `"`+c.col+`"`) {
					t.Errorf("%s: %s %q: err %v, want one mentioning %q", server, c.col, c.in, err, c.unfit)
				}
				continue
			}
			if c.unfit != "" {
				continue // fits on MariaDB, whose JSON keeps the text
			}
			if err != nil {
				t.Errorf("%s: %s %q: %v", server, c.col, c.in, err)
				continue
			}
			got := string(v.Data)
			if v.Kind == MySQLBytes {
				got = hex.EncodeToString(v.Data)
			}
			if v.Kind != c.kind || got != c.out {
				t.Errorf("%s: %s %q = kind %d %q, want kind %d %q", server, c.col, c.in, v.Kind, got, c.kind, c.out)
			}
		}
	}
}

func TestMySQLAppendLiteral(t *testing.T) {
	for _, c := range []struct {
		v    MySQLValue
		want string
	}{
		{MySQLValue{Kind: MySQLNull}, "NULL"},
		{MySQLValue{Kind: MySQLNumber, Data: []byte("-1.5")}, "-1.5"},
		{MySQLValue{Kind: MySQLString, Data: []byte("a'b\"c\\d\x00e\nf\rg\x1ah")}, `'a\'b\"c\\d\0e\nf\rg\Zh'`},
		{MySQLValue{Kind: MySQLString, Data: nil}, "''"},
		{MySQLValue{Kind: MySQLBytes, Data: []byte{0, 0xff, '\''}}, "X'00ff27'"},
		{MySQLValue{Kind: MySQLBytes}, "''"},
	} {
		if got := string(AppendLiteral(nil, c.v)); got != c.want {
			t.Errorf("AppendLiteral(%v) = %s, want %s", c.v, got, c.want)
		}
	}
	if got := QuoteString("it's"); got != `'it\'s'` {
		t.Errorf("QuoteString = %s", got)
	}
}

// FuzzMySQLConvert: no input makes a conversion panic, and what converts
// without error renders as a literal.
func FuzzMySQLConvert(f *testing.F) {
	for _, s := range []string{"1", "NaN", "{1,{2}}", `{"a\"b"}`, `\x00`, "2024-01-01 00:00:00+02", "24:00:00", `{"a":1e999}`, "[0:1]={}"} {
		f.Add(s)
	}
	tb := convTable()
	maps := []*MySQLTable{}
	for _, server := range []MySQLServer{mariaDB1011, mysql84} {
		m, err := NewMySQL(server, "db").Table(tb)
		if err != nil {
			f.Fatal(err)
		}
		maps = append(maps, m)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, m := range maps {
			for i := range tb.Columns {
				v, err := m.Convert(i, []byte(in))
				if err != nil {
					if !errors.Is(err, ErrUnfit) || strings.Contains(err.Error(), "\n") {
						t.Fatalf("column %d: %q: error %v is not one line wrapping ErrUnfit", i, in, err)
					}
					continue
				}
				_ = AppendLiteral(nil, v)
			}
		}
	})
}

func TestMySQLCompareAs(t *testing.T) {
	tb := convTable()
	for _, c := range []struct {
		server MySQLServer
		col    int
		want   string
	}{
		{mysql84, 16, "CAST('{}' AS JSON)"}, {mariaDB1011, 16, "'{}'"}, {mysql84, 17, "CAST('{}' AS JSON)"}, {mysql84, 5, "'{}'"},
	} {
		m, err := NewMySQL(c.server, "db").Table(tb)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.CompareAs(c.col, "'{}'"); got != c.want {
			t.Errorf("%s: column %s: %s, want %s", c.server, tb.Columns[c.col].Name, got, c.want)
		}
	}
}
