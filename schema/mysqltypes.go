package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// How the MySQL dialect maps PostgreSQL types (DESIGN.md, "Schema mapping"):
//
//	bool                      TINYINT(1)              1 / 0
//	int2, int4, int8, oid     SMALLINT, INT, BIGINT, INT UNSIGNED
//	float4, float8            FLOAT, DOUBLE           NaN and infinities do not fit
//	numeric(p,s)              DECIMAL(p,s)            exact; p ≤ 65, s ≤ 30, else text
//	numeric                   DECIMAL(65,30)          exact or does not fit
//	char(n ≤ 255)             CHAR(n)                 without trailing blanks, as CHAR keeps it
//	varchar(n), char(n)       VARCHAR(n ≤ 255), else TEXT, MEDIUMTEXT, LONGTEXT
//	text, xml, unbounded      LONGTEXT
//	bytea                     LONGBLOB                raw bytes
//	date, time(p)             DATE, TIME(p)           infinity, BC, 24:00:00 do not fit
//	timestamp(p)              DATETIME(p)             years 1000-9999
//	timestamptz(p)            DATETIME(p)             in UTC
//	uuid                      CHAR(36)                canonical text
//	json, jsonb               JSON                    the document
//	arrays                    JSON                    a JSON array, nested for more dimensions
//	enum                      VARCHAR(63)             the label
//	inet, cidr, macaddr(8)    VARCHAR(43), (17), (23) text form
//	domains                   their base type         the domain's checks stay on the source
//	composites, ranges,       LONGTEXT                PostgreSQL's text form
//	interval, other types
//
// Text columns get the server's binary no-pad utf8mb4 collation. A key column
// of a text or binary type is a VARCHAR or VARBINARY sized so that the whole
// key fits InnoDB's 3,072 bytes (utf8mb4 counts 4 bytes a character); a
// longer value is an error when it comes, never a truncation. A JSON column
// cannot be part of a MySQL key, nor can more than 16 columns.

// MySQL's and InnoDB's limits.
const (
	mysqlMaxIdent      = 64    // characters in a name
	mysqlMaxColumns    = 1017  // columns in an InnoDB table
	mysqlMaxKeyBytes   = 3072  // bytes of an InnoDB index key
	mysqlMaxKeyColumns = 16    // columns of an index
	mysqlMaxRowBytes   = 65535 // the server's row size limit, counting VARCHAR and CHAR at their maximum
	mysqlTextBytes     = 12    // what a TEXT, BLOB or JSON column counts toward the row size
	mysqlVarcharMax    = 255   // characters up to which a bounded text type stays VARCHAR
	utf8mb4Bytes       = 4
)

// myColumn is one column as the MySQL dialect maps it.
type myColumn struct {
	conv converter
	// sqlType is the column's MySQL type, without NULL-ness or default.
	sqlType string
	// textual: the type is a character type (VARCHAR, CHAR, TEXT kinds),
	// which takes the table's collation.
	textual bool
	// binary: VARBINARY or BLOB kinds.
	binary bool
	// bounded is the most characters (bytes for binary) a value of a text
	// or binary type has on the source, 0 when unbounded.
	bounded int
	// fixedBytes is what a fixed-size type takes in a key: 0 for text and
	// binary types, which a key sizes.
	fixedBytes int
	// json: the MySQL type is JSON.
	json bool
}

// pgType is a column's source type with domains resolved to their base.
type pgType struct {
	oid      uint32
	typmod   int32 // -1 when none
	name     string
	category TypeCategory
	elem     *pgType // arrays
}

// resolveType resolves a column's type: a domain to its base type, an array
// to its element type, using the table's user types.
func resolveType(types map[uint32]*Type, oid uint32, typmod int32, name string, typ *Type, depth int) pgType {
	if typ == nil && oid >= FirstUserOID {
		typ = types[oid]
	}
	if depth > 16 {
		return pgType{oid: 25, typmod: -1, name: name, category: CategoryBase}
	}
	if typ != nil {
		switch typ.Category {
		case CategoryDomain:
			base := baseTypmod(typ.BaseOID, typ.BaseName)
			return resolveType(types, typ.BaseOID, base, typ.BaseName, nil, depth+1)
		case CategoryArray:
			elemName := strings.TrimSuffix(name, "[]")
			elem := resolveType(types, typ.BaseOID, baseTypmod(typ.BaseOID, elemName), elemName, nil, depth+1)
			return pgType{oid: oid, typmod: -1, name: name, category: CategoryArray, elem: &elem}
		default:
			return pgType{oid: oid, typmod: typmod, name: name, category: typ.Category}
		}
	}
	if elemOID, ok := builtinArrayElems[oid]; ok {
		elemName := strings.TrimSuffix(name, "[]")
		elem := resolveType(types, elemOID, typmod, elemName, nil, depth+1)
		return pgType{oid: oid, typmod: -1, name: name, category: CategoryArray, elem: &elem}
	}
	if strings.HasSuffix(name, "[]") {
		// An array of a type the catalog knows only by name.
		elem := pgType{oid: 25, typmod: -1, name: strings.TrimSuffix(name, "[]"), category: CategoryBase}
		return pgType{oid: oid, typmod: -1, name: name, category: CategoryArray, elem: &elem}
	}
	return pgType{oid: oid, typmod: typmod, name: name, category: CategoryBase}
}

