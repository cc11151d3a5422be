package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MySQLDialect is the DDL of MySQL and MariaDB targets (see mysqltypes.go
// for the type mapping). Source schema public lands in the target URL's
// database, every other schema in a database of its own name. Names are
// quoted with backticks and kept as they are; one over MySQL's 64
// characters, and columns whose names differ only in case (MySQL compares
// column names case-insensitively), are refused naming them. All of the
// dialect's SQL is in this file and mysqltypes.go.
//
// MySQL commits every DDL statement on its own, so a change of a table is a
// list of steps (AlterSteps), each with the condition under which it still has
// to run, read from the target just before it does: a change interrupted
// between two statements resumes without doing one twice.
type MySQLDialect struct {
	Server MySQLServer
	// Database is the target URL's database, where source schema public lands.
	Database string
}

var _ Dialect = (*MySQLDialect)(nil)

// NewMySQL returns the dialect of server, with public landing in database.
func NewMySQL(server MySQLServer, database string) *MySQLDialect {
	return &MySQLDialect{Server: server, Database: database}
}

// Name implements Dialect.
func (d *MySQLDialect) Name() string { return "mysql" }

// QuoteIdent implements Dialect: backticks, embedded ones doubled.
func (d *MySQLDialect) QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// TargetTable implements Dialect: public → the URL's database.
func (d *MySQLDialect) TargetTable(t *Table) (schema, name string) {
	return d.TargetSchema(t.Schema), t.Name
}

// TargetSchema is the database a source schema lands in.
func (d *MySQLDialect) TargetSchema(sourceSchema string) string {
	if sourceSchema == "public" {
		return d.Database
	}
	return sourceSchema
}

func (d *MySQLDialect) qualified(schema, name string) string {
	return d.QuoteIdent(schema) + "." + d.QuoteIdent(name)
}

// QualifiedTable is t's target table, quoted.
func (d *MySQLDialect) QualifiedTable(t *Table) string { return d.qualified(d.TargetTable(t)) }

// CreateSchema implements Dialect: a database with utf8mb4 and the binary
// no-pad collation as its defaults.
func (d *MySQLDialect) CreateSchema(schema string) string {
	return "CREATE DATABASE IF NOT EXISTS " + d.QuoteIdent(schema) + " CHARACTER SET utf8mb4 COLLATE " + d.Server.Collation()
}

// CreateTypes implements Dialect: MySQL has no user-defined types (enums,
// domains, composites and ranges map to built-in types).
func (d *MySQLDialect) CreateTypes(*Table) []string { return nil }

// tableOptions end every CREATE TABLE.
func (d *MySQLDialect) tableOptions() string {
	return " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=" + d.Server.Collation()
}

// checkNames refuses what MySQL cannot name as the source does: a database,
// table or column name over 64 characters, two columns whose names differ
// only in case, no columns at all, more than MySQL's 1,017 columns.
func (d *MySQLDialect) checkNames(t *Table) error {
	sch, name := d.TargetTable(t)
	for _, n := range []struct{ what, name string }{{"schema", sch}, {"table name", name}} {
		if n.name == "" {
			return fmt.Errorf("schema: table %s: no %s", t.QualifiedName(), n.what)
		}
		if utf8.RuneCountInString(n.name) > mysqlMaxIdent {
			return fmt.Errorf("schema: table %s: the %s %q is longer than MySQL's %d characters: rename it on the source or leave the table out (PGRELAY_TABLES)",
				t.QualifiedName(), n.what, n.name, mysqlMaxIdent)
		}
	}
	if len(t.Columns) == 0 {
		return fmt.Errorf("schema: table %s has no columns (or publishes none), and a MySQL table needs one: leave it out (PGRELAY_TABLES)", t.QualifiedName())
	}
	if len(t.Columns) > mysqlMaxColumns {
		return fmt.Errorf("schema: table %s has %d columns, more than the %d an InnoDB table holds: leave it out (PGRELAY_TABLES)",
			t.QualifiedName(), len(t.Columns), mysqlMaxColumns)
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Name == "" {
			return fmt.Errorf("schema: table %s has a column without a name", t.QualifiedName())
		}
		if utf8.RuneCountInString(c.Name) > mysqlMaxIdent {
			return fmt.Errorf("schema: table %s: column name %q is longer than MySQL's %d characters: rename it on the source or leave the table out (PGRELAY_TABLES)",
				t.QualifiedName(), c.Name, mysqlMaxIdent)
		}
		for j := range i {
			if strings.EqualFold(t.Columns[j].Name, c.Name) {
				return fmt.Errorf("schema: table %s: columns %q and %q have the same name for MySQL, which compares column names case-insensitively: rename one on the source or leave the table out (PGRELAY_TABLES)",
					t.QualifiedName(), t.Columns[j].Name, c.Name)
			}
		}
	}
	return nil
}

// MySQLTable is the MySQL mapping of one version of a table: its target
// name and how each column's values convert. A sink makes it once per
// table version.
type MySQLTable struct {
	Schema, Name string // the target table
	cols         []myColumn
	server       MySQLServer
}

// Table maps t, or says why it cannot be replicated to MySQL.
func (d *MySQLDialect) Table(t *Table) (*MySQLTable, error) {
	if err := d.checkNames(t); err != nil {
		return nil, err
	}
	cols, err := d.columns(t)
	if err != nil {
		return nil, err
	}
	sch, name := d.TargetTable(t)
	return &MySQLTable{Schema: sch, Name: name, cols: cols, server: d.Server}, nil
}

// Convert converts the text form of a value of column i.
func (m *MySQLTable) Convert(i int, text []byte) (MySQLValue, error) {
	return m.cols[i].conv.convert(text)
}

// Type is column i's MySQL type.
func (m *MySQLTable) Type(i int) string { return m.cols[i].sqlType }

// Binary reports whether column i is VARBINARY or a BLOB kind.
func (m *MySQLTable) Binary(i int) bool { return m.cols[i].binary }

// CompareAs wraps the literal lit of column i for an equality (<=>) with the
// column: a JSON column on MySQL compares with a JSON document, not a string
// (MariaDB's JSON is text). A float4 needs nothing: its literal is the exact
// double the FLOAT column reads as.
func (m *MySQLTable) CompareAs(i int, lit string) string {
	if m.cols[i].json && !m.server.MariaDB {
		return "CAST(" + lit + " AS JSON)"
	}
	return lit
}

// AppendLiteral appends v as a MySQL literal, for a session whose sql_mode
// leaves backslash escapes on (NO_BACKSLASH_ESCAPES off, as pgrelay sets
// it): numbers as they are, text quoted with ' \ and control characters
// escaped, bytes in hex.
func AppendLiteral(dst []byte, v MySQLValue) []byte {
	switch v.Kind {
	case MySQLNull:
		return append(dst, "NULL"...)
	case MySQLNumber:
		return append(dst, v.Data...)
	case MySQLBytes:
		if len(v.Data) == 0 {
			return append(dst, "''"...)
		}
		dst = append(dst, "X'"...)
		dst = hex.AppendEncode(dst, v.Data)
		return append(dst, '\'')
	}
	dst = append(dst, '\'')
	for _, b := range v.Data {
		switch b {
		case 0:
			dst = append(dst, '\\', '0')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case 0x1a:
			dst = append(dst, '\\', 'Z')
		case '\'', '"', '\\':
			dst = append(dst, '\\', b)
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '\'')
}

// QuoteString is s as a MySQL string literal (AppendLiteral's escaping).
func QuoteString(s string) string {
	return string(AppendLiteral(nil, MySQLValue{Kind: MySQLString, Data: []byte(s)}))
}

// defaultClause is " DEFAULT …" for column c mapped as m: the constant
// default (DefaultValue), converted like the column's values, for the
// target's own inserts after a cutover (replicated rows carry their values).
// An expression default, a volatile one or one the column cannot hold is
// left out: "" (DefaultLeftOut says why).
func (d *MySQLDialect) defaultClause(c *Column, m *myColumn) string {
	if c.OmitDefault || c.DefaultValue == nil {
		return ""
	}
	return d.valueDefault(c.DefaultValue, c.NotNull, m)
}

// valueDefault is " DEFAULT v" for a column mapped as m, "" when m cannot
// hold v.
func (d *MySQLDialect) valueDefault(v *Value, notNull bool, m *myColumn) string {
	if v.Null {
		if notNull {
			return ""
		}
		return " DEFAULT NULL"
	}
	mv, err := m.conv.convert([]byte(v.Text))
	if err != nil {
		return ""
	}
	lit := string(AppendLiteral(nil, mv))
	if d.Server.ExpressionDefaults() && (m.json || m.binary && !strings.HasPrefix(m.sqlType, "VARBINARY") ||
		m.textual && strings.HasSuffix(m.sqlType, "TEXT")) {
		return " DEFAULT (" + lit + ")"
	}
	return " DEFAULT " + lit
}

// DefaultLeftOut says why the target column of t.Columns[i] gets no
// default although the source column has one, "" when it gets it (or the
// source has none). Replicated rows never need it; a sink logs it.
func (d *MySQLDialect) DefaultLeftOut(t *Table, i int) string {
	c := &t.Columns[i]
	if c.Default == "" || c.OmitDefault {
		return ""
	}
	if c.DefaultValue == nil {
		if c.VolatileDefault {
			return "it is not a constant (MySQL gets no expression written for PostgreSQL)"
		}
		return "it is an expression, which is PostgreSQL SQL"
	}
	m, err := d.Table(t)
	if err != nil {
		return ""
	}
	if d.valueDefault(c.DefaultValue, c.NotNull, &m.cols[i]) == "" {
		return "the MySQL column cannot hold its value"
	}
	return ""
}

// columnDef is a column's definition; collate adds the collation to a text
// column (ALTER TABLE, on a table that may not have pgrelay's default).
func (d *MySQLDialect) columnDef(c *Column, m *myColumn, notNull bool, dflt string, collate bool) string {
	def := d.QuoteIdent(c.Name) + " " + m.sqlType
	if collate && m.textual {
		def += " COLLATE " + d.Server.Collation()
	}
	if notNull {
		def += " NOT NULL"
	}
	return def + dflt
}

func (d *MySQLDialect) keyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = d.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// CreateTable implements Dialect: the replica identity key as the primary
// key, constant defaults, InnoDB with the binary no-pad collation. Stored
// generated columns of the source are not created: their expressions are
// PostgreSQL's (a sink says so).
func (d *MySQLDialect) CreateTable(t *Table) ([]string, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("schema: create table: no table name")
	}
	m, err := d.Table(t)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(t.Columns)+1)
	for i := range t.Columns {
		c := &t.Columns[i]
		lines = append(lines, "\t"+d.columnDef(c, &m.cols[i], c.NotNull, d.defaultClause(c, &m.cols[i]), false))
	}
	if key := t.TargetKey(); len(key) > 0 {
		lines = append(lines, "\tPRIMARY KEY ("+d.keyList(key)+")")
	}
	return []string{"CREATE TABLE IF NOT EXISTS " + d.QualifiedTable(t) + " (\n" + strings.Join(lines, ",\n") + "\n)" + d.tableOptions()}, nil
}

