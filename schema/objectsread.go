package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// ObjectOptions say what ReadObjects reads.
type ObjectOptions struct {
	Publication string
	// Grants reads the privileges granted on the objects and the
	// published tables, as GRANT statements (off: none).
	Grants bool
	// Skip are schemas whose objects are never read (pgrelay's metadata
	// schema on a source that is also a target).
	Skip []string
	// LockWait bounds each wait for a lock the reading needs (a definition
	// being changed, a prepared transaction that altered a table). 0: 30 s.
	LockWait time.Duration
}

// MinObjectsMajor is the oldest source major ReadObjects reads: the
// partition functions (pg_partition_tree), pg_proc.prokind and
// pg_trigger.tgparentid it relies on came with PostgreSQL 13.
const MinObjectsMajor = 13

// SourceObjects are the schema objects that go with a publication's tables.
type SourceObjects struct {
	// Tables are the published tables.
	Tables []QualifiedName
	// Schemas are the schemas whose functions, types, sequences and views
	// are carried: those of the published tables and of their partitioned
	// tables. Objects of other schemas come when a carried object needs them.
	Schemas []string
	// Objects are in the order to create them (ObjectOrder).
	Objects []*Object
}

// ReadObjects reads from the source, in one read-only transaction of conn,
// the schema objects that go with the tables publication publishes: what
// the application needs besides the tables' rows, keys and indexes (which
// pgrelay carries on its own). Definitions come from the server's own
// pg_get_*def functions (an aggregate's is assembled from pg_aggregate), with
// an empty search_path, so every name in them is schema-qualified. Objects
// that cannot be carried (a view reading a table the publication does not
// publish, a function in C, a row-level security policy) come with LeftOut
// saying why. conn's server must be MinObjectsMajor or newer.
func ReadObjects(ctx context.Context, conn *pgx.Conn, opts ObjectOptions) (*SourceObjects, error) {
	wait := opts.LockWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	var out *SourceObjects
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT pg_catalog.set_config('search_path', '', true), pg_catalog.set_config('lock_timeout', '%dms', true)`, wait.Milliseconds())); err != nil {
			return err
		}
		var version int
		var v string
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.current_setting('server_version_num')`).Scan(&v); err != nil {
			return err
		}
		version, _ = strconv.Atoi(v)
		if version/10000 < MinObjectsMajor {
			return fmt.Errorf("%w: reading the schema needs PostgreSQL %d or newer, the source is %d", ErrObjectsTooOld, MinObjectsMajor, version/10000)
		}
		r := &objectReader{tx: tx, version: version, opts: opts, skip: append([]string{"pg_catalog", "information_schema", "pg_toast"}, opts.Skip...)}
		var err error
		out, err = r.read(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("schema: read the objects of publication %q: %w", opts.Publication, err)
	}
	return out, nil
}

// objectReader holds what ReadObjects has read so far.
type objectReader struct {
	tx      pgx.Tx
	version int
	opts    ObjectOptions
	skip    []string

	published map[uint32]QualifiedName
	// tables are the relations the target has or gets: the published
	// tables and the partitioned tables and partitions carried with them.
	tables map[uint32]QualifiedName
	// ours are the tables among them that the objects create (not pgrelay's
	// table copy), and their phase.
	ours    map[uint32]Phase
	schemas []string
	objs    []*Object
	// keys are the object keys of source objects by catalog and OID, for
	// Needs: "pg_class" (views, partitioned tables, sequences), "pg_proc",
	// "pg_type".
	keys map[catalogRef]string
}

// catalogRef is a source object by catalog (pg_class, pg_proc, …) and OID.
type catalogRef struct {
	catalog string
	oid     uint32
}

func (r *objectReader) add(o *Object) { r.objs = append(r.objs, o) }

func (r *objectReader) skipped(nsp string) bool {
	return slices.Contains(r.skip, nsp) || strings.HasPrefix(nsp, "pg_temp") || strings.HasPrefix(nsp, "pg_toast")
}

func qname(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }

// display is schema.name as status and the report print it, each part
// quoted where SQL needs it.
func (q QualifiedName) display() string { return displayIdent(q.Schema) + "." + displayIdent(q.Name) }

func (r *objectReader) read(ctx context.Context) (*SourceObjects, error) {
	r.published, r.tables, r.ours, r.keys = map[uint32]QualifiedName{}, map[uint32]QualifiedName{}, map[uint32]Phase{}, map[catalogRef]string{}
	out := &SourceObjects{}
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"the published tables", r.readPublished},
		{"the partitioned tables", r.readPartitions},
		{"the extensions", r.readExtensions},
	}
	for _, s := range steps {
		if err := s.fn(ctx); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.what, err)
		}
	}
	for _, t := range r.published {
		out.Tables = append(out.Tables, t)
	}
	slices.SortFunc(out.Tables, func(a, b QualifiedName) int { return strings.Compare(a.display(), b.display()) })
	for _, t := range r.tables {
		if !slices.Contains(r.schemas, t.Schema) && !r.skipped(t.Schema) {
			r.schemas = append(r.schemas, t.Schema)
		}
	}
	slices.Sort(r.schemas)
	views, err := r.readViewGraph(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the views: %w", err)
	}
	procs, types, err := r.closure(ctx, views)
	if err != nil {
		return nil, fmt.Errorf("read what the objects need: %w", err)
	}
	more := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"the types", func(ctx context.Context) error { return r.readTypes(ctx, types) }},
		{"the functions", func(ctx context.Context) error { return r.readFunctions(ctx, procs) }},
		{"the sequences", r.readSequences},
		{"the views", func(ctx context.Context) error { return r.readViews(ctx, views) }},
		{"the columns' defaults", r.readDefaults},
		{"the constraints", r.readConstraints},
		{"the indexes", func(ctx context.Context) error { return r.readIndexes(ctx, views) }},
		{"the triggers", func(ctx context.Context) error { return r.readTriggers(ctx, views) }},
		{"the statistics objects", r.readStatistics},
		{"the policies and rules", r.readPoliciesAndRules},
		{"the operators, casts, collations and text search objects", func(ctx context.Context) error { return r.readUnsupported(ctx, procs, types) }},
		{"the dependencies", func(ctx context.Context) error { return r.readNeeds(ctx, views) }},
		{"the comments", func(ctx context.Context) error { return r.readComments(ctx, views, procs, types) }},
	}
	if r.opts.Grants {
		more = append(more, struct {
			what string
			fn   func(context.Context) error
		}{"the privileges", func(ctx context.Context) error { return r.readGrants(ctx, views, procs, types) }})
	}
	for _, s := range more {
		if err := s.fn(ctx); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.what, err)
		}
	}
	// The schemas of everything carried, first.
	have := map[string]bool{}
	for _, o := range r.objs {
		for _, s := range []string{o.Schema, o.Table.Schema} {
			if s != "" && !have[s] && !r.skipped(s) {
				have[s] = true
				r.add(&Object{Kind: KindSchema, Name: displayIdent(s), Phase: PreData, Create: []string{"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{s}.Sanitize()},
					Present: presentByAddress("schema", []string{s}, nil)})
			}
		}
	}
	LeftOutNeeds(r.objs, nil)
	ObjectOrder(r.objs)
	out.Schemas, out.Objects = r.schemas, r.objs
	return out, nil
}

// readPublished reads the published tables.
func (r *objectReader) readPublished(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `SELECT c.oid, n.nspname::pg_catalog.text, c.relname::pg_catalog.text
		FROM pg_catalog.pg_publication_tables pt
		JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
		JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
		WHERE pt.pubname = $1`, r.opts.Publication)
	if err != nil {
		return err
	}
	var oid uint32
	var t QualifiedName
	_, err = pgx.ForEachRow(rows, []any{&oid, &t.Schema, &t.Name}, func() error {
		r.published[oid], r.tables[oid] = t, t
		return nil
	})
	return err
}

// treeNode is one table of a partition tree.
type treeNode struct {
	oid, parent uint32
	name        QualifiedName
	kind        string // relkind
	keyDef      string // PARTITION BY's argument, of a partitioned table
	bound       string // "FOR VALUES …" or "DEFAULT", of a partition
}

