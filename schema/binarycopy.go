package schema

// binaryCopyTypes are the built-in types whose COPY binary form (typsend and
// typreceive) is the same on every PostgreSQL 14–18 server and embeds no OID
// that differs between databases, by OID, with their pg_catalog names. The
// arrays of these are listed too: a built-in array's binary form carries its
// element type's OID, which is the same on every server.
//
// Left out on purpose: the reg* types (their binary form is an OID of the
// database the value comes from, where text names the object), xml, the
// geometric and text-search types, ranges, and every type that is not built in
// (enums, domains, composites, extension types, arrays of them).
var binaryCopyTypes = map[uint32]string{
	16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4",
	25: "text", 26: "oid", 114: "json", 700: "float4", 701: "float8", 790: "money",
	829: "macaddr", 774: "macaddr8", 869: "inet", 650: "cidr", 1042: "bpchar",
	1043: "varchar", 1082: "date", 1083: "time", 1266: "timetz", 1114: "timestamp",
	1184: "timestamptz", 1186: "interval", 1560: "bit", 1562: "varbit", 1700: "numeric",
	2950: "uuid", 3220: "pg_lsn", 3802: "jsonb",

	1000: "_bool", 1001: "_bytea", 1002: "_char", 1003: "_name", 1016: "_int8",
	1005: "_int2", 1007: "_int4", 1009: "_text", 1028: "_oid", 199: "_json",
	1021: "_float4", 1022: "_float8", 791: "_money", 1040: "_macaddr", 775: "_macaddr8",
	1041: "_inet", 651: "_cidr", 1014: "_bpchar", 1015: "_varchar", 1182: "_date",
	1183: "_time", 1270: "_timetz", 1115: "_timestamp", 1185: "_timestamptz",
	1187: "_interval", 1561: "_bit", 1563: "_varbit", 1231: "_numeric", 2951: "_uuid",
	3221: "_pg_lsn", 3807: "_jsonb",
}

// binaryCopyNewValues are listed types whose values grew in a later major: a
// server from that major on may send values that an older one's receive
// function takes for something else. An infinite interval (PostgreSQL 17) is
// read by a PostgreSQL 16 target as a finite interval of about 178 million
// years, where COPY text fails loudly; a numeric ±Infinity (14) is at least
// refused by older targets.
var binaryCopyNewValues = map[uint32]int{
	1700: 14, 1231: 14, // numeric, numeric[]: ±Infinity
	1186: 17, 1187: 17, // interval, interval[]: ±infinity
}

// BinaryCopyType returns the name in pg_catalog of the built-in type oid when
// values of it may move between PostgreSQL servers in COPY binary format: the
// type to cast a column to on the source (without typmod, so the bytes are of
// exactly that type) and to require of the target column. It reports false for
// every other type; those go in COPY text format.
func BinaryCopyType(oid uint32) (name string, ok bool) {
	name, ok = binaryCopyTypes[oid]
	return name, ok
}

// BinaryCopyBetween reports whether values of type oid may go in COPY binary
// format from a source server of major sourceMajor to a target server of major
// targetMajor: oid is one of BinaryCopyType's and the target reads every value
// the source can send as the same value. 0 stands for an unknown major.
func BinaryCopyBetween(oid uint32, sourceMajor, targetMajor int) bool {
	if _, ok := binaryCopyTypes[oid]; !ok {
		return false
	}
	since, ok := binaryCopyNewValues[oid]
	if !ok {
		return true
	}
	sourceMayHave := sourceMajor == 0 || sourceMajor >= since
	targetReads := targetMajor >= since
	return !sourceMayHave || targetReads
}
