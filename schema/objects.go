package schema

import (
	"cmp"
	"slices"
	"strings"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// ObjectKind names a kind of schema object that goes with the replicated
// tables: what the application needs on the target besides the tables and
// their rows (pgrelay creates those, with their keys and indexes, itself).
type ObjectKind string

// The kinds, in the order a target creates them (ObjectOrder).
const (
	KindExtension   ObjectKind = "extension"
	KindSchema      ObjectKind = "schema"
	KindType        ObjectKind = "type"
	KindFunction    ObjectKind = "function" // also procedures
	KindAggregate   ObjectKind = "aggregate"
	KindSequence    ObjectKind = "sequence"
	KindPartitioned ObjectKind = "partitioned table" // a partitioned table the publication does not publish as a table
	KindPartition   ObjectKind = "partition"         // a partition created in or attached to its partitioned table
	KindConstraint  ObjectKind = "constraint"        // primary key, unique or exclusion constraint of a partitioned table
	KindDefault     ObjectKind = "default"
	KindCheck       ObjectKind = "check constraint"
	KindView        ObjectKind = "view"
	KindMatView     ObjectKind = "materialized view"
	KindIndex       ObjectKind = "index" // of a partitioned table or a materialized view
	KindForeignKey  ObjectKind = "foreign key"
	KindTrigger     ObjectKind = "trigger"
	KindStatistics  ObjectKind = "statistics"
	KindComment     ObjectKind = "comment"
	KindGrant       ObjectKind = "grant"
	// Never carried, listed so that nothing is left out in silence.
	KindPolicy      ObjectKind = "policy"
	KindRule        ObjectKind = "rule"
	KindInheritance ObjectKind = "inheritance"
	// Kinds read only to be listed (readUnsupported), named as
	// pg_identify_object names them.
	KindOperator           ObjectKind = "operator"
	KindOperatorClass      ObjectKind = "operator class"
	KindOperatorFamily     ObjectKind = "operator family"
	KindCast               ObjectKind = "cast"
	KindCollation          ObjectKind = "collation"
	KindConversion         ObjectKind = "conversion"
	KindTextSearchConfig   ObjectKind = "text search configuration"
	KindTextSearchDict     ObjectKind = "text search dictionary"
	KindTextSearchParser   ObjectKind = "text search parser"
	KindTextSearchTemplate ObjectKind = "text search template"
)

// kindOrder ranks the kinds for creation: what an object may need comes
// first. Views and materialized views share a rank (one may read the other).
var kindOrder = map[ObjectKind]int{
	KindExtension: 0, KindSchema: 1, KindType: 2, KindFunction: 3, KindAggregate: 4,
	KindSequence: 5, KindPartitioned: 6, KindPartition: 7, KindConstraint: 8,
	KindDefault: 9, KindCheck: 10, KindView: 11, KindMatView: 11, KindIndex: 12,
	KindForeignKey: 13, KindTrigger: 14, KindStatistics: 15, KindComment: 16, KindGrant: 17,
	KindPolicy: 18, KindRule: 18, KindInheritance: 18,
	KindOperator: 18, KindOperatorClass: 18, KindOperatorFamily: 18, KindCast: 18, KindCollation: 18, KindConversion: 18,
	KindTextSearchConfig: 18, KindTextSearchDict: 18, KindTextSearchParser: 18, KindTextSearchTemplate: 18,
}

// Phase says when an object is created on the target.
type Phase byte

const (
	// PreData objects come before the snapshot copy: extensions, schemas,
	// types, functions, sequences, and partitioned tables published through
	// their root (the copy loads into them).
	PreData Phase = 1
	// PostData objects come after the copy and the catch-up, where they do
	// not get in the way of loading and applying: partitioned parents of
	// partitions published on their own, defaults, constraints, foreign
	// keys, views, triggers, comments, grants.
	PostData Phase = 2
)

func (p Phase) String() string {
	switch p {
	case PreData:
		return "pre-data"
	case PostData:
		return "post-data"
	}
	return "unknown phase"
}

// Object is one schema object of the source that goes with the replicated
// tables, as read from the source catalog (ReadObjects): its PostgreSQL
// definition as the server itself prints it (pg_get_functiondef,
// pg_get_viewdef, pg_get_constraintdef, …) and, where another kind of target
// builds its own, the facts (ForeignKey). A PostgreSQL target runs Create; a
// target of another kind decides from Kind and the facts what it can carry.
type Object struct {
	Kind ObjectKind
	// Name names the object for people, unique within its kind:
	// "public.film_in_stock(integer, integer)", "public.customer.store_id"
	// (a default), "fk_address on public.customer" (a constraint or a
	// trigger), "public.payment_p2022_01 of public.payment" (a partition).
	Name  string
	Phase Phase
	// Schema is the schema the object lives in, which the target must have
	// first; "" for objects of no schema (extensions, schemas, comments).
	Schema string
	// Table is the table the object is on or belongs to (constraints,
	// defaults, triggers, indexes, partitions, comments of columns); zero
	// otherwise.
	Table QualifiedName
	// Create are the statements that create the object on a PostgreSQL
	// target, in order, in one transaction.
	Create []string
	// Present is a query for a PostgreSQL target that returns true when
	// the object is there already, or fails when it is not; "" when
	// Create is idempotent and runs every time (comments, grants).
	Present string
	// Needs are the Keys of objects this one needs, as far as the source's
	// dependencies tell: when one of them is left out, so is this one.
	Needs []string
	// LeftOut, when not "", says why the object is not carried (it reads
	// a table the publication does not publish, it needs a C library, …).
	LeftOut string
	// Note is said of the object in the report once it is created (a
	// trigger created disabled, and the command that enables it).
	Note string
	// Incomplete marks an object created disabled or otherwise not yet as
	// on the source (see Note): the target is not ready to switch to.
	Incomplete bool
	// Refresh is the statement that fills a materialized view the source
	// holds populated, run on a PostgreSQL target at the end of each
	// migration; "" otherwise.
	Refresh string
	// ForeignKey holds a foreign key's facts.
	ForeignKey *ForeignKey
	// OID is the source object's OID, for a stable order.
	OID uint32
}

// Key identifies the object among all kinds: its kind and name.
func (o *Object) Key() string { return string(o.Kind) + " " + o.Name }

// ForeignKey is a foreign key's definition as facts.
type ForeignKey struct {
	Name       string
	Table      QualifiedName
	Columns    []string
	RefTable   QualifiedName
	RefColumns []string
	// OnUpdate and OnDelete are the actions: NO ACTION, RESTRICT, CASCADE,
	// SET NULL, SET DEFAULT.
	OnUpdate, OnDelete string
	// Match is SIMPLE, FULL or PARTIAL.
	Match                         string
	Deferrable, InitiallyDeferred bool
	// Validated is false for a constraint added NOT VALID and not
	// validated since: older rows may break it.
	Validated bool
}

// ObjectOrder sorts objs into the order to create them: by kind
// (kindOrder), then each object after those of its kind it Needs, then by
// source OID. An object whose needs form a cycle keeps its OID order.
func ObjectOrder(objs []*Object) {
	slices.SortStableFunc(objs, func(a, b *Object) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.OID, b.OID), strings.Compare(a.Name, b.Name))
	})
	// Within a rank, a depth-first walk puts each object after what it needs.
	for start := 0; start < len(objs); {
		end := start
		for end < len(objs) && kindOrder[objs[end].Kind] == kindOrder[objs[start].Kind] {
			end++
		}
		group := objs[start:end]
		byKey := make(map[string]*Object, len(group))
		for _, o := range group {
			byKey[o.Key()] = o
		}
		placed := make(map[*Object]bool, len(group))
		visiting := map[*Object]bool{}
		ordered := make([]*Object, 0, len(group))
		var visit func(o *Object)
		visit = func(o *Object) {
			if placed[o] || visiting[o] {
				return
			}
			visiting[o] = true
			for _, k := range o.Needs {
				if dep, ok := byKey[k]; ok {
					visit(dep)
				}
			}
			visiting[o] = false
			placed[o] = true
			ordered = append(ordered, o)
		}
		for _, o := range group {
			visit(o)
		}
		copy(group, ordered)
		start = end
	}
}