// readPartitions reads the partition trees of the published tables. A
// partitioned table published through its root is created with its whole
// tree before the copy (the copy loads into it); a partition published on
// its own gets its partitioned tables after the copy, and is attached to
// them. Partitions of those trees the publication does not publish are left
// out: the partitioned table lacks their rows.
func (r *objectReader) readPartitions(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
WITH pub AS (SELECT pg_catalog.unnest($1::pg_catalog.oid[]) AS oid),
roots AS (
	SELECT DISTINCT coalesce((SELECT a.relid FROM pg_catalog.pg_partition_ancestors(c.oid) AS a(relid)
		JOIN pg_catalog.pg_class ac ON ac.oid = a.relid WHERE NOT ac.relispartition), c.oid)::pg_catalog.oid AS root
	FROM pub JOIN pg_catalog.pg_class c ON c.oid = pub.oid
	WHERE c.relispartition OR c.relkind = 'p'
)
SELECT r.root, t.relid::pg_catalog.oid, coalesce(t.parentrelid::pg_catalog.oid, 0), c.relkind::pg_catalog.text,
	n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	CASE WHEN c.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(c.oid) ELSE '' END,
	CASE WHEN c.relispartition AND t.parentrelid IS NOT NULL THEN pg_catalog.pg_get_expr(c.relpartbound, 0) ELSE '' END
FROM roots r CROSS JOIN LATERAL pg_catalog.pg_partition_tree(r.root) t
JOIN pg_catalog.pg_class c ON c.oid = t.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
ORDER BY r.root, t.level, c.oid`, mapKeys(r.published))
	if err != nil {
		return err
	}
	trees := map[uint32][]treeNode{}
	var roots []uint32
	var root uint32
	var nd treeNode
	_, err = pgx.ForEachRow(rows, []any{&root, &nd.oid, &nd.parent, &nd.kind, &nd.name.Schema, &nd.name.Name, &nd.keyDef, &nd.bound}, func() error {
		if _, ok := trees[root]; !ok {
			roots = append(roots, root)
		}
		trees[root] = append(trees[root], nd)
		return nil
	})
	if err != nil {
		return err
	}
	var standalone []uint32 // partitioned tables created with their columns
	for _, root := range roots {
		nodes := trees[root]
		byOID := map[uint32]*treeNode{}
		for i := range nodes {
			byOID[nodes[i].oid] = &nodes[i]
		}
		// Published through the root: the whole tree before the copy.
		if _, viaRoot := r.published[root]; viaRoot {
			for _, n := range nodes {
				r.tables[n.oid] = n.name
				r.ours[n.oid] = PreData
				if n.oid == root {
					standalone = append(standalone, n.oid)
					continue
				}
				parent := byOID[n.parent].name
				create := "CREATE TABLE " + qname(n.name.Schema, n.name.Name) + " PARTITION OF " + qname(parent.Schema, parent.Name) + " " + n.bound
				kind := KindPartition
				if n.kind == "p" {
					create += " PARTITION BY " + n.keyDef
					kind = KindPartitioned
				}
				o := &Object{Kind: kind, Name: n.name.display(), Phase: PreData, Schema: n.name.Schema, Create: []string{create}, OID: n.oid,
					Present: presentRelation(n.name), Needs: []string{string(KindPartitioned) + " " + parent.display()}}
				if n.kind == "f" {
					o.LeftOut = "a foreign table: pgrelay does not create foreign tables"
				}
				r.add(o)
				r.keys[catalogRef{"pg_class", n.oid}] = o.Key()
			}
			continue
		}
		// Partitions published on their own: their partitioned tables
		// after the copy, each partition attached.
		needed := map[uint32]bool{}
		for _, n := range nodes {
			if _, ok := r.published[n.oid]; !ok {
				continue
			}
			for p := n.parent; p != 0; p = byOID[p].parent {
				needed[p] = true
			}
		}
		for _, n := range nodes {
			_, published := r.published[n.oid]
			switch {
			case published:
				if n.parent == 0 {
					continue // a partitioned table published as a table: not this tree's
				}
				parent := byOID[n.parent].name
				o := &Object{Kind: KindPartition, Name: n.name.display() + " of " + parent.display(), Phase: PostData, Table: n.name, OID: n.oid,
					Create:  []string{"ALTER TABLE " + qname(parent.Schema, parent.Name) + " ATTACH PARTITION " + qname(n.name.Schema, n.name.Name) + " " + n.bound},
					Present: presentAttached(n.name, parent),
					Needs:   []string{string(KindPartitioned) + " " + parent.display()}}
				r.add(o)
			case needed[n.oid]:
				r.tables[n.oid] = n.name
				r.ours[n.oid] = PostData
				if n.parent == 0 {
					standalone = append(standalone, n.oid)
					continue
				}
				parent := byOID[n.parent].name
				o := &Object{Kind: KindPartitioned, Name: n.name.display(), Phase: PostData, Schema: n.name.Schema, OID: n.oid, Present: presentRelation(n.name),
					Create: []string{"CREATE TABLE " + qname(n.name.Schema, n.name.Name) + " PARTITION OF " + qname(parent.Schema, parent.Name) + " " + n.bound + " PARTITION BY " + n.keyDef},
					Needs:  []string{string(KindPartitioned) + " " + parent.display()}}
				r.add(o)
				r.keys[catalogRef{"pg_class", n.oid}] = o.Key()
			default:
				parent := byOID[n.parent]
				if n.parent == 0 || !needed[parent.oid] {
					continue
				}
				what := "partition"
				if n.kind == "p" {
					what = "partitioned table"
				}
				r.add(&Object{Kind: KindPartition, Name: n.name.display() + " of " + parent.name.display(), Phase: PostData, Table: n.name, OID: n.oid,
					LeftOut: "the publication does not publish this " + what + ": queries on " + parent.name.display() + " on the target miss its rows"})
			}
		}
	}
	return r.createStandalone(ctx, standalone)
}

// createStandalone gives the partitioned tables of oids (roots of their
// trees) their CREATE TABLE with the source's columns.
func (r *objectReader) createStandalone(ctx context.Context, oids []uint32) error {
	if len(oids) == 0 {
		return nil
	}
	rows, err := r.tx.Query(ctx, `
SELECT c.oid, pg_catalog.pg_get_partkeydef(c.oid),
	coalesce(pg_catalog.array_agg(pg_catalog.quote_ident(a.attname) || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
		|| coalesce((SELECT ' COLLATE ' || pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname)
			FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
			WHERE co.oid = a.attcollation AND a.attcollation <> t.typcollation), '')
		|| CASE WHEN a.attgenerated = 's' THEN ' GENERATED ALWAYS AS (' || pg_catalog.pg_get_expr(d.adbin, d.adrelid) || ') STORED' ELSE '' END
		|| CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
		ORDER BY a.attnum) FILTER (WHERE a.attnum IS NOT NULL), '{}')
FROM pg_catalog.pg_class c
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.oid = ANY ($1::pg_catalog.oid[])
GROUP BY c.oid`, oids)
	if err != nil {
		return err
	}
	var oid uint32
	var keyDef string
	var cols []string
	_, err = pgx.ForEachRow(rows, []any{&oid, &keyDef, &cols}, func() error {
		t := r.tables[oid]
		o := &Object{Kind: KindPartitioned, Name: t.display(), Phase: r.ours[oid], Schema: t.Schema, OID: oid, Present: presentRelation(t),
			Create: []string{"CREATE TABLE " + qname(t.Schema, t.Name) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) PARTITION BY " + keyDef}}
		r.add(o)
		r.keys[catalogRef{"pg_class", oid}] = o.Key()
		return nil
	})
	return err
}

// presentRelation is Object.Present of a table: the target has a relation
// of that name.
func presentRelation(t QualifiedName) string {
	return "SELECT pg_catalog.to_regclass(" + pgquote.Literal(qname(t.Schema, t.Name)) + ") IS NOT NULL"
}

// presentAttached is Object.Present of partition attached to parent.
func presentAttached(partition, parent QualifiedName) string {
	return "SELECT EXISTS (SELECT FROM pg_catalog.pg_inherits WHERE inhrelid = pg_catalog.to_regclass(" + pgquote.Literal(qname(partition.Schema, partition.Name)) +
		") AND inhparent = pg_catalog.to_regclass(" + pgquote.Literal(qname(parent.Schema, parent.Name)) + "))"
}

// readExtensions lists the source database's extensions: the target gets
// them before anything else, as the application may use any of them.
func (r *objectReader) readExtensions(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `SELECT e.oid, e.extname::pg_catalog.text, n.nspname::pg_catalog.text
		FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname <> 'plpgsql' ORDER BY e.oid`)
	if err != nil {
		return err
	}
	var oid uint32
	var name, nsp string
	_, err = pgx.ForEachRow(rows, []any{&oid, &name, &nsp}, func() error {
		create := []string{"CREATE EXTENSION IF NOT EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH SCHEMA " + pgx.Identifier{nsp}.Sanitize()}
		if nsp != "pg_catalog" {
			create = append([]string{"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{nsp}.Sanitize()}, create...)
		}
		r.add(&Object{Kind: KindExtension, Name: name, Phase: PreData, OID: oid, Create: create,
			Present: presentByAddress("extension", []string{name}, nil)})
		return nil
	})
	return err
}

// viewNode is a view or materialized view of the source and the relations
// it reads.
type viewNode struct {
	oid     uint32
	name    QualifiedName
	kind    string // relkind v or m
	reads   []catalogRef
	carried bool
	why     string // why not carried
}

// readViewGraph decides which views and materialized views are carried:
// those of the carried schemas and those reading a carried table or view,
// when everything they read is carried; the others of that kind are left
// out, naming what they read.
func (r *objectReader) readViewGraph(ctx context.Context) (map[uint32]*viewNode, error) {
	rows, err := r.tx.Query(ctx, `
SELECT v.oid, n.nspname::pg_catalog.text, v.relname::pg_catalog.text, v.relkind::pg_catalog.text,
	coalesce(pg_catalog.array_agg(d.refobjid ORDER BY d.refobjid) FILTER (WHERE d.refobjid IS NOT NULL), '{}'),
	coalesce(pg_catalog.array_agg(pg_catalog.quote_ident(rn.nspname) || '.' || pg_catalog.quote_ident(rc.relname) ORDER BY d.refobjid) FILTER (WHERE d.refobjid IS NOT NULL), '{}')