// MoveTable implements Dialect: RENAME TABLE, which moves between databases.
func (d *MySQLDialect) MoveTable(fromSchema, fromName, toSchema, toName string) []string {
	if fromSchema == toSchema && fromName == toName {
		return nil
	}
	var stmts []string
	if fromSchema != toSchema {
		stmts = append(stmts, d.CreateSchema(toSchema))
	}
	return append(stmts, "RENAME TABLE "+d.qualified(fromSchema, fromName)+" TO "+d.qualified(toSchema, toName))
}

// MySQLCondition is when a step of a MySQL table change still has to run,
// read from the target table (at the change's new name) just before it does.
type MySQLCondition struct {
	Kind MySQLConditionKind
	// Schema and Name are the table TableExists looks for.
	Schema, Name string
	// Column is the column ColumnExists and ColumnMissing look for (MySQL
	// compares column names case-insensitively).
	Column string
	// Key is the primary key KeyIs and KeyIsNot compare with, in order.
	Key []string
}

// MySQLConditionKind is a kind of MySQLCondition.
type MySQLConditionKind uint8

const (
	Always        MySQLConditionKind = iota
	TableExists                      // the table Schema.Name exists
	ColumnExists                     // the table has Column
	ColumnMissing                    // the table lacks Column
	KeyIs                            // the table's primary key is Key
	KeyIsNot                         // the table's primary key is not Key
)

