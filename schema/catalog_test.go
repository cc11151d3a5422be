package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pgrelay/pgrelay/source"
)

// fakeFacts is a FactReader over maps, counting calls.
type fakeFacts struct {
	mu         sync.Mutex
	tables     map[string]TableFacts // "schema.table"
	types      map[uint32]*Type      // for TypeFacts
	tableCalls map[string]int
	typeCalls  map[uint32]int
	err        error
}

func newFakeFacts() *fakeFacts {
	return &fakeFacts{tables: map[string]TableFacts{}, types: map[uint32]*Type{},
		tableCalls: map[string]int{}, typeCalls: map[uint32]int{}}
}

func (f *fakeFacts) TableFacts(_ context.Context, schema, table string) (TableFacts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tableCalls[schema+"."+table]++
	if f.err != nil {
		return TableFacts{}, f.err
	}
	return f.tables[schema+"."+table], nil
}

func (f *fakeFacts) TypeFacts(_ context.Context, oid uint32) (*Type, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.typeCalls[oid]++
	if typ, ok := f.types[oid]; ok {
		return typ, nil
	}
	return nil, fmt.Errorf("type oid %d does not exist on the source", oid)
}

func usersRelation(cols ...source.RelationColumn) *source.Relation {
	if cols == nil {
		cols = []source.RelationColumn{
			{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 23, TypeMod: -1},
			{Name: "name", TypeOID: 25, TypeMod: -1},
		}
	}
	return &source.Relation{RelationID: 16384, Namespace: "app", Name: "users", ReplicaIdentity: IdentityDefault, Columns: cols}
}

func usersFacts() TableFacts {
	return TableFacts{Columns: map[string]ColumnFacts{
		"id":   {TypeName: "integer", NotNull: true, TypeOID: 23, Attnum: 1, Default: "nextval('app.users_id_seq'::regclass)", VolatileDefault: true},
		"name": {TypeName: "text", NotNull: true, TypeOID: 25, Attnum: 2, Default: "'x'::text"},
	}}
}

func TestCatalogApplyBuildsTable(t *testing.T) {
	facts := newFakeFacts()
	facts.tables["app.users"] = usersFacts()
	c := NewCatalog(facts)
	tbl, prev, changed, err := c.Apply(context.Background(), usersRelation())
	if err != nil {
		t.Fatal(err)
	}
	if prev != nil || !changed {
		t.Errorf("first Apply: prev = %v, changed = %v; want nil, true", prev, changed)
	}
	want := []Column{
		{Name: "id", TypeOID: 23, TypeMod: -1, Key: true, TypeName: "integer", Attnum: 1, NotNull: true,
			Default: "nextval('app.users_id_seq'::regclass)", VolatileDefault: true},
		{Name: "name", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 2, NotNull: true, Default: "'x'::text"},
	}
	// The constant default is also a fact other dialects render.
	if v := tbl.Columns[1].DefaultValue; v == nil || *v != (Value{Text: "x", TypeName: "text"}) {
		t.Errorf("DefaultValue of name = %+v, want x of type text", v)
	}
	tbl.Columns[1].DefaultValue = nil
	if fmt.Sprint(tbl.Columns) != fmt.Sprint(want) {
		t.Errorf("columns\n got %+v\nwant %+v", tbl.Columns, want)
	}
	if tbl.RelationID != 16384 || tbl.QualifiedName() != "app.users" || tbl.ReplicaIdentity != IdentityDefault {
		t.Errorf("table = %+v", tbl)
	}
	got, err := c.Table(16384)
	if err != nil || got != tbl {
		t.Errorf("Table(16384) = %p, %v; want %p", got, err, tbl)
	}
}