FROM pg_catalog.pg_class v
JOIN pg_catalog.pg_namespace n ON n.oid = v.relnamespace
JOIN pg_catalog.pg_rewrite rw ON rw.ev_class = v.oid AND rw.rulename = '_RETURN'
LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = rw.oid
	AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid <> v.oid
LEFT JOIN pg_catalog.pg_class rc ON rc.oid = d.refobjid
LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
WHERE v.relkind IN ('v', 'm') AND NOT (n.nspname = ANY ($1::pg_catalog.text[])) AND n.nspname !~ '^pg_'
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND e.objid = v.oid AND e.deptype = 'e')
GROUP BY v.oid, n.nspname, v.relname, v.relkind`, r.skip)
	if err != nil {
		return nil, err
	}
	views := map[uint32]*viewNode{}
	readNames := map[uint32]string{}
	var v viewNode
	var refs []uint32
	var refNames []string
	_, err = pgx.ForEachRow(rows, []any{&v.oid, &v.name.Schema, &v.name.Name, &v.kind, &refs, &refNames}, func() error {
		node := v
		node.reads = nil
		for i, ref := range refs {
			node.reads = append(node.reads, catalogRef{"pg_class", ref})
			if i < len(refNames) {
				readNames[ref] = refNames[i]
			}
		}
		views[v.oid] = &node
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Sequences a view may call: those of the carried schemas.
	var seqs []uint32
	if err := r.tx.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(c.oid), '{}') FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'S' AND n.nspname = ANY ($1::pg_catalog.text[])`, r.schemas).Scan(&seqs); err != nil {
		return nil, err
	}
	seqOK := func(oid uint32) bool { return slices.Contains(seqs, oid) }
	// Relevant: in a carried schema, or reading a carried table or a
	// relevant view. Carried: relevant, and all it reads is there.
	relevant := map[uint32]bool{}
	for changed := true; changed; {
		changed = false
		for _, v := range views {
			if relevant[v.oid] {
				continue
			}
			rel := slices.Contains(r.schemas, v.name.Schema)
			for _, ref := range v.reads {
				if _, ok := r.tables[ref.oid]; ok || relevant[ref.oid] {
					rel = true
				}
			}
			if rel {
				relevant[v.oid], changed = true, true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, v := range views {
			if !relevant[v.oid] || v.carried || v.why != "" {
				continue
			}
			ok, pending := true, false
			for _, ref := range v.reads {
				if _, isTable := r.tables[ref.oid]; isTable || seqOK(ref.oid) {
					continue
				}
				if dep, isView := views[ref.oid]; isView && relevant[ref.oid] {
					if dep.why != "" {
						ok = false
						v.why = "reads " + dep.name.display() + ", which is left out"
						break
					}
					if !dep.carried {
						pending = true
					}
					continue
				}
				ok = false
				v.why = "reads " + readNames[ref.oid] + ", which the publication does not publish"
				break
			}
			if ok && !pending {
				v.carried, changed = true, true
			} else if !ok {
				changed = true
			}
		}
	}
	for oid, v := range views {
		if !relevant[oid] {
			delete(views, oid)
			continue
		}
		if !v.carried && v.why == "" {
			v.why = "reads views that read each other in a cycle"
		}
	}
	return views, nil
}

// closure returns the functions and types to carry: those of the carried
// schemas, and those anything carried needs (a trigger's function, a view's
// or a default's, a domain's base type …) wherever they are, but never an
// extension's (the extension brings it).
func (r *objectReader) closure(ctx context.Context, views map[uint32]*viewNode) (procs, types []uint32, err error) {
	if err := r.tx.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(p.oid), '{}') FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = ANY ($1::pg_catalog.text[]) AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e
			WHERE e.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND e.objid = p.oid AND e.deptype = 'e')`, r.schemas).Scan(&procs); err != nil {
		return nil, nil, err
	}
	if err := r.tx.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(t.oid), '{}') FROM pg_catalog.pg_type t
		JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
		LEFT JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
		WHERE n.nspname = ANY ($1::pg_catalog.text[]) AND t.typtype IN ('b', 'c', 'd', 'e', 'r')
			AND (t.typrelid = 0 OR c.relkind = 'c')
			AND NOT EXISTS (SELECT FROM pg_catalog.pg_type e WHERE e.typarray = t.oid)
			AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e
				WHERE e.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND e.objid = t.oid AND e.deptype = 'e')`, r.schemas).Scan(&types); err != nil {
		return nil, nil, err
	}
	var carriedViews []uint32
	for oid, v := range views {
		if v.carried {
			carriedViews = append(carriedViews, oid)
		}
	}
	tables := mapKeys(r.tables)
	newProcs, newTypes := procs, types
	for round := 0; round < 20; round++ {
		var addProcs, addTypes []uint32
		rows, err := r.tx.Query(ctx, `
WITH owners(classid, objid) AS (
	SELECT 'pg_catalog.pg_attrdef'::pg_catalog.regclass::pg_catalog.oid, ad.oid FROM pg_catalog.pg_attrdef ad WHERE ad.adrelid = ANY ($1::pg_catalog.oid[]) AND $5
	UNION ALL SELECT 'pg_catalog.pg_constraint'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_constraint c WHERE c.conrelid = ANY ($1::pg_catalog.oid[]) AND $5
	UNION ALL SELECT 'pg_catalog.pg_trigger'::pg_catalog.regclass, g.oid FROM pg_catalog.pg_trigger g
		WHERE (g.tgrelid = ANY ($1::pg_catalog.oid[]) OR g.tgrelid = ANY ($2::pg_catalog.oid[])) AND NOT g.tgisinternal AND $5
	UNION ALL SELECT 'pg_catalog.pg_rewrite'::pg_catalog.regclass, w.oid FROM pg_catalog.pg_rewrite w WHERE w.ev_class = ANY ($2::pg_catalog.oid[]) AND $5
	UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, x FROM pg_catalog.unnest($1::pg_catalog.oid[]) x WHERE $5
	UNION ALL SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, x FROM pg_catalog.unnest($3::pg_catalog.oid[]) x
	UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, x FROM pg_catalog.unnest($4::pg_catalog.oid[]) x
	UNION ALL SELECT 'pg_catalog.pg_constraint'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_constraint c WHERE c.contypid = ANY ($4::pg_catalog.oid[])
	UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, t.typrelid FROM pg_catalog.pg_type t WHERE t.oid = ANY ($4::pg_catalog.oid[]) AND t.typrelid <> 0
)
SELECT DISTINCT d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass,
	CASE WHEN d.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass
		THEN coalesce((SELECT e.oid FROM pg_catalog.pg_type e WHERE e.typarray = d.refobjid), d.refobjid) ELSE d.refobjid END
FROM owners o
JOIN pg_catalog.pg_depend d ON d.classid = o.classid AND d.objid = o.objid
WHERE d.deptype = 'n' AND d.refobjid >= 16384
	AND d.refclassid IN ('pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_type'::pg_catalog.regclass)`,
			tables, carriedViews, newProcs, newTypes, round == 0)
		if err != nil {
			return nil, nil, err
		}
		var isProc bool
		var oid uint32
		if _, err := pgx.ForEachRow(rows, []any{&isProc, &oid}, func() error {
			switch {
			case isProc && !slices.Contains(procs, oid) && !slices.Contains(addProcs, oid):
				addProcs = append(addProcs, oid)
			case !isProc && !slices.Contains(types, oid) && !slices.Contains(addTypes, oid):
				addTypes = append(addTypes, oid)
			}
			return nil
		}); err != nil {
			return nil, nil, err
		}
		// Not an extension's, nor a table's row type, nor a system one.
		if len(addProcs) > 0 {
			if err := r.tx.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(p.oid), '{}') FROM pg_catalog.pg_proc p
				JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
				WHERE p.oid = ANY ($1::pg_catalog.oid[]) AND NOT (n.nspname = ANY ($2::pg_catalog.text[])) AND n.nspname !~ '^pg_'
				AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND e.objid = p.oid AND e.deptype = 'e')`,
				addProcs, r.skip).Scan(&addProcs); err != nil {
				return nil, nil, err
			}
		}
		if len(addTypes) > 0 {
			if err := r.tx.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(t.oid), '{}') FROM pg_catalog.pg_type t
				JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
				LEFT JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
				WHERE t.oid = ANY ($1::pg_catalog.oid[]) AND NOT (n.nspname = ANY ($2::pg_catalog.text[])) AND n.nspname !~ '^pg_'
				AND t.typtype IN ('b', 'c', 'd', 'e', 'r') AND (t.typrelid = 0 OR c.relkind = 'c')
				AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND e.objid = t.oid AND e.deptype = 'e')`,
				addTypes, r.skip).Scan(&addTypes); err != nil {
				return nil, nil, err
			}
		}
		if len(addProcs)+len(addTypes) == 0 {
			break
		}
		procs, types = append(procs, addProcs...), append(types, addTypes...)
		newProcs, newTypes = addProcs, addTypes
	}
	return procs, types, nil
}

