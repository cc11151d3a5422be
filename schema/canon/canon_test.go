package canon

import (
	"crypto/md5"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"
)

// The expected forms below are PostgreSQL 15's text output of the same
// values (SET TimeZone = 'UTC', extra_float_digits = 3) where PostgreSQL
// prints the form itself.

func TestFloat(t *testing.T) {
	f32 := func(f float32) float64 { return float64(f) }
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{0.1, 64, "0.1"},
		{1e15, 64, "1e+15"},
		{1e14, 64, "100000000000000"},
		{123456789012345.6, 64, "123456789012345.6"},
		{0.0001, 64, "0.0001"},
		{0.00001, 64, "1e-05"},
		{1e-300, 64, "1e-300"},
		{1e100, 64, "1e+100"},
		{5e-324, 64, "5e-324"},
		{1<<53 - 1, 64, "9.007199254740991e+15"},
		{-2.5, 64, "-2.5"},
		{1.0 / 3, 64, "0.3333333333333333"},
		{math.Copysign(0, -1), 64, "0"},
		{0, 64, "0"},
		{math.NaN(), 64, "NaN"},
		{math.Inf(1), 64, "Infinity"},
		{math.Inf(-1), 64, "-Infinity"},
		{1e6, 32, "1e+06"},
		{123456, 32, "123456"},
		{1234567, 32, "1.234567e+06"},
		{f32(0.1), 32, "0.1"},
		{f32(3.4e38), 32, "3.4e+38"},
		{f32(1.17549435e-38), 32, "1.1754944e-38"},
		{f32(1e-37), 32, "1e-37"},
		{16777216, 32, "1.6777216e+07"},
		{f32(0.00012345), 32, "0.00012345"},
		{f32(123456.7), 32, "123456.7"},
		{math.Copysign(0, -1), 32, "0"},
		// Where strconv's shortest is the midpoint to a neighbour, PostgreSQL
		// prints a longer one strictly inside.
		{f32(-2.2370079e+09), 32, "-2.2370079e+09"},
		{f32(-9.2814496e+07), 32, "-9.2814496e+07"},
		{f32(6.5535232e+07), 32, "6.5535232e+07"},
		{f32(1.11256336e+08), 32, "1.11256336e+08"},
	} {
		if got := Float(c.f, c.bits); got != c.want {
			t.Errorf("Float(%v, %d) = %q, want %q", c.f, c.bits, got, c.want)
		}
	}
}

func TestFloatText(t *testing.T) {
	for _, c := range []struct {
		in   string
		bits int
		want string
	}{
		{"0.10000000000000001", 64, "0.1"}, // PostgreSQL 11's %.17g
		{"1E+15", 64, "1e+15"},
		{"1e15", 64, "1e+15"},
		{"NaN", 64, "NaN"},
		{"-Infinity", 64, "-Infinity"},
		{"inf", 64, "Infinity"},
		{"-0", 64, "0"},
		{"1.17549435e-38", 32, "1.1754944e-38"},
		{"0.100000001", 32, "0.1"},
	} {
		got, err := FloatText(c.in, c.bits)
		if err != nil || got != c.want {
			t.Errorf("FloatText(%q, %d) = %q, %v; want %q", c.in, c.bits, got, err, c.want)
		}
	}
	if _, err := FloatText("1,5", 64); err == nil {
		t.Error("FloatText(1,5): no error")
	}
}

