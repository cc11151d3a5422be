package postgres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// maxStatementsPerTable bounds the prepared statements kept per table version:
// updates are prepared per unchanged-TOAST mask and, under REPLICA IDENTITY FULL,
// per NULL mask of the old row. Past the bound new shapes run unnamed (parsed per
// execution) rather than growing the server's memory without limit.
const maxStatementsPerTable = 256

// textCompareTypes are built-in types without a default btree equality operator
// (PostgreSQL's own apply cannot match them under REPLICA IDENTITY FULL). Their
// values are matched by text form: both sides go through the same output function
// in the target session. Keyed by type OID, including the array types.
var textCompareTypes = map[uint32]bool{
	114: true, 199: true, // json, json[]
	142: true, 143: true, // xml, xml[]
	600: true, 1017: true, // point, point[]
	601: true, 1018: true, // lseg, lseg[]
	602: true, 1019: true, // path, path[]
	603: true, 1020: true, // box, box[]
	604: true, 1027: true, // polygon, polygon[]
	628: true, 629: true, // line, line[]
	718: true, 719: true, // circle, circle[]
}

// equalNotIdenticalTypes are built-in types whose equality operator holds for
// values that differ: numeric 1.0 = 1.00, float8 0 = -0, interval '1 day' =
// '24:00:00', jsonb {"a":1.0} = {"a":1.00}. Under REPLICA IDENTITY FULL the
// row is found by its old values, so such a column is also compared by text
// form: of two rows that differ only there, the one the source changed is
// changed. Keyed by type OID, including the array types; user types
// (composites and ranges that may hold such values) are compared so too.
var equalNotIdenticalTypes = map[uint32]bool{
	700: true, 1021: true, // float4, float4[]
	701: true, 1022: true, // float8, float8[]
	1700: true, 1231: true, // numeric, numeric[]
	1186: true, 1187: true, // interval, interval[]
	3802: true, 3807: true, // jsonb, jsonb[]
	3906: true, 3907: true, // numrange, numrange[]
}

// identityByText reports whether column c, compared with its equality
// operator under REPLICA IDENTITY FULL, must also be compared by text form.
func identityByText(c *schema.Column) bool {
	oid := valueTypeOID(c)
	return oid >= firstUserOID || equalNotIdenticalTypes[oid]
}

// collatableTypes are the built-in types whose comparisons take a
// collation, with their array types.
var collatableTypes = map[uint32]bool{
	25: true, 1009: true, // text, text[]
	1043: true, 1015: true, // varchar, varchar[]
	1042: true, 1014: true, // bpchar, bpchar[]
	19: true, 1003: true, // name, name[]
}

// otherCollation reports whether column c may compare under a collation other
// than the database's default (always deterministic): its own, or its
// domain's. A nondeterministic one holds values that differ in bytes equal
// (ICU's U+00E4 and U+0061 U+0308); under REPLICA IDENTITY FULL such a column
// is also compared under "C", byte for byte, so that of two such rows the one
// the source changed is changed. PostgreSQL's own apply compares them under
// the column's collation (tuples_equal), and changes either.
func otherCollation(c *schema.Column) bool {
	if c.Collation != "" {
		return true
	}
	return c.Type != nil && c.Type.Category == schema.CategoryDomain && collatableTypes[c.Type.BaseOID]
}

// byteCollation is the COLLATE clause comparing column c byte for byte under
// REPLICA IDENTITY FULL, "" when its equality already does (otherCollation).
func byteCollation(c *schema.Column) string {
	if otherCollation(c) {
		return ` COLLATE pg_catalog."C"`
	}
	return ""
}

// valueTypeOID is the type of c's values: a domain's base type, else c's own.
func valueTypeOID(c *schema.Column) uint32 {
	if c.Type != nil && c.Type.Category == schema.CategoryDomain {
		return c.Type.BaseOID
	}
	return c.TypeOID
}