// baseTypmod reads the typmod of a built-in type from format_type's
// spelling of it (a domain's base type carries it only there):
// "character varying(8)", "numeric(12,4)", "timestamp(3) without time zone".
func baseTypmod(oid uint32, name string) int32 {
	open := strings.IndexByte(name, '(')
	close := strings.IndexByte(name, ')')
	if open < 0 || close < open {
		return -1
	}
	args := strings.Split(name[open+1:close], ",")
	n := make([]int, len(args))
	for i, a := range args {
		v, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return -1
		}
		n[i] = v
	}
	switch oid {
	case 1042, 1043: // bpchar, varchar
		return int32(n[0]) + 4
	case 1700:
		s := 0
		if len(n) > 1 {
			s = n[1]
		}
		return int32(n[0]<<16|(s&0x7ff)) + 4
	case 1083, 1114, 1184, 1266, 1560, 1562:
		return int32(n[0])
	}
	return -1
}

// numericTypmod returns numeric's precision and scale, ok false without a
// typmod. PostgreSQL 15+ allows a negative scale and one above the
// precision.
func numericTypmod(typmod int32) (precision, scale int, ok bool) {
	if typmod < 4 {
		return 0, 0, false
	}
	m := typmod - 4
	return int((m >> 16) & 0xffff), int(((m & 0x7ff) ^ 1024) - 1024), true
}

// mapType maps a resolved source type to MySQL, outside any key.
func (d *MySQLDialect) mapType(pt pgType) myColumn {
	text := func(bounded int) myColumn {
		return myColumn{conv: converter{kind: myText}, textual: true, bounded: bounded}
	}
	fixed := func(kind myKind, sqlType string, bytes int) myColumn {
		return myColumn{conv: converter{kind: kind}, sqlType: sqlType, fixedBytes: bytes}
	}
	if pt.category == CategoryArray {
		c := myColumn{conv: converter{kind: myArray, delim: ',', doubles: d.Server.JSONNumbersAsDoubles()}, sqlType: "JSON", json: true}
		if pt.elem != nil {
			c.conv.elem = arrayElem(*pt.elem)
			if pt.elem.oid == 603 { // box separates elements with ;
				c.conv.delim = ';'
			}
		}
		return c
	}
	switch pt.category {
	case CategoryEnum:
		return text(63) // labels are names: at most 63 bytes
	case CategoryComposite, CategoryRange:
		return text(0)
	}
	switch pt.oid {
	case 16:
		return fixed(myBool, "TINYINT(1)", 1)
	case 21:
		c := fixed(myInt, "SMALLINT", 2)
		c.conv.bits = 16
		return c
	case 23:
		c := fixed(myInt, "INT", 4)
		c.conv.bits = 32
		return c
	case 20:
		c := fixed(myInt, "BIGINT", 8)
		c.conv.bits = 64
		return c
	case 26:
		return fixed(myInt, "INT UNSIGNED", 4)
	case 700:
		return fixed(myFloat, "FLOAT", 4)
	case 701:
		return fixed(myDouble, "DOUBLE", 8)
	case 1700:
		p, s, ok := numericTypmod(pt.typmod)
		if !ok {
			p, s = 65, 30
		} else if s < 0 {
			p, s = p-s, 0 // multiples of 10^-s
		} else if s > p {
			p = s // only fraction digits
		}
		if p > 65 || s > 30 {
			return text(0) // beyond DECIMAL: the text form, exactly
		}
		c := fixed(myDecimal, fmt.Sprintf("DECIMAL(%d,%d)", p, s), decimalBytes(p, s))
		c.conv.precision, c.conv.scale = p, s
		return c
	case 25, 142:
		return text(0)
	case 1043:
		if pt.typmod >= 4 {
			return text(int(pt.typmod - 4))
		}
		return text(0)
	case 1042:
		if pt.typmod < 4 {
			return text(0) // bpchar without a length: blanks are part of the value
		}
		n := int(pt.typmod - 4)
		c := text(n)
		if n <= 255 {
			c.conv.kind = myChar
			c.sqlType = fmt.Sprintf("CHAR(%d)", n)
		}
		return c
	case 19:
		return text(63)
	case 18:
		return text(4) // "char": one byte, \ooo when not ASCII
	case 17:
		return myColumn{conv: converter{kind: myBinary}, binary: true}
	case 1082:
		return fixed(myDate, "DATE", 3)
	case 1083:
		return fixed(myTime, "TIME"+fraction(pt.typmod), 6)
	case 1114:
		return fixed(myDatetime, "DATETIME"+fraction(pt.typmod), 8)
	case 1184:
		return fixed(myDatetimeUTC, "DATETIME"+fraction(pt.typmod), 8)
	case 2950:
		return myColumn{conv: converter{kind: myText}, sqlType: "CHAR(36)", textual: true, fixedBytes: 36 * utf8mb4Bytes}
	case 114, 3802:
		return myColumn{conv: converter{kind: myJSON, doubles: d.Server.JSONNumbersAsDoubles()}, sqlType: "JSON", json: true}
	case 869, 650:
		return text(43)
	case 829:
		return text(17)
	case 774:
		return text(23)
	case 1560, 1562:
		if pt.typmod > 0 {
			return text(int(pt.typmod))
		}
		return text(0)
	}
	return text(0)
}

