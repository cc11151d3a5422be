package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/source"
)

// VerifyTarget is verify's view of the target: the side it compares
// (verify.Target) and what the command asks of it first.
type VerifyTarget interface {
	verify.Target
	// HasMetadata reports whether pgrelay's metadata exists on the target.
	HasMetadata() bool
	// CopyInProgress reports whether the slot's snapshot copy is unfinished.
	CopyInProgress(ctx context.Context) (bool, error)
	// Locate finds the target table of the source table src (by its OID
	// where the target knows it).
	Locate(ctx context.Context, src verify.TableName, relationOID uint32) (verify.TableName, bool, error)
	Close(ctx context.Context) error
}

// Verify runs `pgrelay verify`: it compares every table of the publication
// between the source and the target (apply/verify).
func (r *Relay) Verify(ctx context.Context) (*verify.Report, error) {
	cfg := r.cfg
	if r.target.OpenVerify == nil {
		return nil, errors.New("verify: this build cannot compare tables on this kind of target yet")
	}
	srcConn, err := source.ConnectPlain(ctx, cfg.SourceURL)
	if err != nil {
		return nil, err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	tgt, err := r.target.OpenVerify(ctx, cfg.Slot)
	if err != nil {
		return nil, err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	src, err := verify.NewPostgresSource(ctx, srcConn)
	if err != nil {
		return nil, err
	}
	if busy, err := tgt.CopyInProgress(ctx); err != nil {
		return nil, err
	} else if busy {
		return nil, fmt.Errorf("verify: the snapshot copy of slot %q has not finished, so the target holds only part of the rows: run verify once pgrelay migrate or replicate has finished the copy (pgrelay status shows it)", cfg.Slot)
	}

	exists, err := source.PublicationExists(ctx, srcConn, cfg.Publication)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("verify: publication %q does not exist on the source: set PGRELAY_PUBLICATION to the publication pgrelay replicates", cfg.Publication)
	}
	published, err := source.ReadPublishedTables(ctx, srcConn, cfg.Publication, src.Major())
	if err != nil {
		return nil, verify.LockHint(err)
	}
	if len(published) == 0 {
		return nil, fmt.Errorf("verify: publication %q publishes no table: nothing to compare", cfg.Publication)
	}
	tables := make([]verify.Table, 0, len(published))
	for _, pt := range published {
		name := verify.TableName{Schema: pt.Relation.Namespace, Name: pt.Relation.Name}
		target, _, err := tgt.Locate(ctx, name, pt.Relation.RelationID)
		if err != nil {
			return nil, err
		}
		if target != name {
			r.log.Info("the target table still has the name the source table had before it was renamed: pgrelay renames it with the next change to it",
				"table", name.String(), "target_table", target.String())
		}
		tables = append(tables, verify.Table{Source: name, Target: target, Columns: pt.Columns, SourceFilter: pt.RowFilter})
	}

	vcfg := verify.Config{
		ChunkRows: cfg.VerifyChunkRows,
		Wait:      cfg.VerifyWait,
		Log:       r.log,
		// Only a running replicator moves the target: while none streams from
		// the slot, differences are reported as read, without waiting.
		Live: func(ctx context.Context) (bool, error) {
			if !tgt.HasMetadata() {
				return false, nil
			}
			slot, err := source.ReadSlot(ctx, srcConn, cfg.Slot)
			return slot.Exists && slot.Active, err
		},
	}
	report, err := verify.Compare(ctx, vcfg, src, tgt, tables)
	var missing *verify.MissingTablesError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("verify: %w: pgrelay creates a published table there with the snapshot copy or with the first change to it; one dropped on the target comes back with a new copy (PGRELAY_SNAPSHOT=always pgrelay migrate); or remove it from publication %q", err, cfg.Publication)
	}
	return report, err
}
