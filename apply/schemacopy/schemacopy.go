// Package schemacopy carries to the target, with the replicated tables, the
// rest of their schema, so that an application can switch over to it: the
// sequences their columns use (also those no column owns), and, on a
// PostgreSQL target, partitioned tables, defaults, constraints, foreign keys,
// triggers, views, materialized views, functions, procedures, aggregates,
// types, comments and, as an option, grants (schema.ReadObjects reads them
// from the source catalog).
//
// A migration runs it in three places: PreData before the snapshot copy
// (types, functions, sequences, partitioned tables published through their
// root, which the copy loads into), Finish once caught up (sequences set to
// the source's values, then what must not get in the way of the copy and of
// apply: foreign keys, triggers, views, …, and materialized views filled),
// and SetSequences alone on demand while replicating, the step before an
// application switches over. What could not be carried is reported, never
// dropped in silence, and the report is kept on the target for status
// (Readiness).
package schemacopy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// The values of PGRELAY_SCHEMA.
const (
	// ModeTables carries the published tables (with their keys, indexes and
	// portable defaults) and the sequences their columns use.
	ModeTables = "tables"
	// ModeAll carries the rest of their schema too.
	ModeAll = "all"
)

// Config says what to carry.
type Config struct {
	// Schema is ModeTables or ModeAll.
	Schema      string
	Publication string
	// Grants carries the privileges granted on what is carried (ModeAll).
	Grants bool
	// Skip are source schemas never read (pgrelay's metadata schema).
	Skip []string
	// LockWait bounds each wait for a source lock while reading (0: 30 s).
	LockWait time.Duration
	Log      *slog.Logger
}

