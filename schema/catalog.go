package schema

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/pgrelay/pgrelay/source"
)

// FirstUserOID is PostgreSQL's FirstNormalObjectId: objects with a lower OID were
// created by initdb (built-in types), objects from this one on by users and
// extensions.
const FirstUserOID = 16384

// ErrUnknownRelation is wrapped by Catalog.Table for a relation id the catalog has
// no Relation message for.
var ErrUnknownRelation = errors.New("no Relation message received for it")

// FactReader reads what a Relation message does not carry from the source
// catalog. Catalog calls it once per relation version, never per change.
type FactReader interface {
	// TableFacts returns the facts of the columns of schema.table as the source
	// catalog holds them now, plus the facts of every non-built-in type those
	// columns need (recursively). A table that no longer exists yields empty facts,
	// not an error: a Relation message may describe a table since dropped.
	TableFacts(ctx context.Context, schema, table string) (TableFacts, error)
	// TypeFacts returns the facts of one type.
	TypeFacts(ctx context.Context, oid uint32) (*Type, error)
}

// RelationFactReader is implemented by fact readers that can find a table by
// its OID (SourceFacts does). A Relation message names the table as it was
// when the change was decoded; renamed since, it is under another name now,
// and a table created since may hold the old one. Catalog asks by OID when it
// can.
type RelationFactReader interface {
	// RelationFacts returns what TableFacts does for the table whose OID is
	// relationID, under whatever name it has now: empty facts when no table
	// has that OID (it was dropped).
	RelationFacts(ctx context.Context, relationID uint32) (TableFacts, error)
}

// relationFacts reads the facts of rel's table: by OID when the fact reader
// can, by the name rel carries otherwise.
func (c *Catalog) relationFacts(ctx context.Context, rel *source.Relation) (TableFacts, error) {
	var (
		facts TableFacts
		err   error
	)
	if r, ok := c.facts.(RelationFactReader); ok {
		facts, err = r.RelationFacts(ctx, rel.RelationID)
	} else {
		facts, err = c.facts.TableFacts(ctx, rel.Namespace, rel.Name)
	}
	if err != nil {
		return TableFacts{}, fmt.Errorf("schema: read source catalog facts of %s.%s (relation id %d): %w",
			rel.Namespace, rel.Name, rel.RelationID, err)
	}
	return facts, nil
}

// TableFacts are the catalog facts of one table.
type TableFacts struct {
	Columns map[string]ColumnFacts // by column name
	Types   map[uint32]*Type       // non-built-in types the columns need, by OID
}

// ColumnFacts are the catalog facts of one column.
type ColumnFacts struct {
	TypeName        string // format_type(atttypid, atttypmod), qualified for non-built-in types
	NotNull         bool
	Default         SourceExpr // pg_get_expr of the default, "" when none (or generated column)
	VolatileDefault bool       // the default is not immutable: it cannot be reproduced on a target
	PortableDefault bool       // see Column.PortableDefault
	Fill            *Value     // attmissingval, nil when none (see Column.Fill)
	Identity        string     // see Column.Identity
	Collation       string     // see Column.Collation
	KeyPosition     int16      // see Column.KeyPosition
	TypeOID         uint32
	Attnum          int16 // attribute number, 0 when unknown
	// Generated is the expression of a stored generated column, "" for other
	// columns. pgoutput does not send such columns (before PostgreSQL 18):
	// the target computes them.
	Generated string
}

// Catalog caches relations by id from Relation and Type messages plus facts read
// once per relation version from the source catalog. It is safe for concurrent use.
type Catalog struct {
	facts FactReader

	mu        sync.Mutex
	relations map[uint32]*Table
	types     map[uint32]source.TypeMessage
}

// NewCatalog returns an empty catalog reading facts from facts.
func NewCatalog(facts FactReader) *Catalog {
	return &Catalog{
		facts:     facts,
		relations: make(map[uint32]*Table),
		types:     make(map[uint32]source.TypeMessage),
	}
}

// FactsMatch reports whether the source catalog, as committed now, already
// has every column of rel under its name and type: then a transaction's own
// DDL cannot be what rel shows, and there is nothing to wait for.
func (c *Catalog) FactsMatch(ctx context.Context, rel *source.Relation) (bool, error) {
	facts, err := c.relationFacts(ctx, rel)
	if err != nil {
		return false, err
	}
	// Columns the committed catalog has and rel lacks (dropped by the
	// transaction, generated, outside a column list) change nothing here.
	for _, rc := range rel.Columns {
		if f, ok := facts.Columns[rc.Name]; !ok || f.TypeOID != rc.TypeOID {
			return false, nil
		}
	}
	return true, nil
}

