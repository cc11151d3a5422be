package relay

// The schema steps of a migration (apply/schemacopy, docs/migration.md): the
// pre-data objects before the snapshot copy, the end of a migrate that
// caught up (sequences, post-data objects, the report), `pgrelay sequences`,
// and the cut-over section of status.

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Migration is what a migrate that caught up did.
type Migration struct {
	// CaughtUp: the target holds every source transaction committed before
	// it.
	CaughtUp source.LSN
	// Report is its end's report (tables, rows, sequences set, schema
	// objects and what became of them); schemacopy.Render words it.
	Report *sink.CutoverReport
}

// schemaCopy is the configuration of the schema steps on tgt; log nil: quiet.
func (r *Relay) schemaCopy(tgt sink.MetadataReader, log bool) schemacopy.Config {
	c := schemacopy.Config{Schema: r.cfg.Schema, Publication: r.cfg.Publication, Grants: r.cfg.SchemaGrants,
		Skip: []string{tgt.MetadataSchema()}}
	if log {
		c.Log = r.log
	}
	return c
}

// carryPreData creates on the target, before the snapshot copy, the schema
// objects the copy and the tables may need (PGRELAY_SCHEMA=all).
func (r *Relay) carryPreData(ctx context.Context, tgt sink.Target, srcConn *pgx.Conn) error {
	_, err := schemacopy.PreData(ctx, r.schemaCopy(tgt, true), srcConn, tgt)
	return err
}

// finishMigration ends a migrate that caught up at caughtUp: pgoutput
// carries no sequence changes, so the sequences are set to the source's
// values, read now, after everything up to the marker was applied (a value
// read later is never behind the rows); then the rest of the schema is
// carried, and the report kept on the target for status.
func (r *Relay) finishMigration(ctx context.Context, tgt sink.Target, srcConn *pgx.Conn, caughtUp source.LSN) (*sink.CutoverReport, error) {
	states, err := tgt.TableStates(ctx, r.cfg.Slot)
	if err != nil {
		return nil, err
	}
	rep, err := schemacopy.Finish(ctx, r.schemaCopy(tgt, true), srcConn, tgt, caughtUp, states)
	if err != nil {
		return nil, err
	}
	if err := schemacopy.Record(ctx, tgt, r.cfg.Slot, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// Sequences runs `pgrelay sequences`: the target's sequences set to the
// source's current values, while replicate runs or not, the step before an
// application switches over. It returns how many it set and those it could
// not (the source role may not read them), with why.
func (r *Relay) Sequences(ctx context.Context) (int, []sink.ObjectResult, error) {
	src, err := source.ConnectPlain(ctx, r.cfg.SourceURL)
	if err != nil {
		return 0, nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := r.target.Open(ctx, ForApply)
	if err != nil {
		return 0, nil, err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	schemas, err := r.sequenceSchemas(ctx, src, 30*time.Second)
	if source.IsLockTimeout(err) {
		return 0, nil, fmt.Errorf("%s; run it again once it is released: %w", source.LockedHint, err)
	}
	if err != nil {
		return 0, nil, err
	}
	return schemacopy.SetSequences(ctx, r.schemaCopy(tgt, true), src, tgt, schemas)
}

// sequenceSchemas are the schemas whose other sequences PGRELAY_SCHEMA=all
// sets too: those of the published tables (none with tables).
func (r *Relay) sequenceSchemas(ctx context.Context, src *pgx.Conn, lockWait time.Duration) ([]string, error) {
	if r.cfg.Schema != schemacopy.ModeAll {
		return nil, nil
	}
	published, err := source.ListPublication(ctx, src, r.cfg.Publication, lockWait)
	if err != nil {
		return nil, err
	}
	return schemacopy.SequenceSchemas(published), nil
}

// addCutover fills rep's cut-over section: the last migration's report from
// the target, the target's sequences compared with the source's now, the
// lag.
func (r *Relay) addCutover(ctx context.Context, src *pgx.Conn, tgt sink.Target, hasMeta bool, rep *StatusReport) error {
	var last *sink.CutoverReport
	if rec, ok := tgt.(sink.CutoverRecorder); ok && hasMeta {
		got, found, err := rec.Cutover(ctx, r.cfg.Slot)
		if err != nil {
			return err
		}
		if found {
			last = &got
		}
	}
	var behind []string // nil: not compared
	if checker, ok := tgt.(sink.SequenceChecker); ok {
		const wait = 5 * time.Second
		schemas, err := r.sequenceSchemas(ctx, src, wait)
		var seqs []source.Sequence
		if err == nil {
			scfg := r.schemaCopy(tgt, false)
			scfg.LockWait = wait
			seqs, err = schemacopy.ReadSequences(ctx, scfg, src, schemas)
		}
		switch {
		case source.IsLockTimeout(err):
			rep.CutoverNote = "the sequences could not be compared with the source's: " + source.LockedHint
		case err != nil:
			return err
		default:
			if behind, err = checker.SequencesBehind(ctx, seqs); err != nil {
				return err
			}
			if behind == nil {
				behind = []string{}
			}
		}
	}
	var applied source.LSN
	if rep.AppliedLSN != nil {
		applied = rep.Stored
	}
	rd := schemacopy.Ready(last, applied, rep.LagBytes, behind)
	rep.Cutover = &rd
	return nil
}
