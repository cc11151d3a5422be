package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var (
	_ sink.SchemaCarrier   = (*Sink)(nil)
	_ sink.CutoverRecorder = (*Sink)(nil)
	_ sink.SequenceChecker = (*Sink)(nil)
)

// objectLockWait bounds how long creating one object waits for a lock on a
// target table: a prepared transaction pgrelay holds there (its COMMIT
// PREPARED comes with the source's) would make it wait for ever.
const objectLockWait = 10 * time.Second

// CarryObjects implements sink.SchemaCarrier. Each object is created in a
// transaction of its own on the metadata session, with check_function_bodies
// off (as pg_dump restores: a function's body may name what comes later) and
// waits for table locks bounded by objectLockWait; one the target refuses is
// tried again after the others, in passes, until a pass creates nothing more
// (the source's dependencies order the objects, but not every one is
// recorded there: a PL/pgSQL body's are not). What still fails is deferred
// in PreData, left out with the target's error in PostData.
func (s *Sink) CarryObjects(ctx context.Context, phase schema.Phase, objs []*schema.Object) ([]sink.ObjectResult, error) {
	results := make([]sink.ObjectResult, len(objs))
	var todo, listed []int
	for i, o := range objs {
		results[i] = sink.ObjectResult{Kind: o.Kind, Name: o.Name}
		switch {
		case o.LeftOut != "":
			results[i].State, results[i].Reason = sink.ObjectLeftOut, o.LeftOut
			if o.Present != "" && o.Phase <= phase {
				listed = append(listed, i)
			}
		case o.Phase > phase:
			results[i].State, results[i].Reason = sink.ObjectDeferred, "comes "+o.Phase.String()
		default:
			todo = append(todo, i)
		}
	}
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		// What pgrelay does not make but a hand made on the target is there.
		for _, i := range listed {
			present, err := objectPresent(ctx, conn, objs[i])
			if err != nil {
				return err
			}
			if present {
				results[i].State, results[i].Reason = sink.ObjectPresent, ""
			}
		}
		failed := map[int]error{}
		// Tables a prepared transaction holds on the target: DDL on them
		// would wait until its COMMIT PREPARED, which comes with the
		// source's, so their objects are not tried (nor waited for).
		held := map[schema.QualifiedName]bool{}
		heldTable := func(o *schema.Object) (bool, error) {
			tables := []schema.QualifiedName{o.Table}
			if o.ForeignKey != nil {
				tables = append(tables, o.ForeignKey.RefTable)
			}
			for _, t := range tables {
				if t.Name == "" {
					continue
				}
				h, known := held[t]
				if !known {
					var err error
					if h, err = heldByPrepared(ctx, conn, pgx.Identifier{t.Schema, t.Name}.Sanitize()); err != nil {
						return false, err
					}
					held[t] = h
				}
				if h {
					return true, nil
				}
			}
			return false, nil
		}
		for len(todo) > 0 {
			var again []int
			for _, i := range todo {
				o := objs[i]
				present, err := objectPresent(ctx, conn, o)
				if err != nil {
					return err
				}
				if present {
					results[i].State = sink.ObjectPresent
					results[i].Reason, results[i].Incomplete = o.Note, o.Incomplete
					delete(failed, i)
					continue
				}
				if h, err := heldTable(o); err != nil {
					return err
				} else if h {
					failed[i] = errHeldByPrepared
					continue
				}
				if err := createObject(ctx, conn, o); err != nil {
					if conn.IsClosed() || ctx.Err() != nil {
						return err
					}
					failed[i] = err
					if sqlState(err) == "55P03" {
						held[o.Table] = true // a lock: not again in this run
					} else {
						again = append(again, i)
					}
					continue
				}
				delete(failed, i)
				results[i].State = sink.ObjectCreated
				results[i].Reason, results[i].Incomplete = o.Note, o.Incomplete
			}
			if len(again) == len(todo) {
				break // no progress
			}
			todo = again
		}
		for i, err := range failed {
			results[i].Reason = objectRefused(objs[i], err)
			results[i].State = sink.ObjectLeftOut
			if phase == schema.PreData {
				results[i].State = sink.ObjectDeferred
			}
		}
		if phase == schema.PostData {
			return s.refreshViews(ctx, conn, objs, results)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: create the schema objects (%s): %w", phase, err)
	}
	return results, nil
}

