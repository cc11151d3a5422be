package schema

import (
	"strconv"
	"strings"
)

// builtinTypeNames are format_type's spellings of common built-in types, by OID.
// Types that take a typmod are spelled by BuiltinTypeName.
var builtinTypeNames = map[uint32]string{
	16: "boolean", 17: "bytea", 18: `"char"`, 19: "name", 20: "bigint", 21: "smallint",
	23: "integer", 24: "regproc", 25: "text", 26: "oid", 28: "xid", 114: "json", 142: "xml",
	600: "point", 601: "lseg", 602: "path", 603: "box", 604: "polygon", 628: "line", 718: "circle",
	650: "cidr", 700: "real", 701: "double precision", 774: "macaddr8", 790: "money",
	829: "macaddr", 869: "inet", 1082: "date", 2205: "regclass", 2206: "regtype", 2950: "uuid",
	3220: "pg_lsn", 3614: "tsvector", 3615: "tsquery", 3802: "jsonb", 4072: "jsonpath",
	3904: "int4range", 3906: "numrange", 3908: "tsrange", 3910: "tstzrange", 3912: "daterange",
	3926: "int8range",
}

// builtinArrayElems maps built-in array type OIDs to their element type OIDs.
var builtinArrayElems = map[uint32]uint32{
	1000: 16, 1001: 17, 1002: 18, 1003: 19, 1016: 20, 1005: 21, 1007: 23, 1008: 24, 1009: 25,
	1028: 26, 1011: 28, 199: 114, 143: 142, 1017: 600, 1018: 601, 1019: 602, 1020: 603,
	1027: 604, 629: 628, 719: 718, 651: 650, 1021: 700, 1022: 701, 775: 774, 791: 790,
	1040: 829, 1041: 869, 1182: 1082, 2210: 2205, 2211: 2206, 2951: 2950, 3221: 3220,
	3643: 3614, 3645: 3615, 3807: 3802, 4073: 4072, 3905: 3904, 3907: 3906, 3909: 3908,
	3911: 3910, 3913: 3912, 3927: 3926,
	1014: 1042, 1015: 1043, 1183: 1083, 1115: 1114, 1185: 1184, 1187: 1186, 1270: 1266,
	1561: 1560, 1563: 1562, 1231: 1700,
}

// BuiltinTypeName spells a built-in type the way the source's format_type(oid,
// typmod) does, for the common built-in types and arrays of them. It reports
// false for other types. The catalog uses it when the source catalog no longer
// has the column a Relation message describes.
func BuiltinTypeName(oid uint32, typmod int32) (string, bool) {
	if elem, ok := builtinArrayElems[oid]; ok {
		name, ok := BuiltinTypeName(elem, typmod)
		if !ok {
			return "", false
		}
		return name + "[]", true
	}
	if name, ok := builtinTypeNames[oid]; ok {
		return name, true
	}
	const varhdrsz = 4
	switch oid {
	case 1042: // bpchar
		if typmod < varhdrsz {
			return "bpchar", true
		}
		return "character(" + itoa(typmod-varhdrsz) + ")", true
	case 1043:
		if typmod < varhdrsz {
			return "character varying", true
		}
		return "character varying(" + itoa(typmod-varhdrsz) + ")", true
	case 1560:
		if typmod < 0 {
			return `"bit"`, true // plain bit means bit(1)
		}
		return "bit(" + itoa(typmod) + ")", true
	case 1562:
		if typmod < 0 {
			return "bit varying", true
		}
		return "bit varying(" + itoa(typmod) + ")", true
	case 1700:
		if typmod < varhdrsz {
			return "numeric", true
		}
		m := typmod - varhdrsz
		precision := (m >> 16) & 0xffff
		scale := ((m & 0x7ff) ^ 1024) - 1024 // sign-extended 11 bits (negative scales: PostgreSQL 15+)
		return "numeric(" + itoa(precision) + "," + itoa(scale) + ")", true
	case 1083:
		return "time" + precisionSuffix(typmod) + " without time zone", true
	case 1266:
		return "time" + precisionSuffix(typmod) + " with time zone", true
	case 1114:
		return "timestamp" + precisionSuffix(typmod) + " without time zone", true
	case 1184:
		return "timestamp" + precisionSuffix(typmod) + " with time zone", true
	case 1186:
		return intervalName(typmod), true
	}
	return "", false
}

func precisionSuffix(typmod int32) string {
	if typmod < 0 {
		return ""
	}
	return "(" + itoa(typmod) + ")"
}

// intervalName follows PostgreSQL's intervaltypmodout.
func intervalName(typmod int32) string {
	if typmod < 0 {
		return "interval"
	}
	const (
		month, year, day          = 1 << 1, 1 << 2, 1 << 3
		hour, minute, second      = 1 << 10, 1 << 11, 1 << 12
		fullRange, fullPrecision  = 0x7fff, 0xffff
		dayToSecond, hourToSecond = day | hour | minute | second, hour | minute | second
	)
	fields := (typmod >> 16) & 0x7fff
	precision := typmod & 0xffff
	names := map[int32]string{
		year: "year", month: "month", day: "day", hour: "hour", minute: "minute", second: "second",
		year | month: "year to month", day | hour: "day to hour", day | hour | minute: "day to minute",
		dayToSecond: "day to second", hour | minute: "hour to minute", hourToSecond: "hour to second",
		minute | second: "minute to second",
	}
	var b strings.Builder
	b.WriteString("interval")
	if fields != fullRange {
		name, ok := names[fields]
		if !ok {
			return "interval" // not a typmod PostgreSQL produces; the unrestricted type holds every value
		}
		b.WriteString(" " + name)
	}
	if precision != fullPrecision {
		b.WriteString("(" + itoa(precision) + ")")
	}
	return b.String()
}

func itoa(i int32) string { return strconv.FormatInt(int64(i), 10) }

// quoteAlways quotes an identifier whatever it holds, doubling embedded quotes.
func quoteAlways(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), `"`, `""`) + `"`
}
