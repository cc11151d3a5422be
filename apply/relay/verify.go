package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Verify runs `pgrelay verify`: it compares every table of the publication
// between the source and the target (apply/verify), reading the target
// through its sink's verify session (sink.Verifier).
func (r *Relay) Verify(ctx context.Context) (*verify.Report, error) {
	cfg := r.cfg
	srcConn, err := source.ConnectPlain(ctx, cfg.SourceURL)
	if err != nil {
		return nil, err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	tgtSink, err := r.target.Open(ctx, ForInspection)
	if err != nil {
		return nil, err
	}
	defer tgtSink.Close(context.WithoutCancel(ctx))
	verifier, ok := tgtSink.(sink.Verifier)
	if !ok {
		return nil, errors.New("verify: this kind of target cannot be read for a comparison")
	}
	sess, err := verifier.OpenVerify(ctx, cfg.Slot)
	if err != nil {
		return nil, err
	}
	defer sess.Close(context.WithoutCancel(ctx))
	src, err := verify.NewPostgresSource(ctx, srcConn)
	if err != nil {
		return nil, err
	}
	tgt := verify.NewTarget(sess)
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
		// The target's own name for it (a MySQL target maps schema public
		// to its database), which a table renamed on the source lacks.
		mapped := name
		if target != name {
			if mapped, _, err = tgt.Locate(ctx, name, 0); err != nil {
				return nil, err
			}
		}
		if target != mapped {
			r.log.Info("the target table still has the name the source table had before it was renamed: pgrelay renames it with the next change to it",
				"table", pgquote.Name(name.Schema, name.Name), "target_table", pgquote.Name(target.Schema, target.Name))
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