// objectPresent reports whether the target has o: its Present query
// returns true. A query that fails (no such object) says no, unless the
// connection is gone.
func objectPresent(ctx context.Context, conn *pgx.Conn, o *schema.Object) (bool, error) {
	if o.Present == "" {
		return false, nil
	}
	var present bool
	err := conn.QueryRow(ctx, o.Present).Scan(&present)
	if err != nil {
		if conn.IsClosed() || ctx.Err() != nil {
			return false, err
		}
		return false, nil
	}
	return present, nil
}

// createObject runs o's statements in a transaction of their own.
func createObject(ctx context.Context, conn *pgx.Conn, o *schema.Object) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SET LOCAL check_function_bodies = off", objectLockWait.Milliseconds())); err != nil {
			return err
		}
		for _, stmt := range o.Create {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// errHeldByPrepared is why an object on a table a prepared transaction
// holds on the target is not created.
var errHeldByPrepared = errors.New("a prepared transaction holds its table on the target")

// objectRefused says why the target did not take o, and what to do.
func objectRefused(o *schema.Object, err error) string {
	if errors.Is(err, errHeldByPrepared) {
		return "not created: a prepared transaction holds its table on the target (its COMMIT PREPARED comes with the source's): run pgrelay migrate again once the source has committed or rolled it back"
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "the target refused it: " + err.Error()
	}
	switch {
	case pgErr.Code == "55P03":
		return "a lock on its table was held for " + objectLockWait.String() + " (a prepared transaction? see pg_prepared_xacts on the target): run pgrelay migrate again once it ends"
	case o.Kind == schema.KindExtension && (pgErr.Code == "58P01" || pgErr.Code == "0A000" || pgErr.Code == "22023"):
		return "the target server does not have extension " + o.Name + " (" + describe(err) + "): install the package that provides it there (see pg_available_extensions), then run pgrelay migrate again"
	case pgErr.Code == "42501":
		return "the target role may not create it: " + describe(err)
	case pgErr.Code == "42809" && (o.Kind == schema.KindPartition || o.Kind == schema.KindPartitioned):
		return "the target refused it: " + describe(err) + "; a table of that name copied before PGRELAY_SCHEMA=all is a plain table: drop it on the target and copy again (PGRELAY_SNAPSHOT=always)"
	}
	return "the target refused it: " + describe(err)
}

// refreshViews fills the materialized views the source holds populated, in
// objs' order (one may read another), once they are on the target.
func (s *Sink) refreshViews(ctx context.Context, conn *pgx.Conn, objs []*schema.Object, results []sink.ObjectResult) error {
	for i, o := range objs {
		if o.Refresh == "" || results[i].State != sink.ObjectCreated && results[i].State != sink.ObjectPresent {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", objectLockWait.Milliseconds())); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, o.Refresh)
			return err
		})
		if err != nil {
			if conn.IsClosed() || ctx.Err() != nil {
				return err
			}
			results[i].Incomplete = true
			results[i].Reason = "not filled: " + objectRefused(o, err)
		}
	}
	return nil
}

