package canon

import (
	"math"
	"testing"
	"time"
)

// TestFromMySQL: what go-sql-driver/mysql returns for each mapped column
// type, in the text protocol ([]byte) and the binary one (int64, float32,
// float64, time.Time), comes out in the source type's form.
func TestFromMySQL(t *testing.T) {
	k := func(kind Kind) Type { return Type{Kind: kind} }
	ist := time.FixedZone("IST", 5*3600+1800)
	for _, c := range []struct {
		t    Type
		v    any
		want string
	}{
		{k(KindBool), int64(1), "t"},
		{k(KindBool), []byte("0"), "f"},
		{k(KindBool), int64(2), "2"}, // not a bool: a difference, not an error
		{k(KindInt), int64(-9223372036854775808), "-9223372036854775808"},
		{k(KindInt), []byte("32767"), "32767"},
		{k(KindInt), uint64(7), "7"},
		{k(KindFloat8), 0.1, "0.1"},
		{k(KindFloat8), []byte("1e20"), "1e+20"},
		{k(KindFloat8), []byte("-0"), "0"},
		{k(KindFloat8), math.Copysign(0, -1), "0"},
		{k(KindFloat4), float32(0.1), "0.1"},
		{k(KindFloat4), float64(float32(1.17549435e-38)), "1.1754944e-38"}, // CAST(c AS DOUBLE)
		{k(KindFloat4), []byte("123456.7"), "123456.7"},
		{k(KindNumeric), []byte("1.500000000000000000000000000000"), "1.5"},
		{k(KindNumeric), []byte("-99999999999999.999999"), "-99999999999999.999999"},
		{k(KindNumeric), []byte("0.000000"), "0"},
		{k(KindNumeric), int64(12), "12"},
		{k(KindMoney), []byte("12.50"), "12.5"},
		{k(KindMoney), []byte("$1,234.50"), "1234.5"}, // the text form a money column holds
		{k(KindMoney), []byte("-$92,233,720,368,547,758.08"), "-92233720368547758.08"},
		{k(KindMoney), []byte("$0.00"), "0"},
		{k(KindText), []byte("a\x00b"), "a\x00b"},
		{k(KindText), []byte("ünïcødé 🐘"), "ünïcødé 🐘"},
		{k(KindChar), []byte("ab"), "ab"},
		{k(KindChar), []byte("ab   "), "ab"}, // a TEXT column keeps the padding
		{k(KindBytea), []byte{0, 0xff, 0x5c}, `\x00ff5c`},
		{k(KindBytea), []byte{}, `\x`},
		{k(KindDate), []byte("2024-02-29"), "2024-02-29"},
		{k(KindDate), time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "2024-02-29"},
		{k(KindTime), []byte("12:34:56.100000"), "12:34:56.1"},
		{k(KindTime), []byte("24:00:00"), "24:00:00"},
		{k(KindTimestamp), []byte("1999-12-31 23:59:59.999000"), "1999-12-31 23:59:59.999"},
		{k(KindTimestamp), []byte("2000-01-01 00:00:00"), "2000-01-01 00:00:00"},
		{k(KindTimestamp), time.Date(2024, 1, 1, 8, 0, 0, 500000000, ist), "2024-01-01 08:00:00.5"},
		{k(KindTimestampTZ), []byte("2024-02-29 07:04:56.789012"), "2024-02-29 07:04:56.789012+00"},
		{k(KindTimestampTZ), time.Date(2024, 2, 29, 7, 4, 56, 789012000, time.UTC), "2024-02-29 07:04:56.789012+00"},
		{k(KindTimestampTZ), time.Date(2024, 2, 29, 12, 34, 56, 789012000, ist), "2024-02-29 07:04:56.789012+00"},
		{k(KindUUID), []byte("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{k(KindUUID), []byte("\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a\x11"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{k(KindJSONB), []byte(`{"b": [1, 2], "a": 1.50}`), `{"a": 1.50, "b": [1, 2]}`},
		{Type{Kind: KindJSONB, DoubleNumbers: true}, []byte(`{"a": 1.5}`), `{"a": 1.5}`},
		{Type{Kind: KindArray, Elem: KindInt}, []byte(`[[1, 2], [3, null]]`), `{{1,2},{3,NULL}}`},
		{Type{Kind: KindArray, Elem: KindText}, []byte(`["a b", ""]`), `{"a b",""}`},
		{k(KindOther), []byte("10.0.1.2/32"), "10.0.1.2/32"},
		{k(KindOther), []byte("1 year 2 mons"), "1 year 2 mons"},
	} {
		got, err := FromMySQL(c.t, c.v)
		if err != nil || !got.Valid || got.S != c.want {
			t.Errorf("FromMySQL(%s, %#v) = %v, %v; want %q", c.t, c.v, got, err, c.want)
		}
	}
	if v, err := FromMySQL(k(KindText), nil); err != nil || v.Valid {
		t.Errorf("FromMySQL(nil) = %v, %v; want NULL", v, err)
	}
	for _, c := range []struct {
		t Type
		v any
	}{
		{k(KindInt), []byte("1.5")},
		{k(KindInt), 1.5},
		{k(KindNumeric), []byte("abc")},
		{k(KindDate), []byte("0000-00-00")},
		{k(KindTimestamp), []byte("2024-01-01")},
		{k(KindTime), []byte("noon")},
		{k(KindUUID), []byte("not-a-uuid")},
		{k(KindJSONB), []byte(`{"a":`)},
		{Type{Kind: KindArray, Elem: KindInt}, []byte(`{1,2}`)},
		{k(KindBytea), int64(1)},
		{k(KindInt), time.Now()},
	} {
		if got, err := FromMySQL(c.t, c.v); err == nil {
			t.Errorf("FromMySQL(%s, %#v) = %v, want an error", c.t, c.v, got)
		}
	}
}

func TestMySQLArg(t *testing.T) {
	for _, c := range []struct {
		t    Type
		in   string
		want any
	}{
		{Type{Kind: KindBool}, "t", int64(1)},
		{Type{Kind: KindBool}, "f", int64(0)},
		{Type{Kind: KindTimestampTZ}, "2024-02-29 07:04:56.789012+00", "2024-02-29 07:04:56.789012"},
		{Type{Kind: KindInt}, "42", "42"},
		{Type{Kind: KindText}, "a b", "a b"},
	} {
		got, err := MySQLArg(c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("MySQLArg(%s, %q) = %#v, %v; want %#v", c.t, c.in, got, err, c.want)
		}
	}
	if got, err := MySQLArg(Type{Kind: KindBytea}, `\x00ff`); err != nil || string(got.([]byte)) != "\x00\xff" {
		t.Errorf("MySQLArg(bytea) = %#v, %v", got, err)
	}
	for _, c := range []struct {
		t  Type
		in string
	}{
		{Type{Kind: KindBool}, "true"},
		{Type{Kind: KindTimestampTZ}, "2024-02-29 07:04:56+05:30"},
		{Type{Kind: KindBytea}, "00ff"},
		{Type{Kind: KindBytea}, `\xzz`},
	} {
		if _, err := MySQLArg(c.t, c.in); err == nil {
			t.Errorf("MySQLArg(%s, %q): no error", c.t, c.in)
		}
	}
}
