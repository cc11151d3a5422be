package canon

import (
	"fmt"
)

// PostgresSettings are the session settings under which a PostgreSQL
// server's text output of a value is what PostgresExpr and
// FromPostgresText expect: ISO dates, UTC, hex bytea, shortest floats
// (PostgreSQL 12+ with extra_float_digits > 0; older servers print 17
// significant digits, which FromPostgresText shortens), UTF8, money in the C
// locale.
const PostgresSettings = `SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET TimeZone = 'UTC';
SET extra_float_digits = 3; SET bytea_output = 'hex'; SET client_encoding = 'UTF8'; SET lc_monetary = 'C'`

// PostgresExpr is SQL that a PostgreSQL server of major version major,
// under PostgresSettings, prints as the form of column col (an SQL
// expression, usually a quoted name) of Type t: read with text result
// format, or put in ROW(…)::text for RowHash's text. ok is false when the
// server cannot: select col itself then and convert its text with
// FromPostgresText.
func PostgresExpr(col string, t Type, major int) (expr string, ok bool) {
	switch t.Kind {
	case KindFloat4:
		return "(" + col + " + 0::pg_catalog.float4)", major >= 12 // -0 + 0 is 0
	case KindFloat8:
		return "(" + col + " + 0::pg_catalog.float8)", major >= 12
	case KindNumeric:
		return trimScale(col, major), true
	case KindMoney:
		return trimScale(col+"::pg_catalog.numeric", major), true
	case KindChar:
		return col + "::pg_catalog.text", true // bpchar's cast to text drops the padding
	case KindJSON:
		return col + "::pg_catalog.jsonb", !t.DoubleNumbers
	case KindJSONB:
		return col, !t.DoubleNumbers
	case KindArray:
		return col, !t.DoubleNumbers || !numberElems(t.Elem)
	}
	return col, true
}

// trimScale drops trailing fractional zeros of a numeric expression:
// trim_scale (PostgreSQL 13+), or the same on its text.
func trimScale(expr string, major int) string {
	if major >= 13 {
		return "pg_catalog.trim_scale(" + expr + ")"
	}
	return "pg_catalog.regexp_replace((" + expr + ")::pg_catalog.text, '(\\.[0-9]*[1-9])0+$|\\.0+$', '\\1')"
}

// FromPostgresText is the form of a value of Type t given as its PostgreSQL
// text output under PostgresSettings: for the columns PostgresExpr could not
// convert on the server, and for tests.
func FromPostgresText(t Type, s string) (string, error) {
	switch t.Kind {
	case KindFloat4:
		return FloatText(s, 32)
	case KindFloat8:
		return FloatText(s, 64)
	case KindNumeric:
		return NumericText(s)
	case KindMoney:
		return "", fmt.Errorf("money %q: convert it on the server (PostgresExpr)", s)
	case KindChar:
		return CharText(s), nil
	case KindJSON, KindJSONB:
		return JSON(s, t.DoubleNumbers)
	case KindArray:
		return ArrayText(s, t)
	}
	return s, nil
}