// readTypes reads the enums, domains, composite and range types of types,
// as PostgresDialect.CreateTypes creates them for a table's columns.
func (r *objectReader) readTypes(ctx context.Context, types []uint32) error {
	if len(types) == 0 {
		return nil
	}
	facts := &SourceFacts{serverVersion: r.version}
	rows, err := r.tx.Query(ctx, `SELECT t.oid, t.typtype::pg_catalog.text, pg_catalog.format_type(t.oid, NULL),
		n.nspname::pg_catalog.text, a.type, a.object_names, a.object_args
		FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace CROSS JOIN LATERAL pg_catalog.pg_identify_object_as_address('pg_catalog.pg_type'::pg_catalog.regclass, t.oid, 0) a
		WHERE t.oid = ANY ($1::pg_catalog.oid[]) ORDER BY t.oid`, types)
	if err != nil {
		return err
	}
	type typeRow struct {
		oid                     uint32
		typtype, name, nsp, typ string
		names, args             []string
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (typeRow, error) {
		var t typeRow
		err := row.Scan(&t.oid, &t.typtype, &t.name, &t.nsp, &t.typ, &t.names, &t.args)
		return t, err
	})
	if err != nil {
		return err
	}
	for _, t := range list {
		o := &Object{Kind: KindType, Name: t.name, Phase: PreData, Schema: t.nsp, OID: t.oid, Present: presentByAddress(t.typ, t.names, t.args)}
		r.keys[catalogRef{"pg_type", t.oid}] = o.Key()
		if t.typtype == "b" {
			o.LeftOut = "a base type made of C functions: create it on the target (its extension or its CREATE TYPE) by hand"
			r.add(o)
			continue
		}
		typ, err := facts.readType(ctx, r.tx, t.oid)
		if err != nil {
			return err
		}
		for _, stmt := range (PostgresDialect{}).CreateTypes(&Table{Types: []*Type{typ}}) {
			if !strings.HasPrefix(stmt, "CREATE SCHEMA ") {
				o.Create = append(o.Create, stmt)
			}
		}
		if typ.Category == CategoryRange {
			o.Create, err = r.rangeType(ctx, t.oid)
			if err != nil {
				return err
			}
		}
		r.add(o)
	}
	return nil
}

// rangeType is the CREATE TYPE of a range type, with its subtype's operator
// class, collation, canonical and difference functions.
func (r *objectReader) rangeType(ctx context.Context, oid uint32) ([]string, error) {
	var stmt string
	err := r.tx.QueryRow(ctx, `SELECT 'CREATE TYPE ' || pg_catalog.format_type(t.oid, NULL) || ' AS RANGE (' || pg_catalog.concat_ws(', ',
		'SUBTYPE = ' || pg_catalog.format_type(g.rngsubtype, NULL),
		CASE WHEN NOT oc.opcdefault THEN 'SUBTYPE_OPCLASS = ' || pg_catalog.quote_ident(ocn.nspname) || '.' || pg_catalog.quote_ident(oc.opcname) END,
		CASE WHEN g.rngcollation <> 0 AND g.rngcollation <> st.typcollation THEN 'COLLATION = ' || pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname) END,
		CASE WHEN g.rngcanonical <> 0 THEN 'CANONICAL = ' || g.rngcanonical::pg_catalog.regproc::pg_catalog.text END,
		CASE WHEN g.rngsubdiff <> 0 THEN 'SUBTYPE_DIFF = ' || g.rngsubdiff::pg_catalog.regproc::pg_catalog.text END) || ')'
		FROM pg_catalog.pg_range g JOIN pg_catalog.pg_type t ON t.oid = g.rngtypid
		JOIN pg_catalog.pg_type st ON st.oid = g.rngsubtype
		JOIN pg_catalog.pg_opclass oc ON oc.oid = g.rngsubopc JOIN pg_catalog.pg_namespace ocn ON ocn.oid = oc.opcnamespace
		LEFT JOIN pg_catalog.pg_collation co ON co.oid = g.rngcollation LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
		WHERE g.rngtypid = $1`, oid).Scan(&stmt)
	if err != nil {
		return nil, err
	}
	return []string{stmt}, nil
}

// readFunctions reads functions, procedures and aggregates: their
// pg_get_functiondef, an aggregate's CREATE AGGREGATE assembled from
// pg_aggregate (there is no pg_get_*def for it). One in C or internal is left
// out: its shared library is the target's to have.
func (r *objectReader) readFunctions(ctx context.Context, procs []uint32) error {
	if len(procs) == 0 {
		return nil
	}
	rows, err := r.tx.Query(ctx, `
SELECT p.oid, p.prokind::pg_catalog.text, l.lanname::pg_catalog.text, p.oid::pg_catalog.regprocedure::pg_catalog.text,
	n.nspname::pg_catalog.text, a.type, a.object_names, a.object_args,
	CASE WHEN p.prokind IN ('f', 'p', 'w') AND l.lanname NOT IN ('c', 'internal') THEN pg_catalog.pg_get_functiondef(p.oid) ELSE '' END,
	CASE WHEN p.prokind = 'a' THEN (
		SELECT 'CREATE AGGREGATE ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname) || '(' ||
			CASE WHEN p.pronargs = 0 THEN '*' ELSE pg_catalog.pg_get_function_arguments(p.oid) END || ') (' ||
			pg_catalog.concat_ws(', ',
				'SFUNC = ' || g.aggtransfn::pg_catalog.regproc::pg_catalog.text,
				'STYPE = ' || pg_catalog.format_type(g.aggtranstype, NULL),
				CASE WHEN g.aggtransspace <> 0 THEN 'SSPACE = ' || g.aggtransspace END,
				CASE WHEN g.aggfinalfn <> 0 THEN 'FINALFUNC = ' || g.aggfinalfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggfinalextra THEN 'FINALFUNC_EXTRA' END,
				CASE WHEN g.aggfinalfn <> 0 THEN 'FINALFUNC_MODIFY = ' || CASE g.aggfinalmodify WHEN 'r' THEN 'READ_ONLY' WHEN 's' THEN 'SHAREABLE' ELSE 'READ_WRITE' END END,
				CASE WHEN g.aggcombinefn <> 0 THEN 'COMBINEFUNC = ' || g.aggcombinefn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggserialfn <> 0 THEN 'SERIALFUNC = ' || g.aggserialfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggdeserialfn <> 0 THEN 'DESERIALFUNC = ' || g.aggdeserialfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.agginitval IS NOT NULL THEN 'INITCOND = ' || pg_catalog.quote_literal(g.agginitval) END,
				CASE WHEN g.aggmtransfn <> 0 THEN 'MSFUNC = ' || g.aggmtransfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggminvtransfn <> 0 THEN 'MINVFUNC = ' || g.aggminvtransfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggmtransfn <> 0 THEN 'MSTYPE = ' || pg_catalog.format_type(g.aggmtranstype, NULL) END,
				CASE WHEN g.aggmtransspace <> 0 THEN 'MSSPACE = ' || g.aggmtransspace END,
				CASE WHEN g.aggmfinalfn <> 0 THEN 'MFINALFUNC = ' || g.aggmfinalfn::pg_catalog.regproc::pg_catalog.text END,
				CASE WHEN g.aggmfinalextra THEN 'MFINALFUNC_EXTRA' END,
				CASE WHEN g.aggmfinalfn <> 0 THEN 'MFINALFUNC_MODIFY = ' || CASE g.aggmfinalmodify WHEN 'r' THEN 'READ_ONLY' WHEN 's' THEN 'SHAREABLE' ELSE 'READ_WRITE' END END,
				CASE WHEN g.aggminitval IS NOT NULL THEN 'MINITCOND = ' || pg_catalog.quote_literal(g.aggminitval) END,
				CASE WHEN g.aggsortop <> 0 THEN 'SORTOP = OPERATOR(' || pg_catalog.quote_ident(opn.nspname) || '.' || op.oprname || ')' END,
				CASE WHEN g.aggkind = 'h' THEN 'HYPOTHETICAL' END,
				'PARALLEL = ' || CASE p.proparallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END) || ')'
		FROM pg_catalog.pg_aggregate g
		LEFT JOIN pg_catalog.pg_operator op ON op.oid = g.aggsortop
		LEFT JOIN pg_catalog.pg_namespace opn ON opn.oid = op.oprnamespace
		WHERE g.aggfnoid = p.oid) ELSE '' END
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
CROSS JOIN LATERAL pg_catalog.pg_identify_object_as_address('pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, 0) a
WHERE p.oid = ANY ($1::pg_catalog.oid[])
ORDER BY p.oid`, procs)
	if err != nil {
		return err
	}
	var (
		oid                        uint32
		kind, lang, name, nsp, typ string
		names, args                []string
		functionDef, aggregateDef  string
	)
	_, err = pgx.ForEachRow(rows, []any{&oid, &kind, &lang, &name, &nsp, &typ, &names, &args, &functionDef, &aggregateDef}, func() error {
		o := &Object{Kind: KindFunction, Name: name, Phase: PreData, Schema: nsp, OID: oid, Present: presentByAddress(typ, names, args)}
		switch {
		case kind == "a":
			o.Kind = KindAggregate
			o.Create = []string{aggregateDef}
		case lang == "c" || lang == "internal":
			o.LeftOut = "written in " + lang + ": the target needs its shared library; create it there by hand (or the extension it belongs to)"
		default:
			o.Create = []string{functionDef}
		}
		r.keys[catalogRef{"pg_proc", oid}] = o.Key()
		r.add(o)
		return nil
	})
	return err
}

