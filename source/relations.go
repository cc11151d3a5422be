package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PublishedTable is one table of a publication with its size estimate, for
// planning the snapshot copy.
type PublishedTable struct {
	Relation *Relation
	// Pages and Bytes estimate the table's size (pg_class.relpages, pg_table_size).
	Pages int64
	Bytes int64
	// Columns are the published column names (all non-generated columns unless
	// the publication has a column list, PostgreSQL 15+).
	Columns []string
	// RowFilter is the publication's row filter of the table (PostgreSQL 15+),
	// an SQL condition on its columns; "" when it has none. Only rows it holds
	// for are published, so only those are copied.
	RowFilter string
	// Partitioned marks a partitioned table, published as a whole through its
	// root (publish_via_partition_root): its rows are in its partitions.
	Partitioned bool
	// Parts are the leaf partitions of a partitioned table, which the copy
	// reads one by one, with their sizes (Pages and Bytes above are their
	// sums). Nil for a plain table, and for a partitioned table that has no
	// partition or one that is not a plain table (a foreign table): the copy
	// then reads the root as one.
	Parts []Part
	// ColumnList is the publication's column list of the table (PostgreSQL
	// 15+), as attribute numbers, which a column rename leaves alone; nil when
	// the publication has none for it (every column is published).
	ColumnList []int16
	// Ancestors are the partitioned tables above a partition the publication
	// publishes as a table of its own (publish_via_partition_root off, or its
	// root not published), nearest first; nil for any other table, and
	// before PostgreSQL 13 (no publish_via_partition_root). Only OID, Schema
	// and Name are set.
	Ancestors []Part
}

// Shape is what the publication publishes of the table that the stream never
// carries: its row filter, its column list (a column it adds has no values in
// the rows already copied) and, for a partitioned table published through its
// root, its partitions. Rows copied under one shape do not match another.
func (p PublishedTable) Shape() string {
	var b strings.Builder
	b.WriteString("filter: " + p.RowFilter)
	if p.Partitioned {
		names := make([]string, len(p.Parts))
		for i, part := range p.Parts {
			names[i] = part.Schema + "." + part.Name
		}
		b.WriteString("; partitions: " + strings.Join(names, ", "))
	}
	b.WriteString(ShapeColumnList)
	if p.ColumnList == nil {
		b.WriteString("none")
	} else {
		b.WriteString("attnums ")
		for i, n := range p.ColumnList {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(int(n)))
		}
	}
	return b.String()
}

// PartitionLevelChanges names the copied tables a publication now publishes
// at another level of their partition tree than when they were copied:
// partitions copied as tables of their own that it now publishes through
// their root (publish_via_partition_root turned on), or a partitioned table
// copied through its root whose partitions it now publishes as tables of
// their own (turned off). The stream fills the other level's target tables
// from then on, and the copied ones keep stale rows. Comparing Shapes table
// by table misses it: the copied table is not published at all any more.
// copied tells whether the table of that OID (0: unknown) and schema.name
// was copied. Each entry is one table or group, with what to do.
func PartitionLevelChanges(published []PublishedTable, copied func(oid uint32, name string) bool) []string {
	var out []string
	stale := map[string][]string{} // a copied root: its partitions published now
	for _, pt := range published {
		name := pt.Relation.Namespace + "." + pt.Relation.Name
		if pt.Partitioned {
			var parts []string
			for _, p := range pt.Parts {
				if copied(p.OID, p.Schema+"."+p.Name) {
					parts = append(parts, p.Schema+"."+p.Name)
				}
			}
			if len(parts) > 0 {
				out = append(out, fmt.Sprintf("%s (copied as tables of their own; now published through their root %s, publish_via_partition_root being on: drop their target tables, which would keep stale rows)",
					strings.Join(parts, ", "), name))
			}
			continue
		}
		for _, a := range pt.Ancestors {
			if root := a.Schema + "." + a.Name; copied(a.OID, root) {
				stale[root] = append(stale[root], name)
				break
			}
		}
	}
	roots := make([]string, 0, len(stale))
	for root := range stale {
		roots = append(roots, root)
	}
	slices.Sort(roots)
	for _, root := range roots {
		out = append(out, fmt.Sprintf("%s (copied through its root under publish_via_partition_root; now its partitions %s are published as tables of their own: drop its target table, which would keep stale rows)",
			root, strings.Join(stale[root], ", ")))
	}
	return out
}