// LeftOutNeeds marks every object of objs that needs (directly or through
// others) an object left out, or one listed in gone (keys of objects a
// target could not create), as left out too, naming what it needs. It
// returns the objects it marked.
func LeftOutNeeds(objs []*Object, gone map[string]bool) []*Object {
	byKey := make(map[string]*Object, len(objs))
	for _, o := range objs {
		byKey[o.Key()] = o
	}
	var marked []*Object
	for changed := true; changed; {
		changed = false
		for _, o := range objs {
			if o.LeftOut != "" {
				continue
			}
			for _, k := range o.Needs {
				dep := byKey[k]
				if gone[k] || dep != nil && dep.LeftOut != "" {
					o.LeftOut = "needs " + k + ", which is left out"
					marked = append(marked, o)
					changed = true
					break
				}
			}
		}
	}
	return marked
}

// displayIdent is an identifier as quote_ident would print it, quoted only
// when it is not a plain lower-case one (keywords aside): for names in
// reports, not for SQL.
func displayIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// sqlTextArray is a text[] literal of items for a PostgreSQL target.
func sqlTextArray(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = pgquote.Literal(s)
	}
	return "ARRAY[" + strings.Join(quoted, ", ") + "]::pg_catalog.text[]"
}

// presentByAddress is Object.Present for an object the source names by
// pg_identify_object_as_address: pg_get_object_address fails on the target
// when no such object exists.
func presentByAddress(typ string, names, args []string) string {
	return "SELECT true FROM pg_catalog.pg_get_object_address(" + pgquote.Literal(typ) + ", " +
		sqlTextArray(names) + ", " + sqlTextArray(args) + ")"
}

// presentComment is Object.Present of a comment: the object described by
// the address has that description on the target.
func presentComment(typ string, names, args []string, description string) string {
	return "SELECT EXISTS (SELECT FROM pg_catalog.pg_description d, pg_catalog.pg_get_object_address(" +
		pgquote.Literal(typ) + ", " + sqlTextArray(names) + ", " + sqlTextArray(args) + ") a" +
		" WHERE d.classoid = a.classid AND d.objoid = a.objid AND d.objsubid = a.objsubid AND d.description = " +
		pgquote.Literal(description) + ")"
}

// commentTarget is what COMMENT ON takes for an object pg_identify_object
// describes as typ with identity; "" for kinds not carried.
func commentTarget(typ, identity string) string {
	switch typ {
	case "table", "view", "materialized view", "sequence", "index", "type", "domain", "function",
		"procedure", "aggregate", "schema", "extension", "trigger":
		return strings.ToUpper(typ) + " " + identity
	case "composite type":
		return "TYPE " + identity
	case "table column":
		return "COLUMN " + identity
	case "table constraint":
		return "CONSTRAINT " + identity // "name on schema.table"
	case "statistics object":
		return "STATISTICS " + identity
	}
	return ""
}