// readSequences reads the sequences of the carried schemas and those the
// carried tables' defaults use, to create them before anything that names
// them; their values (and the columns they belong to) are set at the end of
// a migration. Identity sequences come with their columns, and a sequence
// owned by a column of a table the publication does not publish goes with it.
func (r *objectReader) readSequences(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
SELECT s.oid, n.nspname::pg_catalog.text, s.relname::pg_catalog.text,
	'CREATE SEQUENCE IF NOT EXISTS ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(s.relname) ||
	' AS ' || pg_catalog.format_type(q.seqtypid, NULL) || ' INCREMENT BY ' || q.seqincrement || ' MINVALUE ' || q.seqmin ||
	' MAXVALUE ' || q.seqmax || ' START WITH ' || q.seqstart || ' CACHE ' || q.seqcache || CASE WHEN q.seqcycle THEN ' CYCLE' ELSE ' NO CYCLE' END
FROM pg_catalog.pg_class s
JOIN pg_catalog.pg_namespace n ON n.oid = s.relnamespace
JOIN pg_catalog.pg_sequence q ON q.seqrelid = s.oid
WHERE s.relkind = 'S'
	AND (n.nspname = ANY ($1::pg_catalog.text[]) OR s.oid IN (SELECT d.refobjid FROM pg_catalog.pg_attrdef ad
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid = ad.oid
		WHERE ad.adrelid = ANY ($2::pg_catalog.oid[])))
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend o WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objid = s.oid
		AND (o.deptype IN ('i', 'e') OR o.deptype = 'a' AND NOT (o.refobjid = ANY ($2::pg_catalog.oid[]))))
ORDER BY s.oid`, r.schemas, mapKeys(r.tables))
	if err != nil {
		return err
	}
	var oid uint32
	var t QualifiedName
	var create string
	_, err = pgx.ForEachRow(rows, []any{&oid, &t.Schema, &t.Name, &create}, func() error {
		o := &Object{Kind: KindSequence, Name: t.display(), Phase: PreData, Schema: t.Schema, OID: oid, Create: []string{create},
			Present: presentByAddress("sequence", []string{t.Schema, t.Name}, nil)}
		r.keys[catalogRef{"pg_class", oid}] = o.Key()
		r.add(o)
		return nil
	})
	return err
}

// readViews reads the definitions of the carried views and materialized
// views (pg_get_viewdef, with their options), and lists the left out ones.
func (r *objectReader) readViews(ctx context.Context, views map[uint32]*viewNode) error {
	var oids []uint32
	for oid, v := range views {
		kind := KindView
		if v.kind == "m" {
			kind = KindMatView
		}
		r.keys[catalogRef{"pg_class", oid}] = string(kind) + " " + v.name.display()
		if v.carried {
			oids = append(oids, oid)
			continue
		}
		r.add(&Object{Kind: kind, Name: v.name.display(), Phase: PostData, Schema: v.name.Schema, OID: oid, LeftOut: v.why})
	}
	if len(oids) == 0 {
		return nil
	}
	rows, err := r.tx.Query(ctx, `SELECT c.oid, c.relkind::pg_catalog.text, c.relispopulated,
		coalesce(pg_catalog.array_to_string(c.reloptions, ', '), ''), pg_catalog.pg_get_viewdef(c.oid)
		FROM pg_catalog.pg_class c WHERE c.oid = ANY ($1::pg_catalog.oid[])`, oids)
	if err != nil {
		return err
	}
	var oid uint32
	var kind, options, def string
	var populated bool
	_, err = pgx.ForEachRow(rows, []any{&oid, &kind, &populated, &options, &def}, func() error {
		v := views[oid]
		name := qname(v.name.Schema, v.name.Name)
		with := ""
		if options != "" {
			with = " WITH (" + options + ")"
		}
		def = strings.TrimSuffix(strings.TrimSpace(def), ";")
		o := &Object{Kind: KindView, Name: v.name.display(), Phase: PostData, Schema: v.name.Schema, OID: oid}
		if kind == "m" {
			o.Kind = KindMatView
			if populated {
				o.Refresh = "REFRESH MATERIALIZED VIEW " + name
			}
			o.Create = []string{"CREATE MATERIALIZED VIEW " + name + with + " AS\n" + def + "\nWITH NO DATA"}
			o.Present = presentByAddress("materialized view", []string{v.name.Schema, v.name.Name}, nil)
		} else {
			o.Create = []string{"CREATE VIEW " + name + with + " AS\n" + def}
			o.Present = presentByAddress("view", []string{v.name.Schema, v.name.Name}, nil)
		}
		r.add(o)
		return nil
	})
	return err
}

// readDefaults reads the column defaults of the carried tables, all of
// them: the target's own inserts after a switch need them, also those that
// call nextval() or a function of the application. A target column that has
// one already (pgrelay creates the portable ones with the table) keeps it.
func (r *objectReader) readDefaults(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
SELECT ad.oid, n.nspname::pg_catalog.text, c.relname::pg_catalog.text, a.attname::pg_catalog.text,
	pg_catalog.pg_get_expr(ad.adbin, 0)
FROM pg_catalog.pg_attrdef ad
JOIN pg_catalog.pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum AND NOT a.attisdropped
JOIN pg_catalog.pg_class c ON c.oid = ad.adrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE ad.adrelid = ANY ($1::pg_catalog.oid[]) AND a.attgenerated = '' AND a.attidentity = ''
	AND pg_catalog.strpos(ad.adbin::pg_catalog.text, '{VAR ') = 0
UNION ALL
-- An identity column of a partitioned table the objects create: its
-- partitions take their values from its sequence (a default of it, which
-- the end of a migration creates and sets), and so does it. A partitioned
-- partition's identity column (PostgreSQL 17+ marks one) has no sequence of
-- its own: it takes the root's, as on the source.
SELECT c.oid, n.nspname::pg_catalog.text, c.relname::pg_catalog.text, a.attname::pg_catalog.text,
	'nextval(' || pg_catalog.quote_literal(s.seq) || '::regclass)'
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL (SELECT coalesce(
	pg_catalog.pg_get_serial_sequence(pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), a.attname),
	pg_catalog.pg_get_serial_sequence(pg_catalog.pg_partition_root(c.oid)::pg_catalog.regclass::pg_catalog.text, a.attname)) AS seq) s
WHERE a.attrelid = ANY ($2::pg_catalog.oid[]) AND a.attidentity <> '' AND NOT a.attisdropped AND s.seq IS NOT NULL
ORDER BY 1`, mapKeys(r.tables), r.oursUnpublished())
	if err != nil {
		return err
	}
	var oid uint32
	var t QualifiedName
	var col, expr string
	_, err = pgx.ForEachRow(rows, []any{&oid, &t.Schema, &t.Name, &col, &expr}, func() error {
		r.add(&Object{Kind: KindDefault, Name: t.display() + "." + displayIdent(col), Phase: PostData, Table: t, OID: oid,
			Create:  []string{"ALTER TABLE " + qname(t.Schema, t.Name) + " ALTER COLUMN " + pgx.Identifier{col}.Sanitize() + " SET DEFAULT " + expr},
			Present: presentByAddress("default value", []string{t.Schema, t.Name, col}, nil)})
		r.keys[catalogRef{"pg_attrdef", oid}] = string(KindDefault) + " " + t.display() + "." + displayIdent(col)
		return nil
	})
	return err
}

// oursUnpublished are the tables the objects create that the publication
// does not publish (partitioned tables of partitions published on their own).
func (r *objectReader) oursUnpublished() []uint32 {
	var out []uint32
	for oid := range r.ours {
		if _, ok := r.published[oid]; !ok {
			out = append(out, oid)
		}
	}
	return out
}

// readConstraints reads the check constraints and foreign keys of the
// carried tables, and the primary key, unique and exclusion constraints of
// the partitioned tables the objects create (pgrelay's copy makes those of
// the tables it creates). A constraint a partition takes from its
// partitioned table comes with that table's. A foreign key referencing a
// table the target does not get is left out.
func (r *objectReader) readConstraints(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
SELECT c.oid, c.conname::pg_catalog.text, c.contype::pg_catalog.text, c.conrelid, n.nspname::pg_catalog.text, t.relname::pg_catalog.text,
	pg_catalog.pg_get_constraintdef(c.oid), c.conislocal, c.conparentid <> 0,
	c.confrelid, coalesce(fn.nspname::pg_catalog.text, ''), coalesce(ft.relname::pg_catalog.text, ''),
	c.confupdtype::pg_catalog.text, c.confdeltype::pg_catalog.text, c.confmatchtype::pg_catalog.text,
	c.condeferrable, c.condeferred, c.convalidated,
	coalesce((SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY k.i) FROM pg_catalog.unnest(c.conkey) WITH ORDINALITY AS k(attnum, i)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum), '{}'),
	coalesce((SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY k.i) FROM pg_catalog.unnest(c.confkey) WITH ORDINALITY AS k(attnum, i)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum), '{}')