// Validate checks the settings and applies defaults.
func (c *Config) Validate() error {
	switch c.Schema {
	case "":
		c.Schema = ModeAll
	case ModeTables, ModeAll:
	default:
		return fmt.Errorf("schemacopy: schema %q: expected %s or %s", c.Schema, ModeTables, ModeAll)
	}
	if c.LockWait <= 0 {
		c.LockWait = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

func (c *Config) objectOptions() schema.ObjectOptions {
	return schema.ObjectOptions{Publication: c.Publication, Grants: c.Grants, Skip: c.Skip, LockWait: c.LockWait}
}

// PreData creates on the target, before the snapshot copy, the objects the
// copy and the tables may need (schema.PreData), and returns what became of
// them. Objects the target refuses now are deferred to Finish. With
// ModeTables it does nothing. A source it cannot read (a lock held for long)
// leaves everything to Finish, with a warning.
func PreData(ctx context.Context, cfg Config, src *pgx.Conn, tgt any) ([]sink.ObjectResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Schema != ModeAll {
		return nil, nil
	}
	objs, err := schema.ReadObjects(ctx, src, cfg.objectOptions())
	switch {
	case errors.Is(err, schema.ErrObjectsTooOld):
		return nil, nil // Finish reports it
	case source.IsLockTimeout(err):
		cfg.Log.Warn("could not read the source's schema objects before the copy: "+source.LockedHint+"; they are created at the end of the migration", "error", err.Error())
		return nil, nil
	case err != nil:
		return nil, err
	}
	carrier, ok := tgt.(sink.SchemaCarrier)
	if !ok {
		return nil, nil // Finish reports them
	}
	pre := phaseObjects(objs.Objects, schema.PreData)
	if len(pre) == 0 {
		return nil, nil
	}
	start := time.Now()
	results, err := carrier.CarryObjects(ctx, schema.PreData, pre)
	if err != nil {
		return nil, err
	}
	c := count(results)
	cfg.Log.Info("schema objects before the copy", "created", c[sink.ObjectCreated], "present", c[sink.ObjectPresent],
		"deferred", c[sink.ObjectDeferred], "took", time.Since(start).Round(time.Millisecond))
	return results, nil
}

// phaseObjects are the objects of objs of phase and earlier phases.
func phaseObjects(objs []*schema.Object, phase schema.Phase) []*schema.Object {
	var out []*schema.Object
	for _, o := range objs {
		if o.Phase <= phase {
			out = append(out, o)
		}
	}
	return out
}

func count(results []sink.ObjectResult) map[sink.ObjectState]int {
	c := map[sink.ObjectState]int{}
	for _, r := range results {
		c[r.State]++
	}
	return c
}

// Finish ends a migration that caught up at caughtUp: it sets the target's
// sequences to the source's values, creates the rest of the schema
// (ModeAll), fills the materialized views, and records the report on the
// target (sink.CutoverRecorder), which it returns. states are the slot's
// table states, for the rows the copy copied.
func Finish(ctx context.Context, cfg Config, src *pgx.Conn, tgt any, caughtUp source.LSN, states []sink.TableState) (*sink.CutoverReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &sink.CutoverReport{Schema: cfg.Schema, CaughtUpLSN: caughtUp}
	for _, st := range states {
		rep.Rows += st.Rows
	}
	var objs *schema.SourceObjects
	var notRead *sink.ObjectResult
	if cfg.Schema == ModeAll {
		var err error
		objs, err = schema.ReadObjects(ctx, src, cfg.objectOptions())
		switch {
		case errors.Is(err, schema.ErrObjectsTooOld):
			notRead = &sink.ObjectResult{Kind: schema.KindSchema, Name: "objects", State: sink.ObjectLeftOut,
				Reason: fmt.Sprintf("the source is older than PostgreSQL %d, the oldest whose catalog pgrelay reads the schema from: only the tables and their sequences are carried; set PGRELAY_SCHEMA=tables to say that is meant", schema.MinObjectsMajor)}
		case source.IsLockTimeout(err):
			return nil, fmt.Errorf("caught up, but the schema objects could not be read: %s; once it is released, run pgrelay migrate again: %w", source.LockedHint, err)
		case err != nil:
			return nil, err
		}
	}
	var schemas []string
	if objs != nil {
		schemas = objs.Schemas
	}
	set, unset, err := SetSequences(ctx, cfg, src, tgt, schemas)
	if source.IsLockTimeout(err) {
		return nil, fmt.Errorf("caught up, but %w", err)
	}
	if err != nil {
		return nil, err
	}
	rep.Sequences = set
	rep.Objects = append(rep.Objects, unset...)
	if notRead != nil {
		rep.Objects = append(rep.Objects, *notRead)
	}
	if published, err := source.ListPublication(ctx, src, cfg.Publication, cfg.LockWait); err == nil {
		rep.Tables = len(published)
	} else {
		rep.Tables = len(states)
	}
	if objs != nil {
		start := time.Now()
		results, err := carryAll(ctx, tgt, objs.Objects)
		if err != nil {
			return nil, err
		}
		rep.Objects = append(rep.Objects, results...)
		c := count(results)
		cfg.Log.Info("schema objects", "created", c[sink.ObjectCreated], "present", c[sink.ObjectPresent],
			"left_out", c[sink.ObjectLeftOut], "not_carried", c[sink.ObjectNotCarried], "took", time.Since(start).Round(time.Millisecond))
	}
	for _, r := range rep.Objects {
		switch {
		case r.State == sink.ObjectLeftOut:
			cfg.Log.Warn("schema object left out", "kind", string(r.Kind), "name", r.Name, "why", r.Reason)
		case r.Incomplete:
			cfg.Log.Warn("schema object needs a hand at the switch", "kind", string(r.Kind), "name", r.Name, "what", r.Reason)
		}
	}
	rep.FinishedAt = time.Now().UTC()
	return rep, nil
}

// Record keeps rep on the target for status, under slot, when the target
// can (sink.CutoverRecorder).
func Record(ctx context.Context, tgt any, slot string, rep *sink.CutoverReport) error {
	rec, ok := tgt.(sink.CutoverRecorder)
	if !ok || rep == nil {
		return nil
	}
	rep.Slot = slot
	return rec.RecordCutover(ctx, *rep)
}

// carryAll carries objs through the target's SchemaCarrier (PostData, which
// retries what PreData deferred); a target without one carries none of them.
func carryAll(ctx context.Context, tgt any, objs []*schema.Object) ([]sink.ObjectResult, error) {
	carrier, ok := tgt.(sink.SchemaCarrier)
	if !ok {
		results := make([]sink.ObjectResult, 0, len(objs))
		for _, o := range objs {
			r := sink.ObjectResult{Kind: o.Kind, Name: o.Name, State: sink.ObjectLeftOut, Reason: o.LeftOut}
			if r.Reason == "" {
				r.Reason = "this kind of target does not carry schema objects"
			}
			results = append(results, r)
		}
		return results, nil
	}
	results, err := carrier.CarryObjects(ctx, schema.PostData, objs)
	if err != nil {
		return nil, err
	}
	// What needs an object the target could not make is left out with it,
	// named after it rather than after the target's error about it.
	gone := map[string]bool{}
	for i, r := range results {
		if r.State == sink.ObjectLeftOut && objs[i].LeftOut == "" {
			gone[objs[i].Key()] = true
		}
	}
	for _, o := range schema.LeftOutNeeds(objs, gone) {
		for i := range results {
			if objs[i] == o && results[i].State == sink.ObjectLeftOut {
				results[i].Reason = o.LeftOut + "; " + results[i].Reason
			}
		}
	}
	return results, nil
}

// SetSequences sets the target's sequences to the source's values: those
// of the published tables' columns, and with schemas (ModeAll) every other
// sequence of those schemas. It returns how many it set, and a left-out
// result for each the source role may not read (naming the GRANT that lets
// it). The values are read now: after everything up to a caught-up marker
// is applied, a value read later is never behind the rows.
func SetSequences(ctx context.Context, cfg Config, src *pgx.Conn, tgt any, schemas []string) (int, []sink.ObjectResult, error) {
	if err := cfg.Validate(); err != nil {
		return 0, nil, err
	}
	setter, ok := tgt.(sink.SequenceSetter)
	if !ok {
		return 0, nil, nil
	}
	seqs, err := ReadSequences(ctx, cfg, src, schemas)
	if source.IsLockTimeout(err) {
		return 0, nil, fmt.Errorf("the sequences could not be read: %s; once it is released, run pgrelay migrate or pgrelay sequences again to set them: %w", source.LockedHint, err)
	}
	if err != nil {
		return 0, nil, err
	}
	var readable []source.Sequence
	var unset []sink.ObjectResult
	user := src.Config().User
	seen := map[string]bool{}
	for _, q := range seqs {
		name := pgx.Identifier{q.Schema, q.Name}.Sanitize()
		if !q.Readable {
			if !seen[name] {
				seen[name] = true
				unset = append(unset, sink.ObjectResult{Kind: schema.KindSequence, Name: q.Schema + "." + q.Name, State: sink.ObjectLeftOut,
					Reason: "not set: the source role may not read it; " + q.GrantRead(user)})
			}
			continue
		}
		readable = append(readable, q)
	}
	if err := setter.SetSequences(ctx, readable); err != nil {
		return 0, nil, err
	}
	distinct := map[string]bool{}
	for _, q := range readable {
		distinct[q.Schema+"."+q.Name] = true
	}
	if len(distinct) > 0 {
		cfg.Log.Info("sequences set", "count", len(distinct))
	}
	return len(distinct), unset, nil
}

// ReadSequences reads the sequences SetSequences sets, with their values,
// waiting at most cfg.LockWait for a locked table.
func ReadSequences(ctx context.Context, cfg Config, src *pgx.Conn, schemas []string) ([]source.Sequence, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Schema != ModeAll {
		schemas = nil
	}
	return source.ReadSequencesWaiting(ctx, src, cfg.Publication, schemas, cfg.LockWait)
}

// SequenceSchemas are the schemas whose other sequences ModeAll sets: those
// of the published tables.
func SequenceSchemas(published []source.PublishedName) []string {
	var out []string
	for _, p := range published {
		if !slices.Contains(out, p.Schema) {
			out = append(out, p.Schema)
		}
	}
	slices.Sort(out)
	return out
}