// ColumnFill returns what the source's rows older than column of the table
// whose OID is relationID (schema.table when relationID is 0) hold for it, as
// the source catalog has it now (see sink.FillResolver).
func (c *Catalog) ColumnFill(ctx context.Context, relationID uint32, schema, table, column string) (fill *Value, found, volatile bool, err error) {
	var facts TableFacts
	if relationID != 0 {
		facts, err = c.relationFacts(ctx, &source.Relation{RelationID: relationID, Namespace: schema, Name: table})
	} else if facts, err = c.facts.TableFacts(ctx, schema, table); err != nil {
		err = fmt.Errorf("schema: read source catalog facts of %s.%s: %w", schema, table, err)
	}
	if err != nil {
		return nil, false, false, err
	}
	f, ok := facts.Columns[column]
	if !ok {
		return nil, false, false, nil
	}
	return f.Fill, true, f.Fill == nil && (f.Default != "" && f.VolatileDefault || f.Identity != ""), nil
}

// WaitCommitted waits, when the fact reader can, until source transaction xid is
// visible to new snapshots, so that facts read for its Relation messages include
// its own DDL (see SourceFacts.WaitCommitted).
func (c *Catalog) WaitCommitted(ctx context.Context, xid uint32) error {
	if w, ok := c.facts.(interface {
		WaitCommitted(ctx context.Context, xid uint32) error
	}); ok {
		return w.WaitCommitted(ctx, xid)
	}
	return nil
}

// StillPrepared reports, when the fact reader can tell, whether source
// transaction xid is still prepared on the source (see
// SourceFacts.StillPrepared); otherwise it says it is.
func (c *Catalog) StillPrepared(ctx context.Context, xid uint32) (bool, error) {
	if p, ok := c.facts.(interface {
		StillPrepared(ctx context.Context, xid uint32) (bool, error)
	}); ok {
		return p.StillPrepared(ctx, xid)
	}
	return true, nil
}

// ApplyType records a Type message. pgoutput sends one before the first Relation
// that uses a non-built-in type; the catalog uses its name when the source
// catalog no longer knows the type.
func (c *Catalog) ApplyType(msg *source.TypeMessage) {
	if msg == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.types[msg.TypeOID] = *msg
}

// Apply installs a Relation message. It returns the new table, the previous
// version of the same relation id (nil when first seen) and whether the
// definition changed: name, replica identity, columns (name, type, typmod, key,
// NOT NULL, default) or the definitions of the types used. A relation seen for the
// first time counts as changed. The source catalog is read once per call.
//
// Facts are the source catalog's current state, which may be newer than the
// Relation message when the stream lags behind DDL. A column the catalog no longer
// has (or whose type OID differs) keeps what the message says: its type name is
// derived from the type OID and typmod, without NOT NULL or default.
func (c *Catalog) Apply(ctx context.Context, rel *source.Relation) (t, prev *Table, changed bool, err error) {
	if rel == nil {
		return nil, nil, false, errors.New("schema: apply relation: nil Relation message")
	}
	facts, err := c.relationFacts(ctx, rel)
	if err != nil {
		return nil, nil, false, err
	}
	return c.ApplyFacts(ctx, rel, facts)
}

// ApplyFacts is Apply with rel's table facts read beforehand, as
// BatchFactReader reads those of many tables at once.
func (c *Catalog) ApplyFacts(ctx context.Context, rel *source.Relation, facts TableFacts) (t, prev *Table, changed bool, err error) {
	if rel == nil {
		return nil, nil, false, errors.New("schema: apply relation: nil Relation message")
	}
	t, err = c.build(ctx, rel, facts)
	if err != nil {
		return nil, nil, false, err
	}
	c.mu.Lock()
	prev = c.relations[rel.RelationID]
	c.relations[rel.RelationID] = t
	c.mu.Unlock()
	return t, prev, prev == nil || !SameDefinition(prev, t), nil
}