FROM pg_catalog.pg_constraint c
JOIN pg_catalog.pg_class t ON t.oid = c.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
LEFT JOIN pg_catalog.pg_class ft ON ft.oid = c.confrelid
LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = ft.relnamespace
WHERE c.conrelid = ANY ($1::pg_catalog.oid[]) AND c.contype IN ('c', 'f', 'p', 'u', 'x')
ORDER BY c.oid`, mapKeys(r.tables))
	if err != nil {
		return err
	}
	var (
		oid, rel, ref                            uint32
		name, kind, def, updType, delType, match string
		t, reft                                  QualifiedName
		local, inherited                         bool
		deferrable, deferred, validated          bool
		cols, refCols                            []string
	)
	_, err = pgx.ForEachRow(rows, []any{&oid, &name, &kind, &rel, &t.Schema, &t.Name, &def, &local, &inherited, &ref, &reft.Schema, &reft.Name,
		&updType, &delType, &match, &deferrable, &deferred, &validated, &cols, &refCols}, func() error {
		phase, ours := r.ours[rel]
		if !ours {
			phase = PostData
		}
		o := &Object{Name: displayIdent(name) + " on " + t.display(), Phase: phase, Table: t, OID: oid,
			Create:  []string{"ALTER TABLE " + qname(t.Schema, t.Name) + " ADD CONSTRAINT " + pgx.Identifier{name}.Sanitize() + " " + def},
			Present: "SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conrelid = " + pgquote.Literal(qname(t.Schema, t.Name)) + "::pg_catalog.regclass AND conname = " + pgquote.Literal(name) + ")"}
		if k, ok := r.keys[catalogRef{"pg_class", rel}]; ok {
			o.Needs = append(o.Needs, k)
		}
		defer func() { r.keys[catalogRef{"pg_constraint", oid}] = o.Key() }()
		switch kind {
		case "c":
			if !local {
				return nil // its partitioned table's, or an inheritance parent's
			}
			o.Kind, o.Phase = KindCheck, PostData
		case "f":
			if inherited {
				return nil
			}
			o.Kind, o.Phase = KindForeignKey, PostData
			o.ForeignKey = &ForeignKey{Name: name, Table: t, Columns: slices.Clone(cols), RefTable: reft, RefColumns: slices.Clone(refCols),
				OnUpdate: fkAction(updType), OnDelete: fkAction(delType), Match: fkMatch(match),
				Deferrable: deferrable, InitiallyDeferred: deferred, Validated: validated}
			if _, ok := r.tables[ref]; !ok {
				o.LeftOut = "references " + reft.display() + ", which the publication does not publish"
			} else if k, ok := r.keys[catalogRef{"pg_class", ref}]; ok {
				o.Needs = append(o.Needs, k)
			}
		default: // p, u, x
			if !ours || inherited {
				return nil
			}
			o.Kind = KindConstraint
		}
		r.add(o)
		return nil
	})
	return err
}

func fkAction(c string) string {
	switch c {
	case "r":
		return "RESTRICT"
	case "c":
		return "CASCADE"
	case "n":
		return "SET NULL"
	case "d":
		return "SET DEFAULT"
	}
	return "NO ACTION"
}

func fkMatch(c string) string {
	switch c {
	case "f":
		return "FULL"
	case "p":
		return "PARTIAL"
	}
	return "SIMPLE"
}

// readIndexes reads the indexes of the partitioned tables the objects
// create (as pg_get_indexdef prints them, but for the whole tree: without
// ONLY), and of the carried materialized views. Those backing a constraint
// come with it.
func (r *objectReader) readIndexes(ctx context.Context, views map[uint32]*viewNode) error {
	var on []uint32
	for oid := range r.ours {
		on = append(on, oid)
	}
	for oid, v := range views {
		if v.carried && v.kind == "m" {
			on = append(on, oid)
		}
	}
	if len(on) == 0 {
		return nil
	}
	rows, err := r.tx.Query(ctx, `
SELECT i.indexrelid, i.indrelid, n.nspname::pg_catalog.text, ic.relname::pg_catalog.text, tn.nspname::pg_catalog.text, t.relname::pg_catalog.text,
	pg_catalog.pg_get_indexdef(i.indexrelid)
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
JOIN pg_catalog.pg_class t ON t.oid = i.indrelid
JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
WHERE i.indrelid = ANY ($1::pg_catalog.oid[])
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))
	AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits h WHERE h.inhrelid = i.indexrelid)
ORDER BY i.indexrelid`, on)
	if err != nil {
		return err
	}
	var oid, rel uint32
	var idx, t QualifiedName
	var def string
	_, err = pgx.ForEachRow(rows, []any{&oid, &rel, &idx.Schema, &idx.Name, &t.Schema, &t.Name, &def}, func() error {
		phase, ours := r.ours[rel]
		if !ours {
			phase = PostData
		}
		def = strings.Replace(def, " ON ONLY ", " ON ", 1)
		def = ifNotExistsIndex(def)
		o := &Object{Kind: KindIndex, Name: idx.display(), Phase: phase, Schema: idx.Schema, Table: t, OID: oid, Create: []string{def},
			Present: presentByAddress("index", []string{idx.Schema, idx.Name}, nil)}
		if k, ok := r.keys[catalogRef{"pg_class", rel}]; ok {
			o.Needs = append(o.Needs, k)
		}
		r.add(o)
		return nil
	})
	return err
}

// ifNotExistsIndex turns "CREATE [UNIQUE] INDEX name ..." into its IF NOT
// EXISTS form.
func ifNotExistsIndex(def string) string {
	for _, head := range []string{"CREATE UNIQUE INDEX ", "CREATE INDEX "} {
		if rest, ok := strings.CutPrefix(def, head); ok && !strings.HasPrefix(rest, "IF NOT EXISTS ") {
			return head + "IF NOT EXISTS " + rest
		}
	}
	return def
}

// readTriggers reads the triggers of the carried tables and views
// (pg_get_triggerdef), but those a partition takes from its partitioned
// table, which come with that table's. Target sessions of pgrelay run with
// session_replication_role = replica, where only triggers set ENABLE ALWAYS
// or ENABLE REPLICA fire: those would fire again for every row pgrelay
// applies, so they are created disabled and the report says how to enable
// them at the switch. A disabled one stays disabled.
func (r *objectReader) readTriggers(ctx context.Context, views map[uint32]*viewNode) error {
	on := mapKeys(r.tables)
	for oid, v := range views {
		if v.carried {
			on = append(on, oid)
		}
	}
	rows, err := r.tx.Query(ctx, `
SELECT g.oid, g.tgname::pg_catalog.text, g.tgrelid, n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	pg_catalog.pg_get_triggerdef(g.oid), g.tgenabled::pg_catalog.text, g.tgfoid
FROM pg_catalog.pg_trigger g
JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE g.tgrelid = ANY ($1::pg_catalog.oid[]) AND NOT g.tgisinternal AND g.tgparentid = 0
ORDER BY g.oid`, on)
	if err != nil {
		return err
	}
	var oid, rel, fn uint32
	var name, def, enabled string
	var t QualifiedName
	_, err = pgx.ForEachRow(rows, []any{&oid, &name, &rel, &t.Schema, &t.Name, &def, &enabled, &fn}, func() error {
		table := qname(t.Schema, t.Name)
		trigger := pgx.Identifier{name}.Sanitize()
		o := &Object{Kind: KindTrigger, Name: displayIdent(name) + " on " + t.display(), Phase: PostData, Table: t, OID: oid, Create: []string{def},
			Present: "SELECT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgrelid = " + pgquote.Literal(table) + "::pg_catalog.regclass AND tgname = " + pgquote.Literal(name) + ")"}
		switch enabled {
		case "D":
			o.Create = append(o.Create, "ALTER TABLE "+table+" DISABLE TRIGGER "+trigger)
		case "A", "R":
			mode := map[string]string{"A": "ALWAYS", "R": "REPLICA"}[enabled]
			o.Create = append(o.Create, "ALTER TABLE "+table+" DISABLE TRIGGER "+trigger)
			o.Note = "created DISABLED: set ENABLE " + mode + " on the source, it would fire again for every change pgrelay applies; after the switch run ALTER TABLE " + table + " ENABLE " + mode + " TRIGGER " + trigger
			o.Incomplete = true
		}
		if k, ok := r.keys[catalogRef{"pg_proc", fn}]; ok {
			o.Needs = append(o.Needs, k)
		}
		if k, ok := r.keys[catalogRef{"pg_class", rel}]; ok {
			o.Needs = append(o.Needs, k)
		}
		r.add(o)
		return nil
	})
	return err
}

// readStatistics reads the extended statistics objects of the carried
// tables.
func (r *objectReader) readStatistics(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
SELECT s.oid, n.nspname::pg_catalog.text, s.stxname::pg_catalog.text, tn.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	pg_catalog.pg_get_statisticsobjdef(s.oid)
FROM pg_catalog.pg_statistic_ext s
JOIN pg_catalog.pg_namespace n ON n.oid = s.stxnamespace
JOIN pg_catalog.pg_class c ON c.oid = s.stxrelid
JOIN pg_catalog.pg_namespace tn ON tn.oid = c.relnamespace
WHERE s.stxrelid = ANY ($1::pg_catalog.oid[])
ORDER BY s.oid`, mapKeys(r.tables))
	if err != nil {
		return err
	}
	var oid uint32
	var st, t QualifiedName
	var def string
	_, err = pgx.ForEachRow(rows, []any{&oid, &st.Schema, &st.Name, &t.Schema, &t.Name, &def}, func() error {
		r.add(&Object{Kind: KindStatistics, Name: st.display(), Phase: PostData, Schema: st.Schema, Table: t, OID: oid, Create: []string{def},
			Present: presentByAddress("statistics object", []string{st.Schema, st.Name}, nil)})
		return nil
	})
	return err
}

