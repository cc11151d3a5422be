package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Foreign keys on a MySQL target. A migration makes them from the source's
// facts (ForeignKey) once the tables are filled; MySQL checks them row by
// row, so never during the copy. pgrelay's sessions run with
// foreign_key_checks = 0: an ADD FOREIGN KEY then does not read the rows
// (ALGORITHM=INPLACE changes the metadata only), and apply never trips on
// one. Their names are the database's in MySQL (a table's in PostgreSQL).

// MySQLForeignKey is a foreign key of a MySQL target, in target names.
type MySQLForeignKey struct {
	Name string `json:"name"`
	// Schema and Table are the database and table it is on; its name is
	// Schema's.
	Schema     string   `json:"schema"`
	Table      string   `json:"table"`
	Columns    []string `json:"columns"`
	RefSchema  string   `json:"ref_schema"`
	RefTable   string   `json:"ref_table"`
	RefColumns []string `json:"ref_columns"`
	// OnDelete and OnUpdate are RESTRICT, CASCADE, SET NULL or NO ACTION.
	OnDelete string `json:"on_delete"`
	OnUpdate string `json:"on_update"`
}

// References reports whether k is on, or references, the table sch.name.
func (k *MySQLForeignKey) References(sch, name string) bool {
	return k.Schema == sch && k.Table == name || k.RefSchema == sch && k.RefTable == name
}

// Same reports whether k and o are the same constraint but for its name.
func (k *MySQLForeignKey) Same(o *MySQLForeignKey) bool {
	return k.Schema == o.Schema && k.Table == o.Table && k.RefSchema == o.RefSchema && k.RefTable == o.RefTable &&
		equalFold(k.Columns, o.Columns) && equalFold(k.RefColumns, o.RefColumns)
}

func equalFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// MySQLForeignKeyUnfit says why MySQL cannot hold fk as the source has it,
// "" when it can. MATCH FULL, DEFERRABLE and NOT VALID are no reason: the
// key is made, checked as MySQL does (MySQLForeignKeyNotes).
func MySQLForeignKeyUnfit(fk *ForeignKey) string {
	if len(fk.Columns) == 0 || len(fk.Columns) != len(fk.RefColumns) {
		return "the source catalog did not show its columns"
	}
	for _, a := range []struct{ on, action string }{{"DELETE", fk.OnDelete}, {"UPDATE", fk.OnUpdate}} {
		if a.action == "SET DEFAULT" {
			return "ON " + a.on + " SET DEFAULT: InnoDB has no such action (MySQL refuses it, MariaDB takes it for NO ACTION)"
		}
	}
	return ""
}

// MySQLForeignKeyNotes says how fk, made on MySQL, is checked otherwise than
// on the source: "" when it is checked alike.
func MySQLForeignKeyNotes(fk *ForeignKey) string {
	var notes []string
	if fk.Deferrable {
		notes = append(notes, "DEFERRABLE on the source: MySQL checks a foreign key at each row, never at commit (pgrelay's sessions do not check it; the application's do, at once)")
	}
	if fk.Match == "FULL" && len(fk.Columns) > 1 {
		notes = append(notes, "MATCH FULL on the source: MySQL checks it as MATCH SIMPLE (a row with some of its columns NULL is not checked)")
	}
	if !fk.Validated {
		notes = append(notes, "NOT VALID on the source: rows already there are not checked, as there")
	}
	return strings.Join(notes, "; ")
}

// ForeignKey is fk on the target, named name (MySQLForeignKeyName).
func (d *MySQLDialect) ForeignKey(fk *ForeignKey, name string) MySQLForeignKey {
	action := func(a string) string {
		if a == "" {
			return "NO ACTION"
		}
		return a
	}
	return MySQLForeignKey{Name: name,
		Schema: d.TargetSchema(fk.Table.Schema), Table: fk.Table.Name, Columns: fk.Columns,
		RefSchema: d.TargetSchema(fk.RefTable.Schema), RefTable: fk.RefTable.Name, RefColumns: fk.RefColumns,
		OnDelete: action(fk.OnDelete), OnUpdate: action(fk.OnUpdate)}
}

// AddForeignKey is the statement that makes k. ALGORITHM=INPLACE: with
// foreign_key_checks = 0 (every pgrelay session) MySQL and MariaDB add it
// by changing the metadata only, without reading a row; a session that
// checks is refused rather than copying the table. No MATCH clause: InnoDB
// ignores it, and MySQL then ignores ON DELETE and ON UPDATE too.
func (d *MySQLDialect) AddForeignKey(k *MySQLForeignKey) string {
	return "ALTER TABLE " + d.qualified(k.Schema, k.Table) + " ADD CONSTRAINT " + d.QuoteIdent(k.Name) +
		" FOREIGN KEY (" + d.keyList(k.Columns) + ") REFERENCES " + d.qualified(k.RefSchema, k.RefTable) +
		" (" + d.keyList(k.RefColumns) + ") ON DELETE " + k.OnDelete + " ON UPDATE " + k.OnUpdate + ", ALGORITHM=INPLACE"
}

// DropForeignKey is the statement that drops k from its table.
func (d *MySQLDialect) DropForeignKey(k *MySQLForeignKey) string {
	return "ALTER TABLE " + d.qualified(k.Schema, k.Table) + " DROP FOREIGN KEY " + d.QuoteIdent(k.Name)
}

// ForeignKeyIndex is the statement that makes index name on k's columns,
// which MySQL needs first in an index of its table (it would make one
// itself, named after the key).
func (d *MySQLDialect) ForeignKeyIndex(k *MySQLForeignKey, name string) string {
	return "CREATE INDEX " + d.QuoteIdent(name) + " ON " + d.qualified(k.Schema, k.Table) + " (" + d.keyList(k.Columns) + ")"
}

// ForeignKeyDisplay names k for people as a migration's report names a
// foreign key of the source: "name on schema.table", the source schema
// being public for the target URL's database.
func (d *MySQLDialect) ForeignKeyDisplay(k *MySQLForeignKey) string {
	sch := k.Schema
	if sch == d.Database {
		sch = "public"
	}
	return displayIdent(k.Name) + " on " + QualifiedName{Schema: sch, Name: k.Table}.display()
}

// MySQLForeignKeyName is the MySQL name of the source's foreign key name of
// table: name itself or, when clash says another foreign key going to the
// same database has that name too (case aside, as MySQL compares them),
// table_name; one over 64 characters is cut as MySQLIndexName cuts it.
func MySQLForeignKeyName(table, name string, clash bool) string {
	if clash {
		name = table + "_" + name
	}
	return MySQLIndexName(name)
}

// MySQLForeignKeyAltName is the name a foreign key takes when its name
// (MySQLForeignKeyName) belongs to another constraint of the database: its
// first 55 characters and 8 hex digits of a hash of the source table and
// name, the same every time.
func MySQLForeignKeyAltName(name string, t QualifiedName, sourceName string) string {
	sum := sha256.Sum256([]byte(t.Schema + "." + t.Name + "." + sourceName))
	if utf8.RuneCountInString(name) > 55 {
		name = string([]rune(name)[:55])
	}
	return name + "_" + hex.EncodeToString(sum[:4])
}

// ObjectName is how a migration's report names a table or sequence q
// (Object.Name): each part quoted only where PostgreSQL would.
func ObjectName(q QualifiedName) string { return q.display() }
