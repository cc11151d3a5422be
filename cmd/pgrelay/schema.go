package main

// The hooks of the schema steps (apply/schemacopy) into a session: the
// pre-data step before the snapshot copy, the end of a migration that caught
// up, `pgrelay sequences`, and the cut-over section of `pgrelay status`.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// carryPreData creates on the target, before the snapshot copy, the schema
// objects the copy and the tables may need (PGRELAY_SCHEMA=all).
func carryPreData(ctx context.Context, e *env, tgt target, srcConn *pgx.Conn) error {
	_, err := schemacopy.PreData(ctx, e.cfg.schemaCopy(e.log), srcConn, tgt)
	return err
}

// finishMigration ends a migrate that caught up at caughtUp: the sequences
// set to the source's values, the rest of the schema carried, the report
// kept on the target for status and returned for printing.
func finishMigration(ctx context.Context, e *env, tgt target, srcConn *pgx.Conn, caughtUp source.LSN) (*sink.CutoverReport, error) {
	states, err := tgt.TableStates(ctx, e.cfg.Slot)
	if err != nil {
		return nil, err
	}
	rep, err := schemacopy.Finish(ctx, e.cfg.schemaCopy(e.log), srcConn, tgt, caughtUp, states)
	if err != nil {
		return nil, err
	}
	if err := schemacopy.Record(ctx, tgt, e.cfg.Slot, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// printMigrationReport writes the report after migrate's "caught up" line.
func printMigrationReport(w io.Writer, rep *sink.CutoverReport) {
	if rep != nil {
		_ = schemacopy.Render(w, rep)
	}
}

// runSequences is `pgrelay sequences`: the target's sequences set to the
// source's current values, while replicate runs or not. It is the step
// before an application switches over: stop its writes on the source, let
// replicate catch up, run this, switch.
func runSequences(ctx context.Context, e *env, _ []string) error {
	cfg := e.cfg
	src, err := connectTo(ctx, "source", cfg.SourceURL)
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := openTarget(ctx, cfg)
	if err != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	var schemas []string
	if cfg.Schema.Mode == schemacopy.ModeAll {
		published, err := source.ListPublication(ctx, src, cfg.Publication, 30*time.Second)
		if source.IsLockTimeout(err) {
			return fmt.Errorf("%s; run it again once it is released: %w", source.LockedHint, err)
		}
		if err != nil {
			return err
		}
		schemas = schemacopy.SequenceSchemas(published)
	}
	set, unset, err := schemacopy.SetSequences(ctx, cfg.schemaCopy(e.log), src, tgt, schemas)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "sequences: %d set to the source's values\n", set)
	for _, r := range unset {
		fmt.Fprintf(e.stdout, "  not set: %s: %s\n", r.Name, r.Reason)
	}
	if len(unset) > 0 {
		return fmt.Errorf("%d sequences could not be set (listed above)", len(unset))
	}
	return nil
}

// addCutover fills r's cut-over section: the last migration's report from
// the target, the target's sequences compared with the source's, the lag.
func addCutover(ctx context.Context, cfg *Config, src *pgx.Conn, tgt target, hasMeta bool, applied source.LSN, r *statusReport) error {
	var rep *sink.CutoverReport
	if rec, ok := tgt.(sink.CutoverRecorder); ok && hasMeta {
		got, found, err := rec.Cutover(ctx, cfg.Slot)
		if err != nil {
			return err
		}
		if found {
			rep = &got
		}
	}
	var behind []string
	if checker, ok := tgt.(sink.SequenceChecker); ok {
		var schemas []string
		if cfg.Schema.Mode == schemacopy.ModeAll {
			published, err := source.ListPublication(ctx, src, cfg.Publication, 5*time.Second)
			if err == nil {
				schemas = schemacopy.SequenceSchemas(published)
			}
		}
		scfg := cfg.schemaCopy(nil)
		scfg.LockWait = 5 * time.Second
		seqs, err := schemacopy.ReadSequences(ctx, scfg, src, schemas)
		switch {
		case source.IsLockTimeout(err):
			r.CutoverNote = "the sequences could not be compared with the source's: " + source.LockedHint
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
	rd := schemacopy.Ready(rep, applied, r.LagBytes, behind)
	r.Cutover = &rd
	return nil
}

// printCutover writes the cut-over section of status's text.
func printCutover(w io.Writer, r *statusReport) {
	rd := r.Cutover
	if rd == nil {
		return
	}
	fmt.Fprintf(w, "\ncut-over\t")
	if rd.Ready {
		fmt.Fprintf(w, "READY: caught up, sequences at the source's values, nothing left out\n")
	} else {
		fmt.Fprintf(w, "not ready: %s\n", strings.Join(rd.NotReady, "; "))
	}
	if rd.LastMigration != nil {
		fmt.Fprintf(w, "last migrate\t%s (PGRELAY_SCHEMA=%s)\n", rd.LastMigration.UTC().Format(time.RFC3339), rd.Schema)
	}
	switch {
	case rd.SequencesBehind == nil:
		fmt.Fprintf(w, "sequences\tnot compared\n")
	case len(rd.SequencesBehind) == 0:
		fmt.Fprintf(w, "sequences\tat the source's values\n")
	default:
		fmt.Fprintf(w, "sequences\tbehind the source: %s\n", strings.Join(rd.SequencesBehind, ", "))
	}
	for _, o := range rd.LeftOut {
		what := "left out"
		if o.State != sink.ObjectLeftOut && o.State != sink.ObjectDeferred {
			what = "at the switch"
		}
		fmt.Fprintf(w, "%s\t%s %s: %s\n", what, o.Kind, o.Name, o.Reason)
	}
	if r.CutoverNote != "" {
		fmt.Fprintf(w, "note\t%s\n", r.CutoverNote)
	}
}