// readPoliciesAndRules lists what is not carried on the carried tables:
// row-level security and its policies, rules, table inheritance (not
// partitions).
func (r *objectReader) readPoliciesAndRules(ctx context.Context) error {
	rows, err := r.tx.Query(ctx, `
SELECT 'policy', p.oid, pg_catalog.quote_ident(p.polname) || ' on ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	p.polname::pg_catalog.text, NULL, NULL
FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE p.polrelid = ANY ($1::pg_catalog.oid[])
UNION ALL
SELECT 'policy', c.oid, 'row level security on ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	NULL, NULL, NULL
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = ANY ($1::pg_catalog.oid[]) AND c.relrowsecurity
UNION ALL
SELECT 'inheritance', c.oid, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) || ' of ' ||
	pg_catalog.quote_ident(pn.nspname) || '.' || pg_catalog.quote_ident(p.relname), n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	NULL, pn.nspname::pg_catalog.text, p.relname::pg_catalog.text
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_class p ON p.oid = i.inhparent JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
WHERE NOT c.relispartition AND c.relkind IN ('r', 'p') AND (i.inhrelid = ANY ($1::pg_catalog.oid[]) OR i.inhparent = ANY ($1::pg_catalog.oid[]))
UNION ALL
SELECT 'rule', w.oid, pg_catalog.quote_ident(w.rulename) || ' on ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), n.nspname::pg_catalog.text, c.relname::pg_catalog.text,
	w.rulename::pg_catalog.text, NULL, NULL
FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class c ON c.oid = w.ev_class JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE w.ev_class = ANY ($1::pg_catalog.oid[]) AND w.rulename <> '_RETURN'
ORDER BY 2`, mapKeys(r.tables))
	if err != nil {
		return err
	}
	var kind, name string
	var oid uint32
	var t, parent QualifiedName
	var own, parentSchema, parentName *string
	_, err = pgx.ForEachRow(rows, []any{&kind, &oid, &name, &t.Schema, &t.Name, &own, &parentSchema, &parentName}, func() error {
		o := &Object{Kind: ObjectKind(kind), Name: name, Phase: PostData, Table: t, OID: oid}
		// Made on the target by hand, it counts as there at the next run.
		table := pgquote.Literal(pgx.Identifier{t.Schema, t.Name}.Sanitize())
		switch {
		case kind == "rule":
			o.LeftOut = "rules are not carried: pgrelay applies changes as they happened on the source, and a rule would rewrite them; create it by hand at the switch"
			o.Present = presentByAddress("rule", []string{t.Schema, t.Name, *own}, nil)
		case kind == "inheritance":
			o.LeftOut = "table inheritance is not carried: on the target the child is a table of its own, and queries on its parent there miss its rows; ALTER TABLE … INHERIT … on the target (once the child has the parent's check constraints) restores it"
			parent = QualifiedName{Schema: *parentSchema, Name: *parentName}
			o.Present = "SELECT EXISTS (SELECT FROM pg_catalog.pg_inherits WHERE inhrelid = pg_catalog.to_regclass(" + table +
				") AND inhparent = pg_catalog.to_regclass(" + pgquote.Literal(pgx.Identifier{parent.Schema, parent.Name}.Sanitize()) + "))"
		case own != nil:
			o.LeftOut = "row-level security is not carried: create it on the target by hand before the switch"
			o.Present = presentByAddress("policy", []string{t.Schema, t.Name, *own}, nil)
		default:
			o.LeftOut = "row-level security is not carried: create it on the target by hand before the switch"
			o.Present = "SELECT relrowsecurity FROM pg_catalog.pg_class WHERE oid = pg_catalog.to_regclass(" + table + ")"
		}
		r.add(o)
		return nil
	})
	return err
}

// readUnsupported lists, left out, the objects of kinds pgrelay does not
// carry that the application may use: the operators, operator classes and
// families, collations, conversions and text search objects of the carried
// schemas, and the casts of the carried types or functions (none of an
// extension's: the extension brings it, nor one PostgreSQL made with another
// object, as a multirange's casts). A query or a view using one fails on the
// target until it is made there by hand.
func (r *objectReader) readUnsupported(ctx context.Context, procs, types []uint32) error {
	// The kinds listed by schema: each catalog with its namespace column.
	var bySchema []string
	for _, k := range [][2]string{{"pg_operator", "oprnamespace"}, {"pg_opclass", "opcnamespace"}, {"pg_opfamily", "opfnamespace"},
		{"pg_collation", "collnamespace"}, {"pg_conversion", "connamespace"}, {"pg_ts_config", "cfgnamespace"},
		{"pg_ts_dict", "dictnamespace"}, {"pg_ts_parser", "prsnamespace"}, {"pg_ts_template", "tmplnamespace"}} {
		bySchema = append(bySchema, "SELECT 'pg_catalog."+k[0]+"'::pg_catalog.regclass, o.oid FROM pg_catalog."+k[0]+
			" o JOIN pg_catalog.pg_namespace n ON n.oid = o."+k[1]+" WHERE n.nspname = ANY ($1::pg_catalog.text[])")
	}
	rows, err := r.tx.Query(ctx, `
WITH objs(classid, objid) AS (
	`+strings.Join(bySchema, "\n\tUNION ALL ")+`
	UNION ALL SELECT 'pg_catalog.pg_cast'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_cast c
		WHERE c.oid >= 16384 AND (c.castfunc = ANY ($2::pg_catalog.oid[]) OR c.castsource = ANY ($3::pg_catalog.oid[]) OR c.casttarget = ANY ($3::pg_catalog.oid[]))
)
SELECT o.objid, i.type, i.identity, a.type, a.object_names, a.object_args
FROM objs o CROSS JOIN LATERAL pg_catalog.pg_identify_object(o.classid, o.objid, 0) i
CROSS JOIN LATERAL pg_catalog.pg_identify_object_as_address(o.classid, o.objid, 0) a
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = o.classid AND e.objid = o.objid AND e.deptype IN ('e', 'i'))
ORDER BY 2, 3`, r.schemas, procs, types)
	if err != nil {
		return err
	}
	var oid uint32
	var typ, identity, addrType string
	var names, args []string
	_, err = pgx.ForEachRow(rows, []any{&oid, &typ, &identity, &addrType, &names, &args}, func() error {
		// One made on the target by hand counts as there at the next run.
		// A prefix operator's address does not go back through
		// pg_get_object_address (one argument where it takes two, on 14 to
		// 18): operators are looked up by their identity.
		present := presentByAddress(addrType, names, args)
		if ObjectKind(typ) == KindOperator {
			present = "SELECT pg_catalog.to_regoperator(" + pgquote.Literal(identity) + ") IS NOT NULL"
		}
		r.add(&Object{Kind: ObjectKind(typ), Name: identity, Phase: PostData, OID: oid, Present: present,
			LeftOut: "pgrelay does not carry this kind of object: create it on the target by hand, as the source defines it, before the switch"})
		return nil
	})
	return err
}