// arrayElem is how an array's elements convert into JSON.
func arrayElem(pt pgType) myElem {
	if pt.category != CategoryBase {
		return elemString
	}
	switch pt.oid {
	case 20, 21, 23, 26, 700, 701, 1700:
		return elemNumber
	case 16:
		return elemBool
	case 114, 3802:
		return elemJSON
	}
	return elemString
}

// fraction is the fractional seconds of TIME and DATETIME: PostgreSQL's
// precision, 6 (microseconds, PostgreSQL's finest) when the type has none.
func fraction(typmod int32) string {
	if typmod < 0 || typmod > 6 {
		typmod = 6
	}
	return "(" + strconv.Itoa(int(typmod)) + ")"
}

// decimalBytes is the storage of DECIMAL(p,s): 4 bytes for 9 digits.
func decimalBytes(p, s int) int {
	part := func(digits int) int { return digits/9*4 + []int{0, 1, 1, 2, 2, 3, 3, 4, 4}[digits%9] }
	return part(p-s) + part(s)
}

// textType is the type of a text or binary column outside a key: VARCHAR
// (VARBINARY) up to 255 characters, then the smallest TEXT (BLOB) kind
// that holds bounded characters, LONGTEXT (LONGBLOB) when unbounded.
func textType(bounded int, binary, long bool) string {
	kinds := [2][4]string{{"VARCHAR", "TEXT", "MEDIUMTEXT", "LONGTEXT"}, {"VARBINARY", "BLOB", "MEDIUMBLOB", "LONGBLOB"}}
	k, per := 0, utf8mb4Bytes
	if binary {
		k, per = 1, 1
	}
	switch {
	case bounded > 0 && bounded <= mysqlVarcharMax && !long:
		return fmt.Sprintf("%s(%d)", kinds[k][0], bounded)
	case bounded > 0 && bounded*per <= 65535:
		return kinds[k][1]
	case bounded > 0 && bounded*per <= 16777215:
		return kinds[k][2]
	}
	return kinds[k][3]
}

// keyVarType is a key column's VARCHAR (VARBINARY) of n characters (bytes).
func keyVarType(n int, binary bool) string {
	if binary {
		return fmt.Sprintf("VARBINARY(%d)", n)
	}
	return fmt.Sprintf("VARCHAR(%d)", n)
}