func TestNumericText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1.50", "1.5"},
		{"1.5", "1.5"},
		{"1.500000000000000000000000000000", "1.5"}, // DECIMAL(65,30)
		{"100", "100"},
		{"100.000", "100"},
		{"0.000", "0"},
		{"-0.00", "0"},
		{"-0", "0"},
		{"-12.340", "-12.34"},
		{"0.001", "0.001"},
		{"12345678901234567890.123456789012345678901234567890", "12345678901234567890.12345678901234567890123456789"},
		{"1e3", "1000"},
		{"1.5E-3", "0.0015"},
		{"+7", "7"},
		{".5", "0.5"},
		{"5.", "5"},
		{"007.10", "7.1"},
		{"NaN", "NaN"},
		{"Infinity", "Infinity"},
		{"-Infinity", "-Infinity"},
	} {
		got, err := NumericText(c.in)
		if err != nil || got != c.want {
			t.Errorf("NumericText(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "-", "1.2.3", "abc", "1e", "1,5", "0x10"} {
		if got, err := NumericText(bad); err == nil {
			t.Errorf("NumericText(%q) = %q, want an error", bad, got)
		}
	}
}

func TestTimes(t *testing.T) {
	ist := time.FixedZone("IST", 5*3600+1800)
	at := time.Date(2024, 2, 29, 12, 34, 56, 789012000, ist)
	for _, c := range []struct{ got, want string }{
		{Timestamp(at), "2024-02-29 12:34:56.789012"},
		{TimestampTZ(at), "2024-02-29 07:04:56.789012+00"},
		{Date(at), "2024-02-29"},
		{Timestamp(time.Date(2024, 1, 1, 0, 0, 0, 500_000_000, time.UTC)), "2024-01-01 00:00:00.5"},
		{Timestamp(time.Date(2024, 1, 1, 0, 0, 0, 999, time.UTC)), "2024-01-01 00:00:00"}, // below a microsecond
		{Timestamp(time.Date(1999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)), "1999-12-31 23:59:59.999"},
		{Date(time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC)), "0044-03-15 BC"},
		{TimestampTZ(time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC)), "4713-01-01 00:00:00+00 BC"},
		{Date(time.Date(12, 1, 2, 0, 0, 0, 0, time.UTC)), "0012-01-02"},
		{Timestamp(time.Date(294276, 12, 31, 23, 59, 59, 999000000, time.UTC)), "294276-12-31 23:59:59.999"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// One instant in three zones is one form; a wall clock is not an instant.
	utc := at.UTC()
	ny := at.In(time.FixedZone("EST", -5*3600))
	if TimestampTZ(utc) != TimestampTZ(at) || TimestampTZ(ny) != TimestampTZ(at) {
		t.Errorf("one instant, three forms: %q %q %q", TimestampTZ(at), TimestampTZ(utc), TimestampTZ(ny))
	}
	if TimestampTZ(at.Add(time.Microsecond)) == TimestampTZ(at) {
		t.Error("instants a microsecond apart have one form")
	}
	if Timestamp(utc) == Timestamp(at) {
		t.Error("timestamp: two wall clocks have one form")
	}

	for _, c := range []struct{ in, want string }{
		{"12:00:00.100000", "12:00:00.1"},
		{"12:00:00.000000", "12:00:00"},
		{"12:00:00", "12:00:00"},
		{"24:00:00", "24:00:00"},
		{"00:00:00.000001", "00:00:00.000001"},
		{"838:59:59.000000", "838:59:59"},
	} {
		if got, err := TimeText(c.in); err != nil || got != c.want {
			t.Errorf("TimeText(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"12:00", "noon", "12:00:00.1234567", "12:00:00.x"} {
		if _, err := TimeText(bad); err == nil {
			t.Errorf("TimeText(%q): no error", bad)
		}
	}
}

func TestUUIDAndBytes(t *testing.T) {
	for _, in := range []string{"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"} {
		if got, err := UUID(in); err != nil || got != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
			t.Errorf("UUID(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "a0eebc99-9c0b-4ef8-bb6d", "a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11", "g0eebc999c0b4ef8bb6d6bb9bd380a11"} {
		if _, err := UUID(bad); err == nil {
			t.Errorf("UUID(%q): no error", bad)
		}
	}
	raw, _ := hex.DecodeString("a0eebc999c0b4ef8bb6d6bb9bd380a11")
	if got, err := UUIDBytes(raw); err != nil || got != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
		t.Errorf("UUIDBytes = %q, %v", got, err)
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{nil, `\x`},
		{[]byte{}, `\x`},
		{[]byte{0, 1, 0xff}, `\x0001ff`},
		{[]byte("\x00"), `\x00`},
		{[]byte(`\N`), `\x5c4e`},
	} {
		if got := Bytes(c.in); got != c.want {
			t.Errorf("Bytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if Bytes([]byte("a\x00")) == Bytes([]byte("a")) || Bytes([]byte("\x00")) == Bytes(nil) {
		t.Error("bytes that differ in a NUL have one form")
	}
}

func TestJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// PostgreSQL: SELECT '…'::jsonb::text
		{`{"b":1,"a":2,"aa":[1.50,1e2,-0,0.1e1],"a":3, "c":"\u00e9\n\u0001\"/"}`, `{"a": 3, "b": 1, "c": "é\n\u0001\"/", "aa": [1.50, 100, 0, 1]}`},
		{`[1,"x",null,true,{}]`, `[1, "x", null, true, {}]`},
		{`{}`, `{}`},
		{` [ ] `, `[]`},
		{`"a"`, `"a"`},
		{`12345678901234567890123.5e-3`, `12345678901234567890.1235`},
		{`["a", {"b": 1}]`, `["a", {"b": 1}]`},
		{`{"k": "\ud83d\udc18 \/ \u00e9"}`, `{"k": "🐘 / é"}`},
		{`{"x":{"zz":1,"y":[{"b":false,"a":null}]}}`, `{"x": {"y": [{"a": null, "b": false}], "zz": 1}}`},
		{"\t{\"tab\":\"a\\tb\"}\n", `{"tab": "a\tb"}`},
		{`"\b\f\r\u001f\u007f"`, "\"\\b\\f\\r\\u001f\u007f\""},
		{`-0.0`, `0.0`},
		{`1E+2`, `100`},
		{`0.10e-1`, `0.010`},
		{`{"é":1,"z":2}`, `{"z": 2, "é": 1}`}, // é is two bytes: longer
	} {
		got, err := JSON(c.in, false)
		if err != nil || got != c.want {
			t.Errorf("JSON(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// Equal documents, as MySQL and MariaDB may give them back.
	equal := [][2]string{
		{`{"a":1,"b":[1,2]}`, `{"b": [1, 2], "a": 1}`},
		{`{"a": {"c": 1, "b": 2}}`, `{"a":{"b":2,"c":1}}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`[1e2]`, `[100]`},
	}
	for _, p := range equal {
		a, err1 := JSON(p[0], false)
		b, err2 := JSON(p[1], false)
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("JSON(%q) = %q, JSON(%q) = %q: want equal (%v, %v)", p[0], a, p[1], b, err1, err2)
		}
	}
	differ := [][2]string{
		{`{"a":1.50}`, `{"a":1.5}`}, // numbers as written where the target keeps them
		{`{"a":"1"}`, `{"a":1}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":null}`, `{}`},
		{`"A"`, `"a"`},
		{`null`, `"null"`},
	}
	for _, p := range differ {
		a, _ := JSON(p[0], false)
		b, _ := JSON(p[1], false)
		if a == b {
			t.Errorf("JSON(%q) and JSON(%q) are both %q: want different", p[0], p[1], a)
		}
	}
	// As doubles (a MySQL 8 target): 1.50 and 1.5 are one number.
	for _, c := range []struct{ in, want string }{
		{`{"a":1.50,"b":[1e2,0.1,12345678901234567890]}`, `{"a": 1.5, "b": [100, 0.1, 1.2345678901234567e+19]}`},
		{`-0`, `0`},
		{`[1e400]`, `[1` + strings.Repeat("0", 400) + `]`}, // no double holds it: exact
	} {
		got, err := JSON(c.in, true)
		if err != nil || got != c.want {
			t.Errorf("JSON(%q, doubles) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `+1`, `tru`, `"a`, `"\x"`, `{"a":1}x`, `"\ud83d"`, "\"a\nb\"", `NaN`} {
		if got, err := JSON(bad, false); err == nil {
			t.Errorf("JSON(%q) = %q, want an error", bad, got)
		}
	}
	if _, err := JSON(strings.Repeat("[", maxJSONDepth+2)+strings.Repeat("]", maxJSONDepth+2), false); err == nil {
		t.Error("JSON nested past the limit: no error")
	}
}

func TestArrays(t *testing.T) {
	// PostgreSQL's array text is the form; DoubleNumbers reads numbers as float8.
	for _, c := range []struct {
		in   string
		t    Type
		want string
	}{
		{`{1.50,NaN,-Infinity,3}`, Type{Kind: KindArray, Elem: KindNumeric}, `{1.50,NaN,-Infinity,3}`},
		{`{1.50,NaN,-Infinity,3}`, Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, `{1.5,NaN,-Infinity,3}`},
		{`{{1.50,2},{NULL,1e-7}}`, Type{Kind: KindArray, Elem: KindFloat8, DoubleNumbers: true}, `{{1.5,2},{NULL,1e-07}}`},
		{`[0:1]={1.0,2}`, Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, `[0:1]={1,2}`},
		{`{1e400}`, Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, `{1` + strings.Repeat("0", 400) + `}`},
		{`{"a b",c}`, Type{Kind: KindArray, Elem: KindText, DoubleNumbers: true}, `{"a b",c}`},
	} {
		got, err := ArrayText(c.in, c.t)
		if err != nil || got != c.want {
			t.Errorf("ArrayText(%q, %s) = %q, %v; want %q", c.in, c.t, got, err, c.want)
		}
	}
	arr := func(elem Kind) Type { return Type{Kind: KindArray, Elem: elem} }
	for _, c := range []struct {
		in   string
		t    Type
		want string
	}{
		{`[1, null, -1]`, arr(KindInt), `{1,NULL,-1}`},
		{`[[1,2],[3,4]]`, arr(KindInt), `{{1,2},{3,4}}`},
		{`[["x","y"],["z",null]]`, arr(KindText), `{{x,y},{z,NULL}}`},
		// SELECT ARRAY['a b', 'c,d', E'e"f', NULL, 'g\h', '', 'NULL', 'null', '{x}']::text
		{`["a b","c,d","e\"f",null,"g\\h","","NULL","null","{x}"]`, arr(KindText), `{"a b","c,d","e\"f",NULL,"g\\h","","NULL","null","{x}"}`},
		{`[]`, arr(KindInt), `{}`},
		{`[true,false,null]`, arr(KindBool), `{t,f,NULL}`},
		{`[1.50, 2]`, arr(KindNumeric), `{1.50,2}`},
		{`[1.50, 2]`, Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, `{1.5,2}`},
		{`[1e20, 0.1]`, arr(KindFloat8), `{1e+20,0.1}`},
		{`[1.17549435e-38]`, arr(KindFloat4), `{1.1754944e-38}`},
		{`["2024-01-01 00:00:00+00"]`, arr(KindTimestampTZ), `{"2024-01-01 00:00:00+00"}`},
		{`[{"b":1,"a":[2]}, "{\"x\": 1}"]`, arr(KindJSONB), `{"{\"a\": [2], \"b\": 1}","{\"x\": 1}"}`},
	} {
		got, err := ArrayFromJSON(c.in, c.t)
		if err != nil || got != c.want {
			t.Errorf("ArrayFromJSON(%q, %s) = %q, %v; want %q", c.in, c.t, got, err, c.want)
		}
	}
	for _, bad := range []string{`1`, `"a"`, `[1`, `[1,]`, `{"a":1}`, `[{"a":1}]`} {
		if got, err := ArrayFromJSON(bad, arr(KindInt)); err == nil {
			t.Errorf("ArrayFromJSON(%q) = %q, want an error", bad, got)
		}
	}
	// A parse of PostgreSQL's output writes it back as it was.
	for _, s := range []string{`{}`, `{{1,2},{3,4}}`, `{"a b","c,d","e\"f",NULL,"g\\h","","NULL"}`, `[2:3]={x,y}`, `{{{NULL}}}`} {
		dec, root, err := parseArrayText(s)
		if err != nil {
			t.Errorf("parseArrayText(%q): %v", s, err)
			continue
		}
		var b strings.Builder
		b.WriteString(dec)
		root.write(&b)
		if b.String() != s {
			t.Errorf("parseArrayText(%q) writes back %q", s, b.String())
		}
	}
	for _, bad := range []string{`{1`, `{"a}`, `1`, `[1:2]`, `{1}x`, `{{{{{{{{1}}}}}}}}`} {
		if _, _, err := parseArrayText(bad); err == nil {
			t.Errorf("parseArrayText(%q): no error", bad)
		}
	}
}

func TestRecordAndHash(t *testing.T) {
	// SELECT ROW(true, 'a b', '', NULL, 'x"y\z', '(', ' ')::text
	row := []Value{V("t"), V("a b"), V(""), Null, V(`x"y\z`), V("("), V(" ")}
	if got, want := RecordText(row), `(t,"a b","",,"x""y\\z","("," ")`; got != want {
		t.Errorf("RecordText = %s, want %s", got, want)
	}
	if got := RecordText(nil); got != "()" {
		t.Errorf("RecordText(nil) = %q", got)
	}
	// Values that must not hash alike: case, padding, NULL and empty, a
	// comma inside a value and between two.
	distinct := [][]Value{
		{V("a")}, {V("A")}, {V("a ")}, {V(" a")}, {V("")}, {Null},
		{V("a,b")}, {V("a"), V("b")}, {V("a"), Null}, {Null, V("a")}, {V(`"a"`)}, {V("(a)")},
		{V("a\tb")}, {V("a b")},
	}
	seen := map[Hash]int{}
	for i, r := range distinct {
		h := RowHash(r)
		if j, ok := seen[h]; ok {
			t.Errorf("rows %v and %v hash alike (%s, %s)", distinct[j], r, RecordText(distinct[j]), RecordText(r))
		}
		seen[h] = i
		if want := md5.Sum([]byte(RecordText(r))); h != Hash(want) {
			t.Errorf("RowHash(%v) is not the md5 of its record text", r)
		}
	}
}

func TestChecksum(t *testing.T) {
	// WITH r(t) AS (VALUES ('(1,a)'), ('(2,b)'), ('(,)'))
	// SELECT sum(('x' || left(md5(t), 16))::bit(64)::int8) FROM r
	rows := [][]Value{{V("1"), V("a")}, {V("2"), V("b")}, {Null, Null}}
	var c Checksum
	for _, r := range rows {
		c.Add(r)
	}
	if got, want := c.String(), "2034463084112901273"; got != want || c.Rows != 3 {
		t.Errorf("checksum %q of %d rows, want %q of 3", got, c.Rows, want)
	}
	var rev Checksum
	for i := len(rows) - 1; i >= 0; i-- {
		rev.Add(rows[i])
	}
	if rev.String() != c.String() {
		t.Errorf("checksum depends on the order: %q, %q", rev.String(), c.String())
	}
	var dup Checksum
	dup.Add(rows[0])
	dup.Add(rows[0])
	var one Checksum
	one.Add(rows[0])
	if dup.String() == one.String() {
		t.Error("a duplicate row does not count")
	}
	var none Checksum
	if none.String() != "" {
		t.Errorf("empty checksum %q, want \"\"", none.String())
	}
	// Sums past 64 bits, as PostgreSQL's numeric sum keeps them.
	var big Checksum
	var h Hash
	for i := range h {
		h[i] = 0x7f
	}
	for range 3 {
		big.AddHash(h)
	}
	if got, want := big.String(), "27561605851307212413"; got != want {
		t.Errorf("sum of 3 × 0x7f7f…: %s, want %s", got, want)
	}
	for i := range h {
		h[i] = 0x80
	}
	var neg Checksum
	for range 3 {
		neg.AddHash(h)
	}
	if got, want := neg.String(), "-27561605851307212416"; got != want {
		t.Errorf("sum of 3 × 0x8080…: %s, want %s", got, want)
	}
}

func TestFromPostgresText(t *testing.T) {
	for _, c := range []struct {
		t        Type
		in, want string
	}{
		{Type{Kind: KindFloat8}, "0.10000000000000001", "0.1"},
		{Type{Kind: KindFloat4}, "0.100000001", "0.1"},
		{Type{Kind: KindNumeric}, "1.50", "1.5"},
		{Type{Kind: KindChar}, "ab   ", "ab"},
		{Type{Kind: KindJSON}, `{"b":1, "a":2}`, `{"a": 2, "b": 1}`},
		{Type{Kind: KindJSONB, DoubleNumbers: true}, `{"a": 1.50}`, `{"a": 1.5}`},
		{Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, `{1.50}`, `{1.5}`},
		{Type{Kind: KindText}, "ab   ", "ab   "},
		{Type{Kind: KindOther}, "(p1,1.50)", "(p1,1.50)"},
		{Type{Kind: KindTimestampTZ}, "2024-01-01 00:00:00+00", "2024-01-01 00:00:00+00"},
	} {
		got, err := FromPostgresText(c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("FromPostgresText(%s, %q) = %q, %v; want %q", c.t, c.in, got, err, c.want)
		}
	}
}

func TestPostgresExpr(t *testing.T) {
	for _, c := range []struct {
		t     Type
		major int
		want  string
		ok    bool
	}{
		{Type{Kind: KindInt}, 15, `"c"`, true},
		{Type{Kind: KindBool}, 15, `"c"`, true},
		{Type{Kind: KindFloat8}, 15, `("c" + 0::pg_catalog.float8)`, true},
		{Type{Kind: KindFloat4}, 15, `("c" + 0::pg_catalog.float4)`, true},
		{Type{Kind: KindFloat8}, 11, `("c" + 0::pg_catalog.float8)`, false},
		{Type{Kind: KindNumeric}, 15, `pg_catalog.trim_scale("c")`, true},
		{Type{Kind: KindNumeric}, 12, `pg_catalog.regexp_replace(("c")::pg_catalog.text, '(\.[0-9]*[1-9])0+$|\.0+$', '\1')`, true},
		{Type{Kind: KindMoney}, 15, `pg_catalog.trim_scale("c"::pg_catalog.numeric)`, true},
		{Type{Kind: KindChar}, 15, `"c"::pg_catalog.text`, true},
		{Type{Kind: KindJSON}, 15, `"c"::pg_catalog.jsonb`, true},
		{Type{Kind: KindJSON, DoubleNumbers: true}, 15, `"c"::pg_catalog.jsonb`, false},
		{Type{Kind: KindArray, Elem: KindInt, DoubleNumbers: true}, 15, `"c"`, true},
		{Type{Kind: KindArray, Elem: KindNumeric, DoubleNumbers: true}, 15, `"c"`, false},
	} {
		got, ok := PostgresExpr(`"c"`, c.t, c.major)
		if got != c.want || ok != c.ok {
			t.Errorf("PostgresExpr(%s, %d) = %s, %v; want %s, %v", c.t, c.major, got, ok, c.want, c.ok)
		}
	}
}

func TestTypeOf(t *testing.T) {
	for _, c := range []struct {
		oid, elem uint32
		want      Type
	}{
		{OIDBool, 0, Type{Kind: KindBool}},
		{OIDInt8, 0, Type{Kind: KindInt}},
		{OIDBpchar, 0, Type{Kind: KindChar}},
		{OIDVarchar, 0, Type{Kind: KindText}},
		{869, 0, Type{Kind: KindOther}}, // inet
		{1007, OIDInt4, Type{Kind: KindArray, Elem: KindInt}},
		{1231, OIDNumeric, Type{Kind: KindArray, Elem: KindNumeric}},
	} {
		if got := TypeOf(c.oid, c.elem); got != c.want {
			t.Errorf("TypeOf(%d, %d) = %s, want %s", c.oid, c.elem, got, c.want)
		}
	}
}