// readNeeds adds to the objects what they need among the carried objects,
// as pg_depend records it: a view the views and functions it uses, a
// default or check the functions and sequences it calls.
func (r *objectReader) readNeeds(ctx context.Context, views map[uint32]*viewNode) error {
	var viewOIDs []uint32
	for oid, v := range views {
		if v.carried {
			viewOIDs = append(viewOIDs, oid)
		}
	}
	rows, err := r.tx.Query(ctx, `
WITH owners(catalog, objid, owner_catalog, owner) AS (
	SELECT 'pg_rewrite', w.oid, 'pg_class', w.ev_class FROM pg_catalog.pg_rewrite w WHERE w.ev_class = ANY ($1::pg_catalog.oid[])
	UNION ALL SELECT 'pg_attrdef', ad.oid, 'pg_attrdef', ad.oid FROM pg_catalog.pg_attrdef ad WHERE ad.adrelid = ANY ($2::pg_catalog.oid[])
	UNION ALL SELECT 'pg_constraint', c.oid, 'pg_constraint', c.oid FROM pg_catalog.pg_constraint c WHERE c.conrelid = ANY ($2::pg_catalog.oid[])
)
SELECT o.owner_catalog, o.owner, d.refclassid::pg_catalog.regclass::pg_catalog.text, d.refobjid
FROM owners o
JOIN pg_catalog.pg_depend d ON d.classid = ('pg_catalog.' || o.catalog)::pg_catalog.regclass AND d.objid = o.objid
WHERE d.deptype = 'n' AND d.refobjid >= 16384 AND d.refobjid <> o.owner`, viewOIDs, mapKeys(r.tables))
	if err != nil {
		return err
	}
	needs := map[string][]string{}
	var catalog, refCatalog string
	var owner, ref uint32
	if _, err := pgx.ForEachRow(rows, []any{&catalog, &owner, &refCatalog, &ref}, func() error {
		from, ok := r.keys[catalogRef{catalog, owner}]
		refCatalog = strings.TrimPrefix(refCatalog, "pg_catalog.")
		to, ok2 := r.keys[catalogRef{refCatalog, ref}]
		if ok && ok2 && from != to && !slices.Contains(needs[from], to) {
			needs[from] = append(needs[from], to)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, o := range r.objs {
		for _, k := range needs[o.Key()] {
			if !slices.Contains(o.Needs, k) {
				o.Needs = append(o.Needs, k)
			}
		}
	}
	return nil
}

// readComments reads the comments of the carried objects and tables (and
// their columns), each as a COMMENT statement of its own. An extension's
// comes with the extension.
func (r *objectReader) readComments(ctx context.Context, views map[uint32]*viewNode, procs, types []uint32) error {
	var classes, oids []uint32
	add := func(catalog uint32, list []uint32) {
		for _, o := range list {
			classes, oids = append(classes, catalog), append(oids, o)
		}
	}
	var catalogs struct{ class, proc, typ, constraint, trigger, namespace, extension, statistic uint32 }
	if err := r.tx.QueryRow(ctx, `SELECT 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid, 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid,
		'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid, 'pg_catalog.pg_constraint'::pg_catalog.regclass::pg_catalog.oid, 'pg_catalog.pg_trigger'::pg_catalog.regclass::pg_catalog.oid,
		'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid, 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid, 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass::pg_catalog.oid`).Scan(
		&catalogs.class, &catalogs.proc, &catalogs.typ, &catalogs.constraint, &catalogs.trigger, &catalogs.namespace, &catalogs.extension, &catalogs.statistic); err != nil {
		return err
	}
	var rels []uint32
	rels = append(rels, mapKeys(r.tables)...)
	for oid, v := range views {
		if v.carried {
			rels = append(rels, oid)
		}
	}
	carried := map[ObjectKind][]uint32{}
	for _, o := range r.objs {
		if o.LeftOut == "" {
			carried[o.Kind] = append(carried[o.Kind], o.OID)
		}
	}
	add(catalogs.class, rels)
	add(catalogs.class, carried[KindSequence])
	add(catalogs.class, carried[KindIndex])
	add(catalogs.proc, procs)
	add(catalogs.typ, types)
	add(catalogs.constraint, carried[KindCheck])
	add(catalogs.constraint, carried[KindForeignKey])
	add(catalogs.constraint, carried[KindConstraint])
	add(catalogs.trigger, carried[KindTrigger])
	add(catalogs.statistic, carried[KindStatistics])
	// Comments of the carried schemas.
	rows, err := r.tx.Query(ctx, `
SELECT d.classoid, d.objoid, d.objsubid, d.description, i.type, i.identity, a.type, a.object_names, a.object_args
FROM pg_catalog.pg_description d
JOIN ROWS FROM (pg_catalog.unnest($1::pg_catalog.oid[]), pg_catalog.unnest($2::pg_catalog.oid[])) AS k(classid, objid)
	ON d.classoid = k.classid AND d.objoid = k.objid
CROSS JOIN LATERAL pg_catalog.pg_identify_object(d.classoid, d.objoid, d.objsubid) i
CROSS JOIN LATERAL pg_catalog.pg_identify_object_as_address(d.classoid, d.objoid, d.objsubid) a
UNION ALL
SELECT d.classoid, d.objoid, d.objsubid, d.description, 'schema', pg_catalog.quote_ident(n.nspname), 'schema', ARRAY[n.nspname::pg_catalog.text], '{}'
FROM pg_catalog.pg_description d JOIN pg_catalog.pg_namespace n ON n.oid = d.objoid AND d.classoid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
WHERE n.nspname = ANY ($3::pg_catalog.text[])
ORDER BY 1, 2, 3`, classes, oids, r.schemas)
	if err != nil {
		return err
	}
	var (
		class, oid                    uint32
		sub                           int32
		desc, typ, identity, addrType string
		names, args                   []string
	)
	_, err = pgx.ForEachRow(rows, []any{&class, &oid, &sub, &desc, &typ, &identity, &addrType, &names, &args}, func() error {
		target := commentTarget(typ, identity)
		if target == "" {
			return nil
		}
		o := &Object{Kind: KindComment, Name: "on " + typ + " " + identity, Phase: PostData, OID: oid,
			Create:  []string{"COMMENT ON " + target + " IS " + pgquote.Literal(desc)},
			Present: presentComment(addrType, names, args, desc)}
		catalog := map[uint32]string{catalogs.class: "pg_class", catalogs.proc: "pg_proc", catalogs.typ: "pg_type", catalogs.constraint: "pg_constraint"}[class]
		if k, ok := r.keys[catalogRef{catalog, oid}]; ok && catalog != "" {
			o.Needs = []string{k}
		}
		r.add(o)
		return nil
	})
	return err
}

// readGrants reads the privileges granted on the carried tables (and their
// columns), views, sequences, functions, types and schemas, as GRANT
// statements, one object per grantee: privileges are added, never revoked,
// but for a function whose EXECUTE the source revoked from PUBLIC (the
// default grants it). The owner's own privileges are left out: the target's
// objects belong to pgrelay's role.
func (r *objectReader) readGrants(ctx context.Context, views map[uint32]*viewNode, procs, types []uint32) error {
	rels := mapKeys(r.tables)
	for oid, v := range views {
		if v.carried {
			rels = append(rels, oid)
		}
	}
	var seqs []uint32
	for _, o := range r.objs {
		if o.Kind == KindSequence && o.LeftOut == "" {
			seqs = append(seqs, o.OID)
		}
	}
	rows, err := r.tx.Query(ctx, `
WITH acl(kind, ident, cols, owner, item, oid) AS (
	SELECT CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
		pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), '', c.relowner, pg_catalog.aclexplode(c.relacl), c.oid
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE (c.oid = ANY ($1::pg_catalog.oid[]) OR c.oid = ANY ($2::pg_catalog.oid[])) AND c.relacl IS NOT NULL
	UNION ALL
	SELECT 'TABLE', pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), pg_catalog.quote_ident(a.attname), c.relowner, pg_catalog.aclexplode(a.attacl), c.oid
	FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.oid = ANY ($1::pg_catalog.oid[]) AND a.attacl IS NOT NULL AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT CASE p.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, p.oid::pg_catalog.regprocedure::pg_catalog.text, '', p.proowner, pg_catalog.aclexplode(p.proacl), p.oid
	FROM pg_catalog.pg_proc p WHERE p.oid = ANY ($3::pg_catalog.oid[]) AND p.proacl IS NOT NULL
	UNION ALL
	SELECT 'TYPE', pg_catalog.format_type(t.oid, NULL), '', t.typowner, pg_catalog.aclexplode(t.typacl), t.oid
	FROM pg_catalog.pg_type t WHERE t.oid = ANY ($4::pg_catalog.oid[]) AND t.typacl IS NOT NULL
	UNION ALL
	SELECT 'SCHEMA', pg_catalog.quote_ident(n.nspname), '', n.nspowner, pg_catalog.aclexplode(n.nspacl), n.oid
	FROM pg_catalog.pg_namespace n WHERE n.nspname = ANY ($5::pg_catalog.text[]) AND n.nspacl IS NOT NULL
)
SELECT a.kind, a.ident, a.cols,
	CASE WHEN (a.item).grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid((a.item).grantee)) END,
	(a.item).is_grantable, pg_catalog.array_agg(DISTINCT (a.item).privilege_type ORDER BY (a.item).privilege_type),
	min(a.oid)
FROM acl a
WHERE (a.item).grantee <> a.owner
GROUP BY 1, 2, 3, 4, 5
ORDER BY 2, 3, 4`, rels, seqs, procs, types, r.schemas)
	if err != nil {
		return err
	}
	var (
		kind, ident, col, grantee string
		grantable                 bool
		privs                     []string
		oid                       uint32
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &ident, &col, &grantee, &grantable, &privs, &oid}, func() error {
		list := strings.Join(privs, ", ")
		if col != "" {
			for i, p := range privs {
				privs[i] = p + " (" + col + ")"
			}
			list = strings.Join(privs, ", ")
		}
		stmt := "GRANT " + list + " ON " + kind + " " + ident + " TO " + grantee
		if grantable {
			stmt += " WITH GRANT OPTION"
		}
		r.add(&Object{Kind: KindGrant, Name: list + " on " + strings.ToLower(kind) + " " + ident + " to " + grantee, Phase: PostData, OID: oid, Create: []string{stmt}})
		return nil
	})
	if err != nil {
		return err
	}
	// EXECUTE revoked from PUBLIC on the source: the target's default
	// grants it, so revoke it there too.
	rows, err = r.tx.Query(ctx, `SELECT p.oid, CASE p.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, p.oid::pg_catalog.regprocedure::pg_catalog.text
		FROM pg_catalog.pg_proc p WHERE p.oid = ANY ($1::pg_catalog.oid[]) AND p.proacl IS NOT NULL AND p.prokind <> 'a'
		AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(p.proacl) x WHERE x.grantee = 0 AND x.privilege_type = 'EXECUTE')`, procs)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, []any{&oid, &kind, &ident}, func() error {
		r.add(&Object{Kind: KindGrant, Name: "no EXECUTE on " + strings.ToLower(kind) + " " + ident + " to PUBLIC", Phase: PostData, OID: oid,
			Create: []string{"REVOKE EXECUTE ON " + kind + " " + ident + " FROM PUBLIC"}})
		return nil
	})
	return err
}

// mapKeys are m's keys, sorted.
func mapKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ErrObjectsTooOld is the error of ReadObjects on a source older than
// MinObjectsMajor.
var ErrObjectsTooOld = errors.New("source too old to read its schema objects")