func TestCatalogReplaceAndChanged(t *testing.T) {
	facts := newFakeFacts()
	facts.tables["app.users"] = usersFacts()
	c := NewCatalog(facts)
	ctx := context.Background()
	v1, _, _, err := c.Apply(ctx, usersRelation())
	if err != nil {
		t.Fatal(err)
	}

	// The same Relation again (a new session resends it): replaced, not changed.
	v2, prev, changed, err := c.Apply(ctx, usersRelation())
	if err != nil {
		t.Fatal(err)
	}
	if prev != v1 || changed || v2 == v1 {
		t.Errorf("same relation: prev = %p (want %p), changed = %v, new table = %p", prev, v1, changed, v2)
	}

	changes := []struct {
		name  string
		rel   *source.Relation
		facts func(*TableFacts)
	}{
		{name: "added column", rel: usersRelation(
			source.RelationColumn{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 23, TypeMod: -1},
			source.RelationColumn{Name: "name", TypeOID: 25, TypeMod: -1},
			source.RelationColumn{Name: "age", TypeOID: 21, TypeMod: -1})},
		{name: "type change", rel: usersRelation(
			source.RelationColumn{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 20, TypeMod: -1},
			source.RelationColumn{Name: "name", TypeOID: 25, TypeMod: -1}),
			facts: func(f *TableFacts) {
				f.Columns["id"] = ColumnFacts{TypeName: "bigint", NotNull: true, TypeOID: 20, Attnum: 1}
			}},
		{name: "typmod change", rel: usersRelation(
			source.RelationColumn{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 23, TypeMod: -1},
			source.RelationColumn{Name: "name", TypeOID: 1043, TypeMod: 24})},
		{name: "key change", rel: usersRelation(
			source.RelationColumn{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 23, TypeMod: -1},
			source.RelationColumn{Flags: source.ColumnFlagKey, Name: "name", TypeOID: 25, TypeMod: -1})},
		{name: "identity change", rel: func() *source.Relation {
			r := usersRelation()
			r.ReplicaIdentity = IdentityFull
			return r
		}()},
		{name: "rename", rel: func() *source.Relation {
			r := usersRelation()
			r.Name = "people"
			return r
		}()},
		{name: "default change", rel: usersRelation(),
			facts: func(f *TableFacts) {
				f.Columns["name"] = ColumnFacts{TypeName: "text", NotNull: true, TypeOID: 25, Attnum: 2, Default: "'y'::text"}
			}},
		{name: "not null change", rel: usersRelation(),
			facts: func(f *TableFacts) {
				f.Columns["name"] = ColumnFacts{TypeName: "text", TypeOID: 25, Attnum: 2, Default: "'x'::text"}
			}},
	}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			f := usersFacts()
			if ch.facts != nil {
				ch.facts(&f)
			}
			facts.tables["app.users"] = f
			facts.tables["app.people"] = f
			base, _, _, err := c.Apply(ctx, usersRelation())
			if err != nil {
				t.Fatal(err)
			}
			if ch.facts != nil {
				// The facts change alone is the change here: compare with the
				// version built from the original facts.
				facts.tables["app.users"] = usersFacts()
				base, _, _, err = c.Apply(ctx, usersRelation())
				if err != nil {
					t.Fatal(err)
				}
				facts.tables["app.users"] = f
			}
			next, prev, changed, err := c.Apply(ctx, ch.rel)
			if err != nil {
				t.Fatal(err)
			}
			if prev != base || !changed {
				t.Errorf("prev = %p (want %p), changed = %v (want true)", prev, base, changed)
			}
			if _, again, changedAgain, _ := c.Apply(ctx, ch.rel); again == nil || changedAgain {
				t.Errorf("applying the same relation twice: changed = %v", changedAgain)
			} else if !SameDefinition(again, next) {
				t.Errorf("SameDefinition of two builds of one relation is false")
			}
		})
	}
}