// String describes c for golden files and logs.
func (c MySQLCondition) String() string {
	switch c.Kind {
	case TableExists:
		return "when table " + c.Schema + "." + c.Name + " exists"
	case ColumnExists:
		return "when column " + c.Column + " exists"
	case ColumnMissing:
		return "when column " + c.Column + " is missing"
	case KeyIs:
		return "when the primary key is (" + strings.Join(c.Key, ", ") + ")"
	case KeyIsNot:
		return "when the primary key is not (" + strings.Join(c.Key, ", ") + ")"
	}
	return "always"
}

// MySQLStep is one statement of a MySQL table change and when it runs.
type MySQLStep struct {
	SQL  string
	When MySQLCondition
}

// AlterTable implements Dialect: the statements of AlterSteps.
func (d *MySQLDialect) AlterTable(prev, t *Table) ([]string, error) {
	steps, err := d.AlterSteps(prev, t)
	if err != nil {
		return nil, err
	}
	stmts := make([]string, len(steps))
	for i, s := range steps {
		stmts[i] = s.SQL
	}
	return stmts, nil
}

// AlterSteps returns the steps that evolve the target table from prev to t,
// in this order: move or rename the table, drop the primary key when the key
// changes, drop columns, rename columns (through temporary names when one
// takes a name another gives up), add columns, change types, NULL-ness and
// defaults, add the new primary key. Columns pair up by attribute number as
// for PostgreSQL (see PostgresDialect.AlterTable).
//
// An added column's existing rows get its fill value (Fill: what they hold
// on the source): ADD COLUMN … DEFAULT fill, then the column takes the
// source's constant default, or none. A column added with a default that
// cannot be reproduced (volatile, an identity, an expression without a fill
// value) fails with ErrVolatileDefault, as for PostgreSQL. A key column's
// type follows the key budget: a text column joining or leaving the key
// changes between VARCHAR and a TEXT kind.
func (d *MySQLDialect) AlterSteps(prev, t *Table) ([]MySQLStep, error) {
	steps, _, err := d.alterSteps(prev, t)
	return steps, err
}

