package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/schema"
)

// A migration attaches the target's partitions to their partitioned table
// (PGRELAY_SCHEMA=all, partitions published on their own). The source's
// column changes to a partitioned table reach pgrelay partition by
// partition, in each one's next Relation message, which PostgreSQL refuses
// to apply to an attached partition: the column is its partitioned table's.
// The first partition to bring a change makes it on the partitioned table
// (schema.AlterPartition), which makes it on every partition, as on the
// source, in the transaction that stores the partition's definition; the
// definitions stored for the other partitions follow in that same
// transaction (schema.FollowPartitionChange), so that their own Relation
// messages find nothing left to do. A crash leaves both or neither.

// attachment is where a target table stands in a partition tree.
type attachment struct {
	parent, root tableName
	// detach: the source's table is no longer a partition of root's tree
	// (detachedOnSource).
	detach bool
	// siblings are the stored definitions of the other partitions (leaves)
	// of root's tree.
	siblings []*storedRow
}

// partitionOf tells whether target table qname is attached as a partition,
// with its parent, its tree's root and the stored definitions of the other
// partitions of that tree; nil when it is a table of its own.
func partitionOf(ctx context.Context, conn *pgx.Conn, qname string) (*attachment, error) {
	var a attachment
	err := conn.QueryRow(ctx, `WITH RECURSIVE up (relid, depth) AS (
			SELECT c.oid, 0 FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1) AND c.relispartition
			UNION ALL
			SELECT i.inhparent, up.depth + 1 FROM up
			JOIN pg_catalog.pg_class c ON c.oid = up.relid AND c.relispartition
			JOIN pg_catalog.pg_inherits i ON i.inhrelid = up.relid)
		SELECT pn.nspname, p.relname, rn.nspname, r.relname
		FROM pg_catalog.pg_class p JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace,
			pg_catalog.pg_class r JOIN pg_catalog.pg_namespace rn ON rn.oid = r.relnamespace
		WHERE p.oid = (SELECT relid FROM up WHERE depth = 1)
			AND r.oid = (SELECT relid FROM up ORDER BY depth DESC LIMIT 1)`, qname).Scan(&a.parent.schema, &a.parent.name, &a.root.schema, &a.root.name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up the partitioned table of %s: %w", qname, err)
	}
	rows, err := conn.Query(ctx, `WITH RECURSIVE down (relid) AS (
			SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
			UNION ALL
			SELECT i.inhrelid FROM down JOIN pg_catalog.pg_inherits i ON i.inhparent = down.relid)
		SELECT r.schema, r.name, r.definition, coalesce(r.slot, ''), coalesce(r.relation_oid::int8, 0)
		FROM down JOIN pg_catalog.pg_class c ON c.oid = down.relid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN pgrelay.relation r ON r.schema = n.nspname AND r.name = c.relname
		WHERE c.oid <> pg_catalog.to_regclass($2) AND c.relkind <> 'p'
		ORDER BY r.schema, r.name`, a.root.String(), qname)
	if err != nil {
		return nil, fmt.Errorf("read the stored definitions of the partitions of %s: %w", a.root, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r storedRow
		var def []byte
		var oid int64
		if err := rows.Scan(&r.at.schema, &r.at.name, &def, &r.slot, &oid); err != nil {
			return nil, fmt.Errorf("read the stored definitions of the partitions of %s: %w", a.root, err)
		}
		r.oid = uint32(oid)
		r.def = new(schema.Table)
		if err := json.Unmarshal(def, r.def); err != nil {
			return nil, fmt.Errorf("decode the stored definition of %s: %w", r.at, err)
		}
		a.siblings = append(a.siblings, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the stored definitions of the partitions of %s: %w", a.root, err)
	}
	return &a, nil
}

// partition is where prev's target table stands in a partition tree, nil
// when it is a table of its own; t is its new version.
func (s *Sink) partition(ctx context.Context, conn *pgx.Conn, t, prev *schema.Table) (*attachment, error) {
	if _, ok := s.dialect.(schema.PostgresDialect); !ok {
		return nil, nil
	}
	a, err := partitionOf(ctx, conn, quotedTable(s.dialect, prev))
	if err != nil || a == nil {
		return nil, err
	}
	if a.detach, err = s.detachedOnSource(ctx, t, a); err != nil {
		return nil, err
	}
	if a.detach {
		s.logger().Info("the source's table is no longer a partition of the partitioned table it is attached to on the target: detached there too, and changed on its own",
			"table", quotedTable(s.dialect, t), "partitioned_table", a.root.plain())
	}
	return a, nil
}

// detachedOnSource tells a partition attached on the target (a) whose
// source relation is no longer a partition of a table of a's root's name:
// detached since, or attached elsewhere. Its changes are its own then, not
// its partitioned table's. Unknown (no source facts, the relation gone): no.
func (s *Sink) detachedOnSource(ctx context.Context, t *schema.Table, a *attachment) (bool, error) {
	pr, ok := s.indexes.(schema.PartitionRootReader)
	if !ok || t.RelationID == 0 {
		return false, nil
	}
	root, partition, exists, err := pr.PartitionRoot(ctx, t.RelationID)
	if err != nil || !exists {
		return false, err
	}
	return !partition || tableName{root.Schema, root.Name} != a.root, nil
}

// siblingUpdate is a definition to store for another partition of the tree
// a change was made through.
type siblingUpdate struct {
	row *storedRow
	def []byte
}

// followSiblings are the definitions of a's other partitions after prev→t
// was made through their partitioned table.
func followSiblings(a *attachment, prev, t *schema.Table) ([]siblingUpdate, error) {
	var out []siblingUpdate
	for _, r := range a.siblings {
		def, err := json.Marshal(schema.FollowPartitionChange(prev, t, r.def))
		if err != nil {
			return nil, fmt.Errorf("encode the definition of %s: %w", r.at, err)
		}
		out = append(out, siblingUpdate{row: r, def: def})
	}
	return out, nil
}

// args are storeDefinitionSQL's parameters for u.
func (u siblingUpdate) args() [][]byte {
	var oid []byte
	if u.row.oid != 0 {
		oid = fmt.Appendf(nil, "%d", u.row.oid)
	}
	return [][]byte{[]byte(u.row.at.schema), []byte(u.row.at.name), u.def, nullIfEmpty(u.row.slot), oid}
}

// treeLocked reports whether holders (a condition on pg_locks, as
// relationLocked's) hold a lock on any relation of the partition tree under
// root (quoted), root included.
func treeLocked(ctx context.Context, conn *pgx.Conn, root, holders string) (bool, error) {
	var held bool
	err := conn.QueryRow(ctx, `WITH RECURSIVE down (relid) AS (
			SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
			UNION ALL
			SELECT i.inhrelid FROM down JOIN pg_catalog.pg_inherits i ON i.inhparent = down.relid)
		SELECT EXISTS (SELECT FROM pg_catalog.pg_locks
			WHERE locktype = 'relation' AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
				AND relation IN (SELECT relid FROM down) AND `+holders+`)`, root).Scan(&held)
	return held, err
}