// columns maps every column of t. The key's text and binary columns share
// what InnoDB's key budget leaves after its fixed-size columns, each at most
// what its source type holds; other text columns of VARCHAR size become TEXT
// kinds, the longest first, while the row would pass MySQL's row size limit.
func (d *MySQLDialect) columns(t *Table) ([]myColumn, error) {
	types := make(map[uint32]*Type, len(t.Types))
	for _, typ := range t.Types {
		if typ != nil {
			types[typ.OID] = typ
		}
	}
	cols := make([]myColumn, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		pt := resolveType(types, c.TypeOID, c.TypeMod, c.TypeName, c.Type, 0)
		m := d.mapType(pt)
		m.conv.name, m.conv.typeName = c.Name, c.TypeName
		cols[i] = m
	}
	key := t.KeyColumns()
	if t.ReplicaIdentity != IdentityDefault && t.ReplicaIdentity != IdentityIndex {
		key = nil
	}
	if len(key) > mysqlMaxKeyColumns {
		return nil, fmt.Errorf("schema: table %s: its key has %d columns, and a MySQL index at most %d: the table cannot be replicated to MySQL (leave it out of PGRELAY_TABLES or give it a shorter replica identity)",
			t.QualifiedName(), len(key), mysqlMaxKeyColumns)
	}
	inKey := make(map[int]bool, len(key))
	budget := mysqlMaxKeyBytes
	var sized []int // key columns a budget sizes
	for _, i := range key {
		inKey[i] = true
		m := &cols[i]
		switch {
		case m.json:
			return nil, fmt.Errorf("schema: table %s: key column %q is %s, which maps to MySQL's JSON, and a JSON column cannot be part of a MySQL key: the table cannot be replicated to MySQL (leave it out of PGRELAY_TABLES or give it another replica identity)",
				t.QualifiedName(), t.Columns[i].Name, t.Columns[i].TypeName)
		case m.fixedBytes > 0:
			budget -= m.fixedBytes
		default:
			sized = append(sized, i)
		}
	}
	if budget < len(sized) || budget < 0 {
		return nil, d.keyTooLong(t, key, cols)
	}
	// Water-filling: the columns that hold less than an equal share take what
	// they hold; the rest share what is left.
	perChar := func(i int) int {
		if cols[i].binary {
			return 1
		}
		return utf8mb4Bytes
	}
	left := append([]int(nil), sized...)
	for len(left) > 0 {
		share := budget / len(left)
		progress := false
		var rest []int
		for _, i := range left {
			if b := cols[i].bounded; b > 0 && b*perChar(i) <= share {
				cols[i].sqlType = keyVarType(b, cols[i].binary)
				if cols[i].conv.kind == myChar {
					cols[i].sqlType = fmt.Sprintf("CHAR(%d)", b)
				}
				budget -= b * perChar(i)
				progress = true
			} else {
				rest = append(rest, i)
			}
		}
		left = rest
		if !progress {
			for _, i := range left {
				n := share / perChar(i)
				if n < 1 {
					return nil, d.keyTooLong(t, key, cols)
				}
				cols[i].sqlType = keyVarType(n, cols[i].binary)
			}
			break
		}
	}
	// Other text and binary columns.
	for i := range cols {
		m := &cols[i]
		if inKey[i] || m.sqlType != "" {
			continue
		}
		m.sqlType = textType(m.bounded, m.binary, false)
	}
	// The row size limit counts VARCHAR and CHAR at their maximum.
	rowBytes := func() int {
		n := (len(cols) + 7) / 8
		for i := range cols {
			n += rowSize(&cols[i])
		}
		return n
	}
	for rowBytes() > mysqlMaxRowBytes {
		longest := -1
		for i := range cols {
			if !inKey[i] && strings.HasPrefix(cols[i].sqlType, "VAR") && (longest < 0 || cols[i].bounded > cols[longest].bounded) {
				longest = i
			}
		}
		if longest < 0 {
			return nil, fmt.Errorf("schema: table %s: its row takes more than MySQL's %d bytes even with every text column as TEXT: the table cannot be replicated to MySQL",
				t.QualifiedName(), mysqlMaxRowBytes)
		}
		cols[longest].sqlType = textType(cols[longest].bounded, cols[longest].binary, true)
	}
	return cols, nil
}

// rowSize is what a column counts toward MySQL's row size limit.
func rowSize(m *myColumn) int {
	t := m.sqlType
	open := strings.IndexByte(t, '(')
	switch {
	case m.fixedBytes > 0:
		return m.fixedBytes
	case open > 0 && (strings.HasPrefix(t, "VARCHAR") || strings.HasPrefix(t, "CHAR") || strings.HasPrefix(t, "VARBINARY")):
		n, _ := strconv.Atoi(strings.TrimSuffix(t[open+1:], ")"))
		if !m.binary {
			n *= utf8mb4Bytes
		}
		if n > 255 {
			return n + 2
		}
		return n + 1
	}
	return mysqlTextBytes
}

func (d *MySQLDialect) keyTooLong(t *Table, key []int, cols []myColumn) error {
	var parts []string
	for _, i := range key {
		c := &t.Columns[i]
		parts = append(parts, fmt.Sprintf("%s %s", c.Name, c.TypeName))
	}
	return fmt.Errorf("schema: table %s: its key (%s) cannot fit InnoDB's %d-byte key (utf8mb4 counts 4 bytes a character): the table cannot be replicated to MySQL (leave it out of PGRELAY_TABLES or give it a shorter replica identity)",
		t.QualifiedName(), strings.Join(parts, ", "), mysqlMaxKeyBytes)
}