// ShapeColumnList starts the column list's part of a Shape. Shapes stored
// before it was part of them lack it.
const ShapeColumnList = "; column list: "

// Part is a leaf partition of a published partitioned table.
type Part struct {
	OID          uint32
	Schema, Name string
	Pages, Bytes int64
}

// ReadPublishedTables describes every table of the publication as the Relation
// message pgoutput would send for it: columns in attribute order, replica
// identity key columns flagged (all columns for REPLICA IDENTITY FULL, as
// pgoutput does). The snapshot uses it to create and copy tables before any
// Relation message has been streamed. Run it inside the snapshot's transaction
// so the definitions match the copied data.
func ReadPublishedTables(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, publication string, major int) ([]PublishedTable, error) {
	return readPublished(ctx, q, publication, major, true)
}

// ReadPublishedShapes is ReadPublishedTables without the columns (Relation
// has none, Columns is nil): enough for each table's Shape, one query per
// partitioned table instead of one per table.
func ReadPublishedShapes(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, publication string, major int) ([]PublishedTable, error) {
	return readPublished(ctx, q, publication, major, false)
}

func readPublished(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, publication string, major int, columns bool) ([]PublishedTable, error) {
	// attnames (published column list) exists from 15; generated columns are not
	// published before 18 (and we do not copy them: the target computes its own).
	colList, rowFilter, prattrs := "NULL::text[]", "NULL::text", "NULL::int2[]"
	if major >= 15 {
		colList, rowFilter = "pt.attnames", "pt.rowfilter"
		// pt.attnames lists every column when there is no column list.
		prattrs = `(SELECT pr.prattrs::int2[] FROM pg_catalog.pg_publication_rel pr
         JOIN pg_catalog.pg_publication p ON p.oid = pr.prpubid
         WHERE p.pubname = pt.pubname AND pr.prrelid = c.oid AND pr.prattrs IS NOT NULL LIMIT 1)`
	}
	ancestorOIDs, ancestorSchemas, ancestorNames := "NULL::oid[]", "NULL::text[]", "NULL::text[]"
	if major >= 13 {
		ancestors := `FROM pg_catalog.pg_partition_ancestors(c.oid) WITH ORDINALITY a(relid, nearness)
         JOIN pg_catalog.pg_class ac ON ac.oid = a.relid
         JOIN pg_catalog.pg_namespace an ON an.oid = ac.relnamespace
         WHERE a.relid <> c.oid`
		ancestorOIDs = `CASE WHEN c.relispartition THEN (SELECT array_agg(ac.oid ORDER BY a.nearness) ` + ancestors + `) END`
		ancestorSchemas = `CASE WHEN c.relispartition THEN (SELECT array_agg(an.nspname::text ORDER BY a.nearness) ` + ancestors + `) END`
		ancestorNames = `CASE WHEN c.relispartition THEN (SELECT array_agg(ac.relname::text ORDER BY a.nearness) ` + ancestors + `) END`
	}
	sql := `
SELECT c.oid, n.nspname, c.relname, c.relreplident::text, c.relpages::int8,
       pg_catalog.pg_table_size(c.oid), ` + colList + `, ` + rowFilter + `, c.relkind = 'p', ` + prattrs + `,
       ` + ancestorOIDs + `, ` + ancestorSchemas + `, ` + ancestorNames + `
FROM pg_catalog.pg_publication_tables pt
JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
WHERE pt.pubname = $1
ORDER BY n.nspname, c.relname`
	rows, err := q.Query(ctx, sql, publication)
	if err != nil {
		return nil, fmt.Errorf("source: list tables of publication %q: %w", publication, err)
	}
	type head struct {
		oid            uint32
		nsp, name, rep string
		pages, bytes   int64
		attnames       []string
		rowFilter      *string
		partitioned    bool
		prattrs        []int16
		ancestorOIDs   []uint32
		ancestorNsps   []string
		ancestorNames  []string
	}
	var heads []head
	for rows.Next() {
		var h head
		if err := rows.Scan(&h.oid, &h.nsp, &h.name, &h.rep, &h.pages, &h.bytes, &h.attnames, &h.rowFilter, &h.partitioned, &h.prattrs, &h.ancestorOIDs, &h.ancestorNsps, &h.ancestorNames); err != nil {
			rows.Close()
			return nil, fmt.Errorf("source: list tables of publication %q: %w", publication, err)
		}
		heads = append(heads, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("source: list tables of publication %q: %w", publication, err)
	}

	genFilter := ""
	if major >= 12 {
		genFilter = "AND a.attgenerated = ''"
	}
	colSQL := `
SELECT a.attname, a.atttypid, a.atttypmod,
       coalesce(a.attnum = ANY (
         CASE c.relreplident
           WHEN 'd' THEN (SELECT i.indkey::int2[] FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND i.indimmediate)
           WHEN 'i' THEN (SELECT i.indkey::int2[] FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisreplident)
         END), false) OR c.relreplident = 'f'
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ` + genFilter + `
ORDER BY a.attnum`
	out := make([]PublishedTable, 0, len(heads))
	for _, h := range heads {
		rel := &Relation{RelationID: h.oid, Namespace: h.nsp, Name: h.name}
		if len(h.rep) == 1 {
			rel.ReplicaIdentity = h.rep[0]
		}
		var names []string
		if columns {
			var err error
			if names, err = readColumns(ctx, q, colSQL, rel, h.attnames); err != nil {
				return nil, fmt.Errorf("source: read columns of %s.%s: %w", h.nsp, h.name, err)
			}
		}
		pt := PublishedTable{Relation: rel, Pages: h.pages, Bytes: h.bytes, Columns: names, Partitioned: h.partitioned, ColumnList: h.prattrs}
		if h.rowFilter != nil {
			pt.RowFilter = *h.rowFilter
		}
		for i, oid := range h.ancestorOIDs {
			if i < len(h.ancestorNsps) && i < len(h.ancestorNames) {
				pt.Ancestors = append(pt.Ancestors, Part{OID: oid, Schema: h.ancestorNsps[i], Name: h.ancestorNames[i]})
			}
		}
		if h.partitioned {
			var err error
			if pt.Parts, err = readParts(ctx, q, h.oid); err != nil {
				return nil, fmt.Errorf("source: read the partitions of %s.%s: %w", h.nsp, h.name, err)
			}
			for _, p := range pt.Parts {
				pt.Pages += p.Pages
				pt.Bytes += p.Bytes
			}
		}
		out = append(out, pt)
	}
	return out, nil
}

// readColumns adds rel's columns (those in attnames, when the publication has a
// column list) from colSQL and returns their names.
func readColumns(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, colSQL string, rel *Relation, attnames []string) ([]string, error) {
	published := map[string]bool{}
	for _, a := range attnames {
		published[a] = true
	}
	rows, err := q.Query(ctx, colSQL, rel.RelationID)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var col RelationColumn
		var key bool
		if err := rows.Scan(&col.Name, &col.TypeOID, &col.TypeMod, &key); err != nil {
			rows.Close()
			return nil, err
		}
		if len(published) > 0 && !published[col.Name] {
			continue
		}
		if key {
			col.Flags = ColumnFlagKey
		}
		rel.Columns = append(rel.Columns, col)
		names = append(names, col.Name)
	}
	rows.Close()
	return names, rows.Err()
}

// readParts lists the leaf partitions of partitioned table oid (PostgreSQL
// 12+; a publication publishes through the root from 13), nil when it has
// none or one of them is not a plain table.
func readParts(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, oid uint32) ([]Part, error) {
	rows, err := q.Query(ctx, `SELECT c.oid, n.nspname::text, c.relname::text, c.relkind = 'r', c.relpages::int8, pg_catalog.pg_table_size(c.oid)
		FROM pg_catalog.pg_partition_tree($1) t
		JOIN pg_catalog.pg_class c ON c.oid = t.relid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE t.isleaf ORDER BY 2, 3`, oid)
	if err != nil {
		return nil, err
	}
	var parts []Part
	var p Part
	var plain bool
	allPlain := true
	if _, err := pgx.ForEachRow(rows, []any{&p.OID, &p.Schema, &p.Name, &plain, &p.Pages, &p.Bytes}, func() error {
		parts = append(parts, p)
		allPlain = allPlain && plain
		return nil
	}); err != nil {
		return nil, err
	}
	if !allPlain {
		return nil, nil
	}
	return parts, nil
}