// RecordCutover implements sink.CutoverRecorder.
func (s *Sink) RecordCutover(ctx context.Context, r sink.CutoverReport) error {
	objs := r.Objects
	if objs == nil {
		objs = []sink.ObjectResult{}
	}
	doc, err := json.Marshal(objs)
	if err != nil {
		return fmt.Errorf("sink/postgres: record the migration's report: %w", err)
	}
	err = s.withMeta(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO pgrelay.cutover (slot, schema_mode, caught_up_lsn, finished_at, tables, rows, sequences, objects)
			VALUES ($1, $2, $3::pg_catalog.pg_lsn, $4, $5, $6, $7, $8::jsonb)
			ON CONFLICT (slot) DO UPDATE SET schema_mode = excluded.schema_mode, caught_up_lsn = excluded.caught_up_lsn,
				finished_at = excluded.finished_at, tables = excluded.tables, rows = excluded.rows,
				sequences = excluded.sequences, objects = excluded.objects`,
			r.Slot, r.Schema, r.CaughtUpLSN.String(), r.FinishedAt, r.Tables, r.Rows, r.Sequences, string(doc))
		return err
	})
	if err != nil {
		return fmt.Errorf("sink/postgres: record the migration's report: %w", err)
	}
	return nil
}

// Cutover implements sink.CutoverRecorder.
func (s *Sink) Cutover(ctx context.Context, slot string) (sink.CutoverReport, bool, error) {
	r := sink.CutoverReport{Slot: slot}
	found := false
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT pg_catalog.to_regclass('pgrelay.cutover') IS NOT NULL").Scan(&exists); err != nil || !exists {
			return err
		}
		var lsn, doc string
		err := conn.QueryRow(ctx, `SELECT schema_mode, caught_up_lsn::text, finished_at, tables, rows, sequences, objects::text
			FROM pgrelay.cutover WHERE slot = $1`, slot).Scan(&r.Schema, &lsn, &r.FinishedAt, &r.Tables, &r.Rows, &r.Sequences, &doc)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.CaughtUpLSN, err = pglogrepl.ParseLSN(lsn); err != nil {
			return err
		}
		found = true
		return json.Unmarshal([]byte(doc), &r.Objects)
	})
	if err != nil {
		return r, false, fmt.Errorf("sink/postgres: read the last migration's report: %w", err)
	}
	return r, found, nil
}

// SequencesBehind implements sink.SequenceChecker: a sequence is behind when
// the target's next value is one the source has handed out (for a
// descending one, the other way round). An identity column's sequence is
// the target column's, whatever its name.
func (s *Sink) SequencesBehind(ctx context.Context, seqs []source.Sequence) ([]string, error) {
	type check struct {
		name   string // for people: the source's sequence
		target string // the target's, quoted
		q      source.Sequence
	}
	var checks []check
	seen := map[string]bool{}
	for _, q := range seqs {
		name := q.Schema + "." + q.Name
		if !q.Readable || seen[name] {
			continue
		}
		seen[name] = true
		target := pgx.Identifier{q.Schema, q.Name}.Sanitize()
		if q.Identity {
			target = ""
		}
		checks = append(checks, check{name: name, target: target, q: q})
	}
	var behind []string
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		for _, c := range checks {
			if c.target == "" {
				var seq *string
				if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_get_serial_sequence($1, $2)",
					pgx.Identifier{c.q.TableSchema, c.q.Table}.Sanitize(), c.q.Column).Scan(&seq); err != nil && conn.IsClosed() {
					return err
				}
				if seq == nil {
					behind = append(behind, c.name+" (the target's column has no identity)")
					continue
				}
				c.target = *seq
			}
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT pg_catalog.to_regclass($1) IS NOT NULL", c.target).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				behind = append(behind, c.name+" (missing on the target)")
				continue
			}
			var last int64
			var called bool
			if err := conn.QueryRow(ctx, "SELECT last_value, is_called FROM "+c.target).Scan(&last, &called); err != nil {
				if conn.IsClosed() {
					return err
				}
				behind = append(behind, c.name+" ("+describe(err)+")")
				continue
			}
			if sequenceBehind(c.q.Increment, last, called, c.q.LastValue, c.q.Called) {
				behind = append(behind, c.name+" (next "+nextValue(last, called, c.q.Increment)+" on the target, "+nextValue(c.q.LastValue, c.q.Called, c.q.Increment)+" on the source)")
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: compare the sequences with the source's: %w", err)
	}
	return behind, nil
}

// sequenceBehind reports whether a sequence at (last, called) on the target
// would hand out a value the source's, at (srcLast, srcCalled), has handed
// out: its next value comes before the source's in the sequence's direction.
func sequenceBehind(increment, last int64, called bool, srcLast int64, srcCalled bool) bool {
	if increment < 0 {
		last, srcLast = -last, -srcLast
	}
	// next = last (not called) or last + step (called); compared without
	// adding, which could overflow at the sequence's end.
	if last != srcLast {
		return last < srcLast
	}
	return !called && srcCalled
}

// nextValue is what nextval returns next for a sequence at (last, called),
// for messages.
func nextValue(last int64, called bool, increment int64) string {
	if !called {
		return strconv.FormatInt(last, 10)
	}
	if increment > 0 && last > (1<<63-1)-increment || increment < 0 && last < -(1<<63)-increment {
		return "past its end"
	}
	return strconv.FormatInt(last+increment, 10)
}