func TestCatalogFactsReadOncePerRelation(t *testing.T) {
	facts := newFakeFacts()
	facts.tables["app.users"] = usersFacts()
	c := NewCatalog(facts)
	ctx := context.Background()
	if _, _, _, err := c.Apply(ctx, usersRelation()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ { // per change: lookups only
		if _, err := c.Table(16384); err != nil {
			t.Fatal(err)
		}
	}
	if n := facts.tableCalls["app.users"]; n != 1 {
		t.Errorf("TableFacts called %d times for one Relation message, want 1", n)
	}
	if _, _, _, err := c.Apply(ctx, usersRelation()); err != nil {
		t.Fatal(err)
	}
	if n := facts.tableCalls["app.users"]; n != 2 {
		t.Errorf("TableFacts called %d times for two Relation messages, want 2", n)
	}
	if len(facts.typeCalls) != 0 {
		t.Errorf("TypeFacts called for built-in types: %v", facts.typeCalls)
	}
}

func TestCatalogUnknownRelation(t *testing.T) {
	c := NewCatalog(newFakeFacts())
	_, err := c.Table(16384)
	if err == nil || err.Error() != "schema: relation id 16384 unknown: no Relation message received for it" {
		t.Errorf("err = %v", err)
	}
	if !errors.Is(err, ErrUnknownRelation) {
		t.Errorf("err does not wrap ErrUnknownRelation")
	}
}

func TestCatalogFactsError(t *testing.T) {
	facts := newFakeFacts()
	facts.err = errors.New("connection refused")
	c := NewCatalog(facts)
	_, _, _, err := c.Apply(context.Background(), usersRelation())
	if err == nil || !strings.Contains(err.Error(), "app.users") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want one naming the table and the cause", err)
	}
	if _, err := c.Table(16384); err == nil {
		t.Error("a failed Apply installed the relation")
	}
	if _, _, _, err := c.Apply(context.Background(), nil); err == nil {
		t.Error("Apply(nil) succeeded")
	}
}

func TestCatalogIdentityFullHasNoKey(t *testing.T) {
	facts := newFakeFacts()
	c := NewCatalog(facts)
	rel := usersRelation(
		source.RelationColumn{Flags: source.ColumnFlagKey, Name: "id", TypeOID: 23, TypeMod: -1},
		source.RelationColumn{Flags: source.ColumnFlagKey, Name: "name", TypeOID: 25, TypeMod: -1})
	rel.ReplicaIdentity = IdentityFull
	tbl, _, _, err := c.Apply(context.Background(), rel)
	if err != nil {
		t.Fatal(err)
	}
	if k := tbl.KeyColumns(); len(k) != 0 {
		t.Errorf("REPLICA IDENTITY FULL: key columns %v, want none", k)
	}
}

func TestCatalogFallbackWhenFactsAreNewer(t *testing.T) {
	facts := newFakeFacts()
	// The source catalog moved on: "price" is now numeric, "old" was dropped.
	facts.tables["app.items"] = TableFacts{Columns: map[string]ColumnFacts{
		"price": {TypeName: "numeric", TypeOID: 1700, Attnum: 2, NotNull: true},
	}}
	facts.types[17100] = &Type{OID: 17100, Namespace: "app", Name: "_mood", Category: CategoryArray, BaseOID: 17101, BaseName: "app.mood"}
	facts.types[17101] = &Type{OID: 17101, Namespace: "app", Name: "mood", Category: CategoryEnum, BaseOID: 17101, EnumLabels: []string{"a"}}
	c := NewCatalog(facts)
	c.ApplyType(&source.TypeMessage{TypeOID: 17200, Namespace: "gone", Name: "Dropped Type"})
	rel := &source.Relation{RelationID: 16500, Namespace: "app", Name: "items", ReplicaIdentity: IdentityDefault,
		Columns: []source.RelationColumn{
			{Name: "price", TypeOID: 1043, TypeMod: 14},
			{Name: "old", TypeOID: 1700, TypeMod: (12<<16 | 2) + 4},
			{Name: "moods", TypeOID: 17100, TypeMod: -1},
			{Name: "gone", TypeOID: 17200, TypeMod: -1},
		}}
	tbl, _, _, err := c.Apply(context.Background(), rel)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"character varying(10)", "numeric(12,2)", "app.mood[]", `"gone"."Dropped Type"`}
	for i, w := range wantNames {
		if got := tbl.Columns[i].TypeName; got != w {
			t.Errorf("column %q: TypeName %q, want %q", tbl.Columns[i].Name, got, w)
		}
	}
	if tbl.Columns[0].NotNull || tbl.Columns[0].Attnum != 2 {
		t.Errorf("price: facts of another type applied or attnum lost: %+v", tbl.Columns[0])
	}
	if len(tbl.Types) != 3 || tbl.Types[0].OID != 17101 || tbl.Types[1].OID != 17100 || tbl.Types[2].OID != 17200 {
		t.Errorf("types not in dependency order: %+v", tbl.Types)
	}
	if tbl.Columns[2].Type == nil || tbl.Columns[2].Type.OID != 17100 {
		t.Errorf("moods: Type = %+v", tbl.Columns[2].Type)
	}

	// A type nobody knows is an error naming the column.
	rel.Columns = append(rel.Columns, source.RelationColumn{Name: "mystery", TypeOID: 17300, TypeMod: -1})
	if _, _, _, err := c.Apply(context.Background(), rel); err == nil || !strings.Contains(err.Error(), `"mystery"`) {
		t.Errorf("unknown type: err = %v", err)
	}
}