// firstUserOID is PostgreSQL's FirstNormalObjectId: OIDs below it are built in
// and the same on every server.
const firstUserOID = 16384

// paramCast is the cast a parameter compared with column c needs, "" when
// none. Compared with a composite (col = $1), an untyped parameter takes the
// type of the record = record operator's operand, the anonymous record, whose
// input PostgreSQL does not implement; so does one compared with a domain
// over a composite, at any depth. Cast to the column's own type, the one the
// target table was built with, it is read as that type. Other domains are
// cast too: their values are their column's. Arrays need nothing: array =
// array resolves an untyped operand to the other one's type.
func paramCast(c *schema.Column) string {
	if c.Type == nil || c.TypeName == "" {
		return ""
	}
	switch c.Type.Category {
	case schema.CategoryComposite, schema.CategoryDomain:
		return "::" + c.TypeName
	}
	return ""
}

// textCompareOID returns the built-in type to declare for a parameter compared
// by text form, 0 when the column compares with its own equality operator.
func textCompareOID(c *schema.Column) uint32 {
	if oid := valueTypeOID(c); textCompareTypes[oid] {
		return oid
	}
	return 0
}

// binaryOK reports whether a binary ('b') value from the source can be passed
// to the target as a binary parameter of column c: the binary forms agree for
// built-in types and enums, not for types whose binary form embeds OIDs that
// differ between servers (arrays and composites of user types, ranges, domains
// over such).
func binaryOK(c *schema.Column) bool {
	if c.TypeOID < firstUserOID {
		return true
	}
	return c.Type != nil && c.Type.Category == schema.CategoryEnum
}

// param says where one statement parameter's value comes from.
type param struct {
	col int  // column index
	old bool // from the old tuple (identity) rather than the new one
}

// statement is a prepared statement of one table version.
type statement struct {
	name      string // server-side name; "" when executed unnamed
	sql       string
	params    []param
	paramOIDs []uint32
	// Set statements of updates (setop.go): the query that finds a row the
	// update did not find, and which params hold its key arrays.
	findSQL   string
	keyParams []int
}

// tableStatements is everything prepared for one version of a table.
type tableStatements struct {
	table   *schema.Table
	columns []string // column names when prepared: a changed table is re-prepared
	qname   string   // quoted target name
	quoted  []string // quoted column names
	// identity are the columns that locate a row: the key columns, or every
	// column under REPLICA IDENTITY FULL; nil when the table has none.
	identity []int
	full     bool
	insert   *statement
	byShape  map[string]*statement
	copySQL  string
	// foldable: 1 when updates of a row may fold into one (no unique index or
	// exclusion constraint besides the primary key), -1 when not, 0 unknown.
	foldable int8
	// setTable: 1 when the source's table allows set statements (setop.go),
	// -1 when not, 0 unknown; setTypes likewise for the target's column types.
	setTable int8
	setTypes int8
	// chars are the columns of type "char" (legacyChars).
	chars []int
}

func (ts *tableStatements) matches(t *schema.Table) bool {
	if len(ts.columns) != len(t.Columns) {
		return false
	}
	for i := range t.Columns {
		if ts.columns[i] != t.Columns[i].Name {
			return false
		}
	}
	return true
}

func newTableStatements(d schema.Dialect, t *schema.Table) *tableStatements {
	ts := &tableStatements{table: t, byShape: map[string]*statement{}}
	ts.qname = quotedTable(d, t)
	for i, c := range t.Columns {
		ts.columns = append(ts.columns, c.Name)
		ts.quoted = append(ts.quoted, d.QuoteIdent(c.Name))
		if c.TypeOID == charOID {
			ts.chars = append(ts.chars, i)
		}
	}
	switch {
	case t.ReplicaIdentity == schema.IdentityFull:
		ts.full = true
		for i := range t.Columns {
			ts.identity = append(ts.identity, i)
		}
	case t.ReplicaIdentity == schema.IdentityNothing:
	default:
		ts.identity = t.KeyColumns()
	}
	ts.copySQL = "COPY " + ts.qname + " (" + strings.Join(ts.quoted, ", ") + ") FROM STDIN"
	if len(ts.quoted) == 0 {
		// A table with no published column (none at all, or only generated
		// ones): COPY reads every column but the generated ones, and each row
		// is an empty line.
		ts.copySQL = "COPY " + ts.qname + " FROM STDIN"
	}
	return ts
}

