// Package schema is pgrelay's table model: the relation catalog built from pgoutput
// Relation and Type messages plus facts read once from the source catalog, and the
// mapping of a source relation onto target DDL, one dialect per target kind.
package schema

import (
	"slices"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// Replica identity settings, as sent in Relation messages.
const (
	IdentityDefault byte = 'd'
	IdentityNothing byte = 'n'
	IdentityFull    byte = 'f'
	IdentityIndex   byte = 'i'
)

// TypeCategory says what kind of PostgreSQL type a column has; it decides what
// must exist on the target before the table (enums, domains, composites) and how
// a dialect maps it.
type TypeCategory byte

const (
	CategoryBase      TypeCategory = 'b'
	CategoryEnum      TypeCategory = 'e'
	CategoryDomain    TypeCategory = 'd'
	CategoryComposite TypeCategory = 'c'
	CategoryArray     TypeCategory = 'a'
	CategoryRange     TypeCategory = 'r'
)

// Type is a source data type as read from the source catalog (pg_type).
type Type struct {
	OID       uint32
	Namespace string
	Name      string
	Category  TypeCategory
	// BaseOID is the base type of a domain, the element type of an array, the
	// subtype of a range, else OID.
	BaseOID uint32
	// BaseName is format_type of the base/element/sub type (domains, arrays,
	// ranges), schema-qualified when that type is not built in.
	BaseName string
	// EnumLabels are the labels of an enum, in sort order.
	EnumLabels []string
	// DomainNotNull and DomainChecks describe a domain's constraints.
	// DomainChecks are the validated CHECK constraints, named as on the
	// source (always quoted) and spelled by pg_get_constraintdef, e.g.
	// `CONSTRAINT "pos_check" CHECK ((VALUE > 0))`; those added NOT VALID and
	// not validated since are left out (the source's older values may fail them).
	// DomainDefault is the domain's default expression, "" when none. Both
	// are source SQL: only the PostgreSQL dialect renders them (a dialect
	// that maps a domain to its base type leaves them out).
	DomainNotNull bool
	DomainChecks  []SourceExpr
	DomainDefault SourceExpr
	// DomainCollation is a domain's own collation, quoted and
	// schema-qualified; "" when it is its base type's. A PostgreSQL name:
	// other dialects map a domain to its base type with their own collation.
	DomainCollation string `json:",omitempty"`
	// Attributes are the fields of a composite type, in order.
	Attributes []Attribute
	// RowType marks a composite type that is a table's row type (of the
	// table of the same name), which the table's CREATE TABLE makes.
	RowType bool `json:",omitempty"`
}

// Attribute is one field of a composite type.
type Attribute struct {
	Name     string
	TypeOID  uint32
	TypeName string // format_type, schema-qualified when not built in
}

// UserDefined reports whether the type lives in a user schema (not pg_catalog or
// information_schema) and so may have to be created on the target.
func (t *Type) UserDefined() bool {
	return t.Namespace != "pg_catalog" && t.Namespace != "information_schema"
}

// SourceExpr is an expression in the source's SQL, as PostgreSQL prints it
// (pg_get_expr or pg_get_constraintdef with an empty search_path, so every
// name is qualified). Only the PostgreSQL dialect renders it; another dialect
// refuses it with an error naming what needs it, or leaves it out and says so.
type SourceExpr string

// Value is a constant of a source type: NULL, or its text form as the type's
// output function prints it (the form pgoutput sends in text mode). A dialect
// binds it as a parameter or renders a literal of its own.
type Value struct {
	Null bool   `json:",omitempty"`
	Text string `json:",omitempty"`
	// TypeName is the value's type as Column.TypeName spells it.
	TypeName string
}

// Column is one column of a replicated table.
type Column struct {
	Name    string
	TypeOID uint32
	TypeMod int32
	// Key marks replica identity key columns: the target primary key. Only
	// tables with REPLICA IDENTITY DEFAULT or INDEX have key columns: under FULL
	// pgoutput flags every column, and the catalog clears those flags, since
	// such rows are matched by all their old values, not by a key.
	Key bool
	// TypeName is the source's format_type(atttypid, atttypmod), e.g. "numeric(10,2)",
	// "character varying(20)", "public.mood", "integer[]". Types outside pg_catalog
	// are always schema-qualified, whatever the source's search_path.
	TypeName string
	// Attnum is the source's attribute number, 0 when unknown (the column no longer
	// exists on the source). Attribute numbers are never reused, so a column whose
	// name changed but whose Attnum did not was renamed.
	Attnum int16
	// Type holds catalog facts for non-built-in types (enum, domain, composite,
	// arrays of them); nil for built-in base types.
	Type    *Type
	NotNull bool
	// Default is the column default expression as the source prints it
	// (pg_get_expr with an empty search_path, so every name is qualified), ""
	// when none: source SQL, which only the PostgreSQL dialect renders.
	// VolatileDefault marks one that cannot be reproduced on the target: any
	// expression that is not immutable (nextval(), random(), now()).
	Default         SourceExpr
	VolatileDefault bool
	// DefaultValue is Default as a constant of the column's type when it is
	// one ('x'::text, 42, true, NULL::integer): the fact other dialects
	// render. nil when there is no default or it is an expression.
	DefaultValue *Value `json:",omitempty"`
	// PortableDefault marks a default the target can carry for its own
	// inserts (after a cutover) although it is not immutable: it calls
	// built-in functions only (now(), CURRENT_USER, gen_random_uuid()), no
	// nextval() and nothing user-defined that the target may lack. Replicated
	// rows never use it: every change carries its values.
	PortableDefault bool
	// OmitDefault is set by a target that cannot create Default (an older
	// server without a function it calls, e.g. uuidv7() before PostgreSQL
	// 18): the target column gets no default. It only serves the target's own
	// inserts, so nothing replicated depends on it, except the values of rows
	// an added column fills from it: those still take it. Not part of the
	// definition: the target's own annotation, never stored.
	OmitDefault bool `json:"-"`
	// Fill is the value the rows that existed when the column was added
	// hold (pg_attribute.attmissingval, PostgreSQL 11+), of the column's type;
	// nil when unknown. It, not the current default, fills existing target
	// rows when the column is added there: the default may have changed since.
	Fill *Value `json:",omitempty"`
	// Identity is "ALWAYS" or "BY DEFAULT" for an identity column (GENERATED
	// … AS IDENTITY), "" otherwise. Like a nextval() default, its sequence
	// gave the rows that existed when it was added values of their own. Not
	// part of the definition (SameDefinition): the target's identity columns
	// are set up by pgrelay migrate with their sequences.
	Identity string `json:",omitempty"`
	// Collation is the column's own collation, quoted and schema-qualified
	// ("pg_catalog"."C"), when it is not its type's (COLLATE in the column's
	// definition); "" otherwise. A PostgreSQL name: other dialects give
	// every text column their own binary collation.
	Collation string `json:",omitempty"`
	// KeyPosition is a key column's position in the source's key index
	// (primary key or replica identity index), from 1; 0 when unknown.
	KeyPosition int16 `json:",omitempty"`
}

// GeneratedColumn is a stored generated column of the source table.
type GeneratedColumn struct {
	Name     string
	TypeName string
	// Expr is pg_get_expr of the generation expression (source SQL); ""
	// when unknown (see Catalog.build): such an entry creates nothing and
	// keeps what exists.
	Expr   SourceExpr
	Attnum int16
}

// Table is a source relation as pgrelay replicates it.
type Table struct {
	RelationID      uint32
	Schema          string // source namespace
	Name            string
	ReplicaIdentity byte
	Columns         []Column
	// Generated are the source's stored generated columns, which pgoutput
	// does not send: the target table has them as generated columns too, and
	// computes them. By attribute number.
	Generated []GeneratedColumn
	// Types are the user-defined types the columns need (their own types and,
	// recursively, domain bases, array elements, composite attributes, range
	// subtypes), dependencies first: the order to create them on a target.
	Types []*Type
	// Recopy marks a version of the table that a snapshot copy is about to
	// load into the emptied target table: a column the publication's column
	// list left out is then dropped like a column dropped from the table (its
	// values are copied anew anyway), and an added column needs no fill
	// value (a volatile default or an identity column is no error). Never
	// stored.
	Recopy bool `json:"-"`
	// Uncommitted marks a version that comes from DDL of a transaction not
	// committed on the source yet (a prepared transaction's own): a column
	// the source catalog does not know by its name may then be new (a drop
	// and an add), and InferRenamed does not take it for a renamed one.
	// Never stored.
	Uncommitted bool `json:"-"`
}

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// KeyColumns returns the indexes of the replica identity key columns.
// They come in the source key index's order when every one's KeyPosition is
// known, else in table order.
func (t *Table) KeyColumns() []int {
	var idx []int
	ordered := true
	for i, c := range t.Columns {
		if c.Key {
			idx = append(idx, i)
			ordered = ordered && c.KeyPosition > 0
		}
	}
	if ordered {
		slices.SortStableFunc(idx, func(a, b int) int { return int(t.Columns[a].KeyPosition) - int(t.Columns[b].KeyPosition) })
	}
	return idx
}

// TargetKey returns the names of the target's primary key columns, in key
// order: the replica identity key under REPLICA IDENTITY DEFAULT and INDEX,
// none under FULL and NOTHING.
func (t *Table) TargetKey() []string {
	if t.ReplicaIdentity != IdentityDefault && t.ReplicaIdentity != IdentityIndex {
		return nil
	}
	var names []string
	for _, i := range t.KeyColumns() {
		names = append(names, t.Columns[i].Name)
	}
	return names
}

// QualifiedName is schema.name as the source spells it, unquoted, for messages.
func (t *Table) QualifiedName() string { return t.Schema + "." + t.Name }

// DisplayName is schema.name for log lines and messages, each part quoted
// where it needs to be (public."a.b,c"), as quote_ident does.
func (t *Table) DisplayName() string { return pgquote.Name(t.Schema, t.Name) }
