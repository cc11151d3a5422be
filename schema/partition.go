package schema

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PartitionRootReader is implemented by fact readers that can tell the
// partitioned table a source relation is a partition of.
type PartitionRootReader interface {
	// PartitionRoot returns the top partitioned table of the partition tree
	// relation relationID belongs to on the source now; partition is false
	// for a table of its own (never attached, or detached since), exists is
	// false when the relation is gone.
	PartitionRoot(ctx context.Context, relationID uint32) (root QualifiedName, partition, exists bool, err error)
}

// PartitionRoot implements PartitionRootReader.
func (s *SourceFacts) PartitionRoot(ctx context.Context, relationID uint32) (root QualifiedName, partition, exists bool, err error) {
	err = s.inTx(ctx, fmt.Sprintf("find the partitioned table of source relation %d", relationID), func(tx pgx.Tx) error {
		// Up the tree through pg_inherits while the relation is a
		// partition (not an inheritance child); the last one is the root.
		err := tx.QueryRow(ctx, `WITH RECURSIVE up (relid, depth) AS (
				SELECT c.oid, 0 FROM pg_catalog.pg_class c WHERE c.oid = $1
				UNION ALL
				SELECT i.inhparent, up.depth + 1 FROM up
				JOIN pg_catalog.pg_class c ON c.oid = up.relid AND c.relispartition
				JOIN pg_catalog.pg_inherits i ON i.inhrelid = up.relid)
			SELECT n.nspname, r.relname, up.depth > 0 FROM up
			JOIN pg_catalog.pg_class r ON r.oid = up.relid
			JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace
			ORDER BY up.depth DESC LIMIT 1`, relationID).Scan(&root.Schema, &root.Name, &partition)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		exists = err == nil
		return err
	})
	if !partition {
		root = QualifiedName{}
	}
	return root, partition, exists, err
}

// FollowPartitionChange returns sib, the definition another partition of the
// same partitioned table was last built to, as AlterPartition(prev, t, root)
// leaves it on the target: the column changes made through their
// partitioned table are its own too (added, dropped, renamed and retyped
// columns, a NOT NULL dropped), while what is its own stays (attribute
// numbers, key, identity, the defaults of columns not retyped). A column
// added gets attribute number 0, unknown (the source numbers each
// partition's columns itself), so that the partition's own next definition
// matches it by name and finds nothing more to do.
func FollowPartitionChange(prev, t, sib *Table) *Table {
	out := *sib
	out.Columns = nil
	m := matchColumns(prev, t)
	inSib := map[string]int{}
	for k, c := range sib.Columns {
		inSib[c.Name] = k
	}
	inPrev := map[string]bool{}
	for _, p := range prev.Columns {
		inPrev[p.Name] = true
	}
	for j := range t.Columns {
		c := t.Columns[j]
		i, existed := m.prevOf[j]
		if !existed {
			c.Attnum, c.Key, c.KeyPosition, c.Identity = 0, false, 0, ""
			out.Columns = append(out.Columns, c)
			continue
		}
		p := &prev.Columns[i]
		k, ok := inSib[p.Name]
		if !ok {
			continue // not a column of sib's: nothing of it changed there
		}
		sc := sib.Columns[k]
		sc.Name = c.Name
		if p.TypeName != c.TypeName || p.Collation != c.Collation {
			sc.TypeOID, sc.TypeMod, sc.TypeName, sc.Type, sc.Collation = c.TypeOID, c.TypeMod, c.TypeName, c.Type, c.Collation
		}
		if p.TypeName != c.TypeName {
			sc.Default, sc.DefaultValue, sc.VolatileDefault, sc.PortableDefault = c.Default, c.DefaultValue, c.VolatileDefault, c.PortableDefault
		}
		if p.NotNull && !c.NotNull {
			sc.NotNull = false
		}
		out.Columns = append(out.Columns, sc)
	}
	// A column of sib's that prev did not know is not the partitioned
	// table's: it stays as it is.
	for _, sc := range sib.Columns {
		if !inPrev[sc.Name] && out.Column(sc.Name) == nil {
			out.Columns = append(out.Columns, sc)
		}
	}
	sibGen := map[string]int16{}
	for _, g := range sib.Generated {
		sibGen[g.Name] = g.Attnum
	}
	out.Generated = make([]GeneratedColumn, len(t.Generated))
	for i, g := range t.Generated {
		g.Attnum = sibGen[g.Name] // 0 when added
		out.Generated[i] = g
	}
	out.Types = t.Types
	return &out
}

// LearnsNumbers tells that t knows the attribute number of a column prev
// has without one (FollowPartitionChange's added columns): t's definition is
// then worth storing, though it needs no DDL, so that a later rename is
// told from a drop and an add.
func LearnsNumbers(prev, t *Table) bool {
	for _, p := range prev.Columns {
		if c := t.Column(p.Name); p.Attnum == 0 && c != nil && c.Attnum != 0 {
			return true
		}
	}
	return false
}

// ColumnsChanged names the columns of prev (by prev's names) that
// AlterTable(prev, t) drops (generated ones too, also one dropped to be
// added again with a new expression) and those it retypes (or gives
// another collation): what other objects of the target may depend on.
func ColumnsChanged(prev, t *Table) (dropped, retyped []string) {
	m := matchColumns(prev, t)
	for i, p := range prev.Columns {
		j, ok := m.newOf[i]
		switch {
		case !ok:
			dropped = append(dropped, p.Name)
		case p.TypeName != t.Columns[j].TypeName || p.Collation != t.Columns[j].Collation:
			retyped = append(retyped, p.Name)
		}
	}
	now := map[string]GeneratedColumn{}
	for _, g := range t.Generated {
		now[g.Name] = g
	}
	for _, g := range prev.Generated {
		if n, ok := now[g.Name]; !ok && t.Column(g.Name) == nil || ok && n.Expr != "" && (n.TypeName != g.TypeName || n.Expr != g.Expr) {
			dropped = append(dropped, g.Name)
		}
	}
	return dropped, retyped
}
