// Package canon defines one canonical text form per source (PostgreSQL) type,
// the form `pgrelay verify` compares values in, whatever each side stores them
// as: a PostgreSQL target holds the source's types, a MySQL target the
// mapping of DESIGN.md ("Schema mapping"). Each side turns what it reads into
// the canonical form of the source column's type; equal forms mean equal
// values. The package is pure: the converters take what a driver returns.
//
// # The forms
//
// Mostly PostgreSQL's own text output under fixed settings (DateStyle ISO,
// TimeZone UTC, IntervalStyle postgres, bytea_output hex), where it is
// already the same for equal values, with these normalisations:
//
//	bool                   t, f
//	int2, int4, int8       decimal digits
//	float4, float8         shortest text that reads back to the same value
//	                       (PostgreSQL 12+'s output: 0.1, 1e+15, 1.5e-05);
//	                       NaN, Infinity, -Infinity; -0 is 0 (as float's =
//	                       says; MySQL and MariaDB cannot hold -0)
//	numeric                without trailing fractional zeros: 1.50 and 1.5
//	                       are equal (as numeric's = says); NaN, ±Infinity
//	money                  its amount as numeric
//	text, varchar          the characters
//	char(n)                without trailing spaces (they are padding in
//	                       PostgreSQL's char semantics; MySQL strips them)
//	bytea                  \x and lower-case hex
//	date, time, timestamp  ISO text, microseconds, fraction without
//	                       trailing zeros; BC and infinity as PostgreSQL
//	timestamptz            the UTC instant: 2024-02-29 07:04:56.789012+00
//	uuid                   lower-case 8-4-4-4-12
//	json, jsonb            jsonb's text: keys sorted (shorter first, then
//	                       bytewise), the last of duplicate keys, no
//	                       insignificant whitespace, numbers as numeric reads
//	                       them (1e2 is 100, 1.50 stays 1.50)
//	arrays                 PostgreSQL's array text of its elements' output
//	others (enum, inet,    PostgreSQL's text output
//	interval, composite…)
//
// A Type may ask for JSON numbers to be compared as float8 (DoubleNumbers):
// a target whose JSON keeps numbers as doubles (MySQL 8) cannot hold more.
//
// # Rows and chunks
//
// A row's canonical text is a PostgreSQL record literal of its values,
// ROW(v1, v2, …)::text (RecordText), hashed with md5 (RowHash); a set of rows
// is counted and checksummed order-independently (Checksum). A PostgreSQL
// server computes the same in SQL (PostgresExpr and package
// internal/pgverify), so a side that can checksum on the server and one that
// reads rows give comparable answers.
package canon

import (
	"fmt"
)

// Kind is the canonical form a value takes.
type Kind uint8

const (
	// Unknown is a column whose form its side cannot tell (a MySQL VARCHAR may
	// hold an enum, inet or interval): the comparison gives it the source
	// column's Type.
	KindUnknown Kind = iota
	// Other is PostgreSQL's text output, as is: enum, inet, cidr, macaddr,
	// interval, timetz, composite, range, xml and every type not listed.
	KindOther
	KindBool
	KindInt // int2, int4, int8 (and oid)
	KindFloat4
	KindFloat8
	KindNumeric
	KindMoney
	KindText // text, varchar, name
	KindChar // char(n): trailing spaces are padding
	KindBytea
	KindDate
	KindTime
	KindTimestamp
	KindTimestampTZ
	KindUUID
	KindJSON  // json: compared as jsonb
	KindJSONB // jsonb
	KindArray
)

var kindNames = [...]string{"unknown", "other", "bool", "int", "float4", "float8", "numeric", "money",
	"text", "char", "bytea", "date", "time", "timestamp", "timestamptz", "uuid", "json", "jsonb", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Type is how a column's values compare.
type Type struct {
	Kind Kind
	// Elem is the element kind of an Array.
	Elem Kind
	// DoubleNumbers compares the numbers in a JSON document, and the numeric
	// and float elements of an array, as float8 values: for a target whose
	// JSON holds numbers as doubles.
	DoubleNumbers bool
}

func (t Type) String() string {
	s := t.Kind.String()
	if t.Kind == KindArray {
		s = t.Elem.String() + "[]"
	}
	if t.DoubleNumbers {
		s += " (numbers as float8)"
	}
	return s
}

// PostgreSQL type OIDs of the built-in types with a form of their own.
const (
	OIDBool        = 16
	OIDBytea       = 17
	OIDName        = 19
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDOid         = 26
	OIDJSON        = 114
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDMoney       = 790
	OIDBpchar      = 1042
	OIDVarchar     = 1043
	OIDDate        = 1082
	OIDTime        = 1083
	OIDTimestamp   = 1114
	OIDTimestampTZ = 1184
	OIDNumeric     = 1700
	OIDUUID        = 2950
	OIDJSONB       = 3802
)

// KindOf is the kind of a (base, not domain) PostgreSQL type by OID.
func KindOf(oid uint32) Kind {
	switch oid {
	case OIDBool:
		return KindBool
	case OIDInt2, OIDInt4, OIDInt8, OIDOid:
		return KindInt
	case OIDFloat4:
		return KindFloat4
	case OIDFloat8:
		return KindFloat8
	case OIDNumeric:
		return KindNumeric
	case OIDMoney:
		return KindMoney
	case OIDText, OIDVarchar, OIDName:
		return KindText
	case OIDBpchar:
		return KindChar
	case OIDBytea:
		return KindBytea
	case OIDDate:
		return KindDate
	case OIDTime:
		return KindTime
	case OIDTimestamp:
		return KindTimestamp
	case OIDTimestampTZ:
		return KindTimestampTZ
	case OIDUUID:
		return KindUUID
	case OIDJSON:
		return KindJSON
	case OIDJSONB:
		return KindJSONB
	}
	return KindOther
}

// TypeOf is the Type of a PostgreSQL column whose base type (domains
// resolved) is oid; elemOID is the base type of its elements when it is an
// array, 0 otherwise.
func TypeOf(oid, elemOID uint32) Type {
	if elemOID != 0 {
		return Type{Kind: KindArray, Elem: KindOf(elemOID)}
	}
	return Type{Kind: KindOf(oid)}
}

// Value is one canonical value; Valid is false for NULL.
type Value struct {
	S     string
	Valid bool
}

// Null is the NULL value.
var Null = Value{}

// V is the non-NULL value s.
func V(s string) Value { return Value{S: s, Valid: true} }

func (v Value) String() string {
	if !v.Valid {
		return "NULL"
	}
	return v.S
}