func quotedTable(d schema.Dialect, t *schema.Table) string {
	sch, name := d.TargetTable(t)
	return d.QuoteIdent(sch) + "." + d.QuoteIdent(name)
}

// insertSQL is INSERT INTO t (all columns) VALUES ($1, …).
func (ts *tableStatements) insertStatement() *statement {
	if ts.insert != nil {
		return ts.insert
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(ts.qname)
	if len(ts.quoted) == 0 {
		// A row of no published column.
		b.WriteString(" DEFAULT VALUES")
		ts.insert = &statement{sql: b.String()}
		return ts.insert
	}
	b.WriteString(" (")
	b.WriteString(strings.Join(ts.quoted, ", "))
	b.WriteString(") VALUES (")
	st := &statement{}
	for i := range ts.quoted {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1))
		st.params = append(st.params, param{col: i})
		st.paramOIDs = append(st.paramOIDs, 0)
	}
	b.WriteString(")")
	st.sql = b.String()
	ts.insert = st
	return st
}

// Shape codes, one byte per column, that pick a prepared statement.
const (
	codeValue     = 'v' // a value to use
	codeNull      = 'n' // NULL: matched with IS NULL
	codeUnchanged = 'u' // unchanged TOAST: left out
)

// shapeKey describes an update or delete: the kind, then per column whether the
// new value is set or left alone (updates), then per identity column whether
// the old value is a value, NULL or absent. Identical keys share one statement.
func (ts *tableStatements) shapeKey(dst []byte, ch *sink.Change, locate source.Tuple) ([]byte, error) {
	dst = append(dst[:0], byte(ch.Kind))
	if ch.Kind == sink.Update {
		if len(ch.New) != len(ts.columns) {
			return nil, fmt.Errorf("new row has %d values, table has %d columns", len(ch.New), len(ts.columns))
		}
		for _, v := range ch.New {
			if v.Kind == source.ValueUnchanged {
				dst = append(dst, codeUnchanged)
			} else {
				dst = append(dst, codeValue)
			}
		}
		dst = append(dst, '|')
	}
	if len(locate) != len(ts.columns) {
		return nil, fmt.Errorf("old row has %d values, table has %d columns", len(locate), len(ts.columns))
	}
	for _, i := range ts.identity {
		switch locate[i].Kind {
		case source.ValueNull:
			dst = append(dst, codeNull)
		case source.ValueUnchanged:
			if !ts.full {
				return nil, fmt.Errorf("key column %q was not sent (unchanged TOAST value): the row cannot be located", ts.columns[i])
			}
			dst = append(dst, codeUnchanged)
		default:
			dst = append(dst, codeValue)
		}
	}
	return dst, nil
}