func TestCatalogTypesInDependencyOrder(t *testing.T) {
	facts := newFakeFacts()
	posint := &Type{OID: 17003, Namespace: "app", Name: "posint", Category: CategoryDomain, BaseOID: 23, BaseName: "integer"}
	code := &Type{OID: 17004, Namespace: "ref", Name: "code", Category: CategoryDomain, BaseOID: 1043}
	addr := &Type{OID: 17005, Namespace: "app", Name: "address", Category: CategoryComposite, BaseOID: 17005,
		Attributes: []Attribute{{Name: "zip", TypeOID: 17004}, {Name: "floor", TypeOID: 17003}}}
	addrs := &Type{OID: 17006, Namespace: "app", Name: "_address", Category: CategoryArray, BaseOID: 17005}
	facts.tables["app.people"] = TableFacts{
		Columns: map[string]ColumnFacts{
			"homes": {TypeName: "app.address[]", TypeOID: 17006, Attnum: 1},
			"n":     {TypeName: "app.posint", TypeOID: 17003, Attnum: 2},
		},
		Types: map[uint32]*Type{17003: posint, 17004: code, 17005: addr, 17006: addrs},
	}
	c := NewCatalog(facts)
	tbl, _, _, err := c.Apply(context.Background(), &source.Relation{RelationID: 1, Namespace: "app", Name: "people",
		ReplicaIdentity: IdentityNothing, Columns: []source.RelationColumn{
			{Name: "homes", TypeOID: 17006, TypeMod: -1}, {Name: "n", TypeOID: 17003, TypeMod: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, typ := range tbl.Types {
		order = append(order, typ.Name)
	}
	if got := strings.Join(order, ","); got != "code,posint,address,_address" {
		t.Errorf("type order %s, want code,posint,address,_address", got)
	}
	if len(facts.typeCalls) != 0 {
		t.Errorf("TypeFacts called although TableFacts had every type: %v", facts.typeCalls)
	}
}

func TestCatalogTablesSorted(t *testing.T) {
	facts := newFakeFacts()
	c := NewCatalog(facts)
	for i, name := range []string{"b.t", "a.z", "a.b"} {
		ns, n, _ := strings.Cut(name, ".")
		if _, _, _, err := c.Apply(context.Background(), &source.Relation{RelationID: uint32(100 + i), Namespace: ns, Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tbl := range c.Tables() {
		got = append(got, tbl.QualifiedName())
	}
	if strings.Join(got, " ") != "a.b a.z b.t" {
		t.Errorf("Tables() = %v", got)
	}
}

func TestCatalogConcurrentUse(t *testing.T) {
	facts := newFakeFacts()
	facts.tables["app.users"] = usersFacts()
	c := NewCatalog(facts)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if _, _, _, err := c.Apply(context.Background(), usersRelation()); err != nil {
					t.Error(err)
					return
				}
				c.ApplyType(&source.TypeMessage{TypeOID: 17000, Namespace: "app", Name: "t"})
				if _, err := c.Table(16384); err != nil {
					t.Error(err)
					return
				}
				_ = c.Tables()
			}
		}()
	}
	wg.Wait()
}

func TestBuiltinTypeName(t *testing.T) {
	for _, c := range []struct {
		oid    uint32
		typmod int32
		want   string
	}{
		{23, -1, "integer"},
		{1043, -1, "character varying"},
		{1043, 24, "character varying(20)"},
		{1042, 7, "character(3)"},
		{1042, -1, "bpchar"},
		{1700, -1, "numeric"},
		{1700, (10<<16 | 2) + 4, "numeric(10,2)"},
		{1700, (5<<16 | (-3 & 0x7ff)) + 4, "numeric(5,-3)"},
		{1231, (10<<16 | 2) + 4, "numeric(10,2)[]"},
		{1184, 3, "timestamp(3) with time zone"},
		{1114, -1, "timestamp without time zone"},
		{1266, 0, "time(0) with time zone"},
		{1186, -1, "interval"},
		{1186, 0x7fff<<16 | 3, "interval(3)"},
		{1186, (1<<3|1<<10|1<<11|1<<12)<<16 | 0xffff, "interval day to second"},
		{1186, (1<<2|1<<1)<<16 | 0xffff, "interval year to month"},
		{1560, 8, "bit(8)"},
		{1563, 16, "bit varying(16)[]"},
		{18, -1, `"char"`},
		{1015, 14, "character varying(10)[]"},
	} {
		got, ok := BuiltinTypeName(c.oid, c.typmod)
		if !ok || got != c.want {
			t.Errorf("BuiltinTypeName(%d, %d) = %q, %v; want %q", c.oid, c.typmod, got, ok, c.want)
		}
	}
	if _, ok := BuiltinTypeName(17000, -1); ok {
		t.Error("a user type OID was spelled as built in")
	}
}

func TestQualifiedTypeName(t *testing.T) {
	for _, c := range []struct {
		formatted string
		user      bool
		ns, name  string
		want      string
	}{
		{"integer", false, "pg_catalog", "int4", "integer"},
		{"mood", true, "app", "mood", "app.mood"},
		{"mood[]", true, "app", "mood", "app.mood[]"},
		{"app.mood[]", true, "app", "mood", "app.mood[]"},
		{`"Weird"`, true, `"My Schema"`, `"Weird"`, `"My Schema"."Weird"`},
		{"geometry(Point,4326)", true, "public", "geometry", "public.geometry(Point,4326)"},
		{"mood2", true, "app", "mood", "mood2"}, // not a prefix at a name boundary: left alone
		{"information_schema.cardinal_number", true, "information_schema", "cardinal_number", "information_schema.cardinal_number"},
	} {
		if got := qualifiedTypeName(c.formatted, c.user, c.ns, c.name); got != c.want {
			t.Errorf("qualifiedTypeName(%q, %q, %q) = %q, want %q", c.formatted, c.ns, c.name, got, c.want)
		}
	}
}

// Facts newer than the message: the message's "name" is "full_name" in the
// catalog now, and "nick" was added since; "label" is a generated column.
// The columns the message leaves out are listed as Generated, those that are
// not generated without expression; they do not make the definition differ.
func TestCatalogFactsNewerThanMessage(t *testing.T) {
	f := newFakeFacts()
	f.tables["app.users"] = TableFacts{Columns: map[string]ColumnFacts{
		"id":        {TypeName: "integer", TypeOID: 23, Attnum: 1},
		"full_name": {TypeName: "text", TypeOID: 25, Attnum: 2},
		"label":     {TypeName: "text", TypeOID: 25, Attnum: 3, Generated: "('u'::text || id)"},
		"nick":      {TypeName: "text", TypeOID: 25, Attnum: 4},
	}}
	c := NewCatalog(f)
	tbl, _, _, err := c.Apply(context.Background(), usersRelation())
	if err != nil {
		t.Fatal(err)
	}
	want := []GeneratedColumn{{Name: "full_name", TypeName: "text", Attnum: 2}, {Name: "label", TypeName: "text", Expr: "('u'::text || id)", Attnum: 3}, {Name: "nick", TypeName: "text", Attnum: 4}}
	if !slices.Equal(tbl.Generated, want) {
		t.Errorf("Generated = %+v, want %+v", tbl.Generated, want)
	}
	other := *tbl
	other.Generated = want[1:2]
	if !SameDefinition(tbl, &other) {
		t.Error("entries without an expression make definitions differ")
	}
}