// MySQLColumnChanges is what a change of a table (AlterSteps) does to the
// columns a foreign key of the target may hold, which MySQL refuses to drop
// or retype under it: names are the previous version's.
type MySQLColumnChanges struct {
	Dropped []string
	// Modified are the columns a MODIFY COLUMN redefines: a new type,
	// NULL-ness or expression default.
	Modified []string
	// Renamed maps a renamed column's previous name to its new one.
	Renamed map[string]string
	// KeyChanged: the primary key is dropped, and another one made.
	KeyChanged bool
}

// Any reports whether the change touches a column a foreign key may hold.
func (c MySQLColumnChanges) Any() bool {
	return len(c.Dropped) > 0 || len(c.Modified) > 0 || c.KeyChanged
}

// ColumnChanges returns what AlterSteps(prev, t) does to prev's columns.
func (d *MySQLDialect) ColumnChanges(prev, t *Table) (MySQLColumnChanges, error) {
	_, changes, err := d.alterSteps(prev, t)
	return changes, err
}

func (d *MySQLDialect) alterSteps(prev, t *Table) ([]MySQLStep, MySQLColumnChanges, error) {
	var changes MySQLColumnChanges
	if prev == nil || t == nil {
		return nil, changes, errors.New("schema: alter table: both the previous and the new version are needed (use CreateTable for a new table)")
	}
	newMap, err := d.Table(t)
	if err != nil {
		return nil, changes, err
	}
	prevMap, err := d.Table(prev)
	if err != nil {
		return nil, changes, fmt.Errorf("schema: the previous version of %s: %w", prev.QualifiedName(), err)
	}
	if err := columnListChange(prev, t); err != nil {
		return nil, changes, err
	}
	var steps []MySQLStep
	add := func(sql string, when MySQLCondition) { steps = append(steps, MySQLStep{SQL: sql, When: when}) }
	ps, pn := d.TargetTable(prev)
	ns, nn := d.TargetTable(t)
	if ps != ns {
		add(d.CreateSchema(ns), MySQLCondition{})
	}
	if ps != ns || pn != nn {
		add("RENAME TABLE "+d.qualified(ps, pn)+" TO "+d.qualified(ns, nn), MySQLCondition{Kind: TableExists, Schema: ps, Name: pn})
	}
	table := d.qualified(ns, nn)
	alter := func(action string, when MySQLCondition) { add("ALTER TABLE "+table+" "+action, when) }

	prevKey, newKey := prev.TargetKey(), t.TargetKey()
	keyChanged := !slices.Equal(prevKey, newKey)
	if keyChanged && len(prevKey) > 0 {
		alter("DROP PRIMARY KEY", MySQLCondition{Kind: KeyIs, Key: prevKey})
		changes.KeyChanged = true
	}
	matched := matchColumns(prev, t)
	for i := range prev.Columns {
		if _, ok := matched.newOf[i]; !ok {
			name := prev.Columns[i].Name
			alter("DROP COLUMN "+d.QuoteIdent(name), MySQLCondition{Kind: ColumnExists, Column: name})
			changes.Dropped = append(changes.Dropped, name)
		}
	}
	// Renames. MySQL renames the columns of one statement at once, but a
	// swap leaves the same names behind, and a resumed change could not tell
	// it had run: a name another column gives up is taken through a
	// temporary name, one statement each.
	type rename struct{ from, to string }
	var renames []rename
	for j := range t.Columns {
		if i, ok := matched.prevOf[j]; ok && prev.Columns[i].Name != t.Columns[j].Name {
			renames = append(renames, rename{prev.Columns[i].Name, t.Columns[j].Name})
			if changes.Renamed == nil {
				changes.Renamed = map[string]string{}
			}
			changes.Renamed[prev.Columns[i].Name] = t.Columns[j].Name
		}
	}
	clash := false
	for _, r := range renames {
		for _, o := range renames {
			if strings.EqualFold(r.to, o.from) && r != o {
				clash = true
			}
		}
	}
	renameCol := func(from, to string) {
		alter("RENAME COLUMN "+d.QuoteIdent(from)+" TO "+d.QuoteIdent(to), MySQLCondition{Kind: ColumnExists, Column: from})
	}
	if clash {
		for k := range renames {
			tmp := fmt.Sprintf("pgrelay_rename_%d", k)
			renameCol(renames[k].from, tmp)
			renames[k].from = tmp
		}
	}
	for _, r := range renames {
		renameCol(r.from, r.to)
	}
	for j := range t.Columns {
		if _, ok := matched.prevOf[j]; ok {
			continue
		}
		c, m := &t.Columns[j], &newMap.cols[j]
		missing := MySQLCondition{Kind: ColumnMissing, Column: c.Name}
		// As for PostgreSQL: NOT NULL only on key columns, which the primary
		// key needs; an older NULL would stop apply otherwise.
		notNull := c.Key && len(newKey) > 0
		switch {
		case c.Fill != nil:
			fill := d.valueDefault(c.Fill, notNull, m)
			if fill == "" && !c.Fill.Null {
				_, err := m.conv.convert([]byte(c.Fill.Text))
				return nil, changes, fmt.Errorf("schema: add column %q to %s: the value the source's existing rows hold in it does not fit MySQL: %w", c.Name, t.QualifiedName(), err)
			}
			alter("ADD COLUMN "+d.columnDef(c, m, notNull, fill, true), missing)
			if dflt := d.defaultClause(c, m); dflt != fill {
				alter(d.setDefault(c, m, notNull, dflt), MySQLCondition{})
			}
		case t.Recopy:
			alter("ADD COLUMN "+d.columnDef(c, m, notNull, d.defaultClause(c, m), true), missing)
		case c.Identity != "":
			return nil, changes, fmt.Errorf("schema: add column %q to %s: %w: it is an identity column (GENERATED %s AS IDENTITY), and existing source rows hold the values its sequence gave them there, which cannot be known; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
				c.Name, t.QualifiedName(), ErrVolatileDefault, c.Identity)
		case c.Default != "" && c.DefaultValue == nil:
			why := "is not immutable, and existing source rows hold the values it gave on the source"
			if !c.VolatileDefault {
				why = "is an expression pgrelay cannot write for MySQL, and the source catalog shows no value existing rows hold"
			}
			return nil, changes, fmt.Errorf("schema: add column %q to %s: %w: %s %s; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
				c.Name, t.QualifiedName(), ErrVolatileDefault, c.Default, why)
		default:
			dflt := d.defaultClause(c, m)
			if c.DefaultValue != nil && !c.DefaultValue.Null && dflt == "" {
				_, err := m.conv.convert([]byte(c.DefaultValue.Text))
				return nil, changes, fmt.Errorf("schema: add column %q to %s: its default, which existing source rows hold, does not fit MySQL: %w", c.Name, t.QualifiedName(), err)
			}
			alter("ADD COLUMN "+d.columnDef(c, m, notNull, dflt, true), missing)
		}
	}
	for j := range t.Columns {
		i, ok := matched.prevOf[j]
		if !ok {
			continue
		}
		p, c := &prev.Columns[i], &t.Columns[j]
		pm, nm := &prevMap.cols[i], &newMap.cols[j]
		wasNotNull := p.NotNull || p.Key && len(prevKey) > 0
		notNull := wasNotNull && c.NotNull || c.Key && len(newKey) > 0
		prevDefault, newDefault := d.defaultClause(p, pm), d.defaultClause(c, nm)
		if pm.sqlType != nm.sqlType || wasNotNull != notNull {
			alter("MODIFY COLUMN "+d.columnDef(c, nm, notNull, newDefault, true), MySQLCondition{})
			changes.Modified = append(changes.Modified, p.Name)
			continue
		}
		if prevDefault != newDefault {
			action := d.setDefault(c, nm, notNull, newDefault)
			alter(action, MySQLCondition{})
			if strings.HasPrefix(action, "MODIFY COLUMN ") {
				changes.Modified = append(changes.Modified, p.Name)
			}
		}
	}
	if keyChanged && len(newKey) > 0 {
		alter("ADD PRIMARY KEY ("+d.keyList(newKey)+")", MySQLCondition{Kind: KeyIsNot, Key: newKey})
		changes.KeyChanged = true
	}
	return steps, changes, nil
}

// setDefault is the ALTER TABLE action that gives column c (mapped as m)
// the default clause dflt, or none when dflt is "". An expression default
// (MySQL's for TEXT, BLOB and JSON) is set with the whole definition.
func (d *MySQLDialect) setDefault(c *Column, m *myColumn, notNull bool, dflt string) string {
	switch {
	case dflt == "":
		return "ALTER COLUMN " + d.QuoteIdent(c.Name) + " DROP DEFAULT"
	case strings.HasPrefix(dflt, " DEFAULT ("):
		return "MODIFY COLUMN " + d.columnDef(c, m, notNull, dflt, true)
	}
	return "ALTER COLUMN " + d.QuoteIdent(c.Name) + " SET" + dflt
}

// MySQLIndexName is a name for an index pgrelay makes on MySQL from base:
// base itself when it fits MySQL's 64 characters, else its first 55
// characters and 8 hex digits of its hash, so that the same base always
// gives the same name and two long ones do not collide.
func MySQLIndexName(base string) string {
	if utf8.RuneCountInString(base) <= mysqlMaxIdent {
		return base
	}
	sum := sha256.Sum256([]byte(base))
	return string([]rune(base)[:55]) + "_" + hex.EncodeToString(sum[:4])
}