// buildShape writes the UPDATE or DELETE for a shape key.
func (ts *tableStatements) buildShape(key []byte) *statement {
	st := &statement{}
	n := 0
	next := func(p param, oid uint32) string {
		n++
		st.params = append(st.params, p)
		st.paramOIDs = append(st.paramOIDs, oid)
		return "$" + strconv.Itoa(n)
	}
	var b strings.Builder
	kind := sink.ChangeKind(key[0])
	rest := key[1:]
	if kind == sink.Update && len(ts.columns) == 0 {
		// REPLICA IDENTITY FULL with no published column (only generated
		// ones): every row holds the same published values, none of which the
		// update changes; as PostgreSQL's own subscriber, take any row. There
		// is nothing to SET, so a SELECT counts the row that must be there.
		st.sql = "SELECT FROM " + ts.qname + " LIMIT 1"
		return st
	}
	if kind == sink.Update {
		b.WriteString("UPDATE ")
		b.WriteString(ts.qname)
		b.WriteString(" SET ")
		first := true
		for i := range ts.columns {
			if rest[i] == codeUnchanged {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(ts.quoted[i])
			b.WriteString(" = ")
			b.WriteString(next(param{col: i}, 0))
		}
		if first {
			// Every column unchanged: still touch the row so a missing one is found.
			i := ts.identity[0]
			b.WriteString(ts.quoted[i] + " = " + ts.quoted[i])
		}
		rest = rest[len(ts.columns)+1:]
	} else {
		b.WriteString("DELETE FROM ")
		b.WriteString(ts.qname)
	}
	var where strings.Builder
	first := true
	for j, i := range ts.identity {
		code := rest[j]
		if code == codeUnchanged {
			continue
		}
		if !first {
			where.WriteString(" AND ")
		}
		first = false
		col := &ts.table.Columns[i]
		textOID := textCompareOID(col)
		switch {
		case code == codeNull:
			where.WriteString(ts.quoted[i] + " IS NULL")
		case textOID != 0:
			where.WriteString(ts.quoted[i] + "::text = " + next(param{col: i, old: true}, textOID) + "::text")
		case ts.full && identityByText(col):
			p := next(param{col: i, old: true}, 0) + paramCast(col)
			where.WriteString(ts.quoted[i] + " = " + p + " AND " + ts.quoted[i] + "::text" + byteCollation(col) + " = " + p + "::text")
		case ts.full && otherCollation(col):
			p := next(param{col: i, old: true}, 0) + paramCast(col)
			where.WriteString(ts.quoted[i] + " = " + p + " AND " + ts.quoted[i] + byteCollation(col) + " = " + p)
		default:
			where.WriteString(ts.quoted[i] + " = " + next(param{col: i, old: true}, 0) + paramCast(col))
		}
	}
	if first {
		where.WriteString("true")
	}
	if ts.full {
		// Without a key several rows may hold the same values: touch exactly
		// one, preferring one no other transaction holds. A prepared
		// transaction applied before may hold one of identical rows, whose
		// twin the source changed meanwhile; waiting for its lock would wait
		// for a COMMIT PREPARED that comes later in the stream.
		find := "SELECT ctid FROM " + ts.qname + " WHERE " + where.String() + " LIMIT 1"
		b.WriteString(" WHERE ctid = coalesce((" + find + " FOR UPDATE SKIP LOCKED), (" + find + "))")
	} else {
		b.WriteString(" WHERE " + where.String())
	}
	st.sql = b.String()
	return st
}

// keyText renders the identity of the row a change locates, the way PostgreSQL
// writes keys in messages: (a, b)=(1, x).
func (ts *tableStatements) keyText(dst []byte, locate source.Tuple) []byte {
	dst = append(dst, '(')
	for j, i := range ts.identity {
		if j > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, ts.columns[i]...)
	}
	dst = append(dst, ")=("...)
	for j, i := range ts.identity {
		if j > 0 {
			dst = append(dst, ", "...)
		}
		if i >= len(locate) {
			continue
		}
		v := locate[i]
		switch v.Kind {
		case source.ValueNull:
			dst = append(dst, "null"...)
		case source.ValueUnchanged:
			dst = append(dst, "unchanged"...)
		case source.ValueBinary:
			dst = append(dst, "<binary>"...)
		default:
			const limit = 64
			if len(v.Data) > limit {
				dst = append(dst, v.Data[:limit]...)
				dst = append(dst, "…"...)
			} else {
				dst = append(dst, v.Data...)
			}
		}
	}
	return append(dst, ')')
}