// build turns a Relation message plus facts into a Table.
func (c *Catalog) build(ctx context.Context, rel *source.Relation, facts TableFacts) (*Table, error) {
	t := &Table{
		RelationID:      rel.RelationID,
		Schema:          rel.Namespace,
		Name:            rel.Name,
		ReplicaIdentity: rel.ReplicaIdentity,
		Columns:         make([]Column, len(rel.Columns)),
	}
	hasKey := rel.ReplicaIdentity == IdentityDefault || rel.ReplicaIdentity == IdentityIndex
	types := make(map[uint32]*Type, len(facts.Types))
	for oid, typ := range facts.Types {
		if typ != nil {
			types[oid] = typ
		}
	}
	for i, rc := range rel.Columns {
		col := Column{
			Name:    rc.Name,
			TypeOID: rc.TypeOID,
			TypeMod: rc.TypeMod,
			Key:     hasKey && rc.IsKey(),
		}
		f, ok := facts.Columns[rc.Name]
		if ok {
			col.Attnum = f.Attnum
			if col.Key {
				col.KeyPosition = f.KeyPosition
			}
		}
		if ok && f.TypeOID == rc.TypeOID && f.TypeName != "" {
			col.TypeName = f.TypeName
			col.NotNull = f.NotNull
			col.Default = f.Default
			col.VolatileDefault = f.VolatileDefault
			col.PortableDefault = f.PortableDefault
			if !f.VolatileDefault {
				col.DefaultValue = ConstantOf(f.Default, f.TypeName)
			}
			col.Fill = f.Fill
			col.Identity = f.Identity
			col.Collation = f.Collation
		} else {
			name, err := c.fallbackTypeName(ctx, rc.TypeOID, rc.TypeMod, types)
			if err != nil {
				return nil, fmt.Errorf("schema: relation %s.%s column %q: %w", rel.Namespace, rel.Name, rc.Name, err)
			}
			col.TypeName = name
		}
		if col.Key {
			// A replica identity key column is NOT NULL on the source (PostgreSQL
			// requires it for both DEFAULT and INDEX identities).
			col.NotNull = true
		}
		if rc.TypeOID >= FirstUserOID {
			typ, err := c.typeFacts(ctx, rc.TypeOID, types)
			if err != nil {
				return nil, fmt.Errorf("schema: relation %s.%s column %q: %w", rel.Namespace, rel.Name, rc.Name, err)
			}
			col.Type = typ
		}
		t.Columns[i] = col
	}
	// Stored generated columns, which the message leaves out: of built-in
	// types (a user type would have to be created for them too). Every other
	// column the catalog has and the message leaves out is listed without an
	// expression, which creates nothing and keeps a generated target column
	// as it is: it may have been generated when the message was sent (DROP
	// EXPRESSION since), added since, or be outside the publication's column
	// list.
	for name, f := range facts.Columns {
		if f.TypeOID < FirstUserOID && f.TypeName != "" && t.Column(name) == nil {
			t.Generated = append(t.Generated, GeneratedColumn{Name: name, TypeName: f.TypeName, Expr: SourceExpr(f.Generated), Attnum: f.Attnum})
		}
	}
	sort.Slice(t.Generated, func(i, j int) bool { return t.Generated[i].Attnum < t.Generated[j].Attnum })
	ordered, err := c.orderTypes(ctx, t, types)
	if err != nil {
		return nil, fmt.Errorf("schema: relation %s.%s: %w", rel.Namespace, rel.Name, err)
	}
	t.Types = ordered
	return t, nil
}

// typeFacts returns the facts of a non-built-in type: from the table facts when
// there, else from the source (and caches them in types), else from the Type
// message pgoutput sent.
func (c *Catalog) typeFacts(ctx context.Context, oid uint32, types map[uint32]*Type) (*Type, error) {
	if typ := types[oid]; typ != nil {
		return typ, nil
	}
	typ, err := c.facts.TypeFacts(ctx, oid)
	if err == nil && typ != nil {
		types[oid] = typ
		return typ, nil
	}
	c.mu.Lock()
	msg, ok := c.types[oid]
	c.mu.Unlock()
	if ok {
		// The type is gone from the source catalog; its name is all we know.
		typ = &Type{OID: oid, Namespace: msg.Namespace, Name: msg.Name, Category: CategoryBase, BaseOID: oid}
		types[oid] = typ
		return typ, nil
	}
	if err == nil {
		err = errors.New("no facts returned")
	}
	return nil, fmt.Errorf("type oid %d unknown: the source catalog does not have it (%w) and no Type message named it", oid, err)
}

// fallbackTypeName spells a type from its OID and typmod when the source catalog
// has no matching column.
func (c *Catalog) fallbackTypeName(ctx context.Context, oid uint32, typmod int32, types map[uint32]*Type) (string, error) {
	if name, ok := BuiltinTypeName(oid, typmod); ok {
		return name, nil
	}
	typ, err := c.typeFacts(ctx, oid, types)
	if err != nil {
		return "", err
	}
	if typ.Category == CategoryArray && typ.BaseName != "" {
		return typ.BaseName + "[]", nil
	}
	return quoteAlways(typ.Namespace) + "." + quoteAlways(typ.Name), nil
}

// orderTypes lists the user-defined types the table needs, dependencies first.
func (c *Catalog) orderTypes(ctx context.Context, t *Table, types map[uint32]*Type) ([]*Type, error) {
	var ordered []*Type
	state := make(map[uint32]byte) // 1 visiting, 2 done
	var visit func(oid uint32) error
	visit = func(oid uint32) error {
		if oid < FirstUserOID || state[oid] != 0 {
			return nil // built in, done, or a cycle (PostgreSQL forbids those)
		}
		state[oid] = 1
		typ, err := c.typeFacts(ctx, oid, types)
		if err != nil {
			return err
		}
		for _, dep := range typeDeps(typ) {
			if err := visit(dep); err != nil {
				return err
			}
		}
		state[oid] = 2
		ordered = append(ordered, typ)
		return nil
	}
	for _, col := range t.Columns {
		if err := visit(col.TypeOID); err != nil {
			return nil, fmt.Errorf("column %q: %w", col.Name, err)
		}
	}
	return ordered, nil
}

// typeDeps are the types typ is defined in terms of.
func typeDeps(typ *Type) []uint32 {
	var deps []uint32
	if typ.BaseOID != 0 && typ.BaseOID != typ.OID {
		deps = append(deps, typ.BaseOID)
	}
	for _, a := range typ.Attributes {
		deps = append(deps, a.TypeOID)
	}
	return deps
}

// ChangedType returns the name of a user-defined type of the relations in
// the catalog whose definition on the source differs now from the one read
// with their Relation message, "" when there is none. The stream carries no
// message for ALTER TYPE or ALTER DOMAIN: a value the target refuses can be
// the first sign of one. A type the source no longer has does not count: a
// new session would not know it any better.
func (c *Catalog) ChangedType(ctx context.Context) (string, error) {
	seen := map[uint32]bool{}
	for _, t := range c.Tables() {
		for _, typ := range t.Types {
			if typ == nil || seen[typ.OID] || !typ.UserDefined() {
				continue
			}
			seen[typ.OID] = true
			now, err := c.facts.TypeFacts(ctx, typ.OID)
			if err != nil {
				if ctx.Err() != nil {
					return "", err
				}
				continue
			}
			if now != nil && !reflect.DeepEqual(now, typ) {
				return typ.Namespace + "." + typ.Name, nil
			}
		}
	}
	return "", nil
}

// Table returns the current version of a relation.
func (c *Catalog) Table(relationID uint32) (*Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.relations[relationID]
	if !ok {
		return nil, fmt.Errorf("schema: relation id %d unknown: %w", relationID, ErrUnknownRelation)
	}
	return t, nil
}

// Tables returns the current version of every relation, ordered by schema and
// name.
func (c *Catalog) Tables() []*Table {
	c.mu.Lock()
	tables := make([]*Table, 0, len(c.relations))
	for _, t := range c.relations {
		tables = append(tables, t)
	}
	c.mu.Unlock()
	sort.Slice(tables, func(i, j int) bool {
		a, b := tables[i], tables[j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.RelationID < b.RelationID
	})
	return tables
}

// SameColumns reports whether two versions of a table have the same name,
// replica identity and columns as a Relation message describes them (names,
// types, key), differing at most in what the source's catalog adds: defaults,
// NOT NULL, collations, generated columns, type definitions. The catalog is
// read as it is now, so these may be ahead of the stream.
func SameColumns(a, b *Table) bool {
	if a.Schema != b.Schema || a.Name != b.Name || a.ReplicaIdentity != b.ReplicaIdentity || len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		x, y := &a.Columns[i], &b.Columns[i]
		if x.Name != y.Name || x.TypeOID != y.TypeOID || x.TypeMod != y.TypeMod || x.Key != y.Key || x.KeyPosition != y.KeyPosition {
			return false
		}
	}
	return true
}

// SameDefinition reports whether two versions of a table need the same target
// DDL: same name, replica identity, columns and type definitions.
func SameDefinition(a, b *Table) bool {
	if a.Schema != b.Schema || a.Name != b.Name || a.ReplicaIdentity != b.ReplicaIdentity ||
		len(a.Columns) != len(b.Columns) || len(a.Types) != len(b.Types) {
		return false
	}
	for i := range a.Columns {
		x, y := a.Columns[i], b.Columns[i]
		if x.Name != y.Name || x.TypeOID != y.TypeOID || x.TypeMod != y.TypeMod || x.Key != y.Key ||
			x.TypeName != y.TypeName || x.NotNull != y.NotNull || x.Default != y.Default ||
			x.VolatileDefault != y.VolatileDefault || x.PortableDefault != y.PortableDefault || x.Collation != y.Collation ||
			x.KeyPosition != y.KeyPosition {
			return false
		}
	}
	for i := range a.Types {
		if !reflect.DeepEqual(a.Types[i], b.Types[i]) {
			return false
		}
	}
	// Entries without an expression create nothing (see Catalog.build): they
	// matter to AlterTable only next to an entry with one.
	return slices.Equal(withExpr(a.Generated), withExpr(b.Generated))
}

func withExpr(gs []GeneratedColumn) []GeneratedColumn {
	var out []GeneratedColumn
	for _, g := range gs {
		if g.Expr != "" {
			out = append(out, g)
		}
	}
	return out
}
