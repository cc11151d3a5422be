package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// storedRelation is a row of pgrelay_relation.
type storedRelation struct {
	schema, name string
	def          *schema.Table
	pending      *schema.Table // the definition a change interrupted half-way was bringing the table to
	pendingStep  int           // how many of that change's steps ran
}

// readStored reads the definition stored for the target table schema.name;
// nil when there is none.
func readStored(ctx context.Context, q querier, sch, name string) (*storedRelation, error) {
	var def string
	var pending sql.NullString
	var step int
	err := q.QueryRowContext(ctx, "SELECT definition, pending, pending_step FROM pgrelay_relation WHERE target_schema = ? AND target_name = ?", sch, name).
		Scan(&def, &pending, &step)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the stored definition of %s.%s: %w", sch, name, err)
	}
	return decodeStored(sch, name, def, pending, step)
}

func decodeStored(sch, name, def string, pending sql.NullString, step int) (*storedRelation, error) {
	r := &storedRelation{schema: sch, name: name, def: &schema.Table{}, pendingStep: step}
	if err := json.Unmarshal([]byte(def), r.def); err != nil {
		return nil, fmt.Errorf("decode the stored definition of %s.%s: %w", sch, name, err)
	}
	if pending.Valid {
		r.pending = &schema.Table{}
		if err := json.Unmarshal([]byte(pending.String), r.pending); err != nil {
			return nil, fmt.Errorf("decode the pending definition of %s.%s: %w", sch, name, err)
		}
	}
	return r, nil
}

// readStoredByOID finds the definition stored for the slot's source table
// relationID under any target name (the table was renamed on the source).
func (s *Sink) readStoredByOID(ctx context.Context, q querier, relationID uint32) (*storedRelation, error) {
	if relationID == 0 || s.slot == "" {
		return nil, nil
	}
	var sch, name, def string
	var pending sql.NullString
	var step int
	err := q.QueryRowContext(ctx, `SELECT target_schema, target_name, definition, pending, pending_step FROM pgrelay_relation
		WHERE slot = ? AND relation_oid = ? ORDER BY updated_at DESC LIMIT 1`, s.slot, relationID).Scan(&sch, &name, &def, &pending, &step)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the stored definition of source relation %d: %w", relationID, err)
	}
	return decodeStored(sch, name, def, pending, step)
}

// EnsureTable creates t's database and table when missing, or evolves the
// table from the definition it was last brought to (stored in
// pgrelay_relation; prev when none is stored), with the MySQL dialect. No
// transaction may be open: MySQL's DDL would commit it (DDLCommits).
//
// A change is a list of steps, each committed by MySQL on its own: the
// change being made is recorded first (pending), then after each step the
// number of steps that ran. A change interrupted by a crash is finished by
// the next EnsureTable of the table, from the step it reached, each step
// running only when the target still needs it; a table change never runs
// twice and never leaves a duplicate column.
func (s *Sink) EnsureTable(ctx context.Context, t, prev *schema.Table) error {
	if t == nil {
		return errors.New("sink/mysql: ensure table: no table")
	}
	if s.cur != nil {
		return errors.New("sink/mysql: ensure table: a transaction is open, and MySQL's DDL would commit it (the sink reports DDLCommits: commit before changing a table)")
	}
	qname := s.dialect.QualifiedTable(t)
	sch, name := s.dialect.TargetTable(t)
	if sch == s.database && strings.HasPrefix(name, MetadataPrefix) {
		return fmt.Errorf("sink/mysql: %w", &source.MetadataSchemaError{Schema: s.database + " (tables named " + MetadataPrefix + "*)", Tables: []string{qname},
			LeaveOut: "leave it out of the publication (PGRELAY_TABLES)"})
	}
	if _, err := s.dialect.Table(t); err != nil {
		return fmt.Errorf("sink/mysql: ensure table %s: %w", qname, err)
	}
	if prev != nil && schema.SameDefinition(prev, t) && s.dialect.QualifiedTable(prev) == qname && s.ensured[t.RelationID] {
		return nil // this session brought the table to it already
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return err
	}
	if err := s.ensureTable(ctx, conn, t, prev); err != nil {
		if connLost(err) {
			s.dropConn()
		}
		return classify(fmt.Errorf("sink/mysql: ensure table %s: %w", qname, err), false)
	}
	s.forget(t)
	if t.RelationID != 0 {
		s.ensured[t.RelationID] = true
	}
	return nil
}

func (s *Sink) ensureTable(ctx context.Context, conn *sql.Conn, t, prev *schema.Table) error {
	sch, name := s.dialect.TargetTable(t)
	stored, err := readStored(ctx, conn, sch, name)
	if err != nil {
		return err
	}
	if stored == nil {
		// Renamed or moved on the source: its definition is under the old
		// target name.
		if stored, err = s.readStoredByOID(ctx, conn, t.RelationID); err != nil {
			return err
		}
	}
	if stored == nil && prev != nil {
		// Created before pgrelay stored definitions, or by hand: alter from
		// what the caller knows.
		ps, pn := s.dialect.TargetTable(prev)
		stored = &storedRelation{schema: ps, name: pn, def: prev}
	}
	if stored != nil && stored.pending != nil {
		// A change a crash interrupted: finish it first.
		if err := s.runChange(ctx, conn, stored, stored.pending, stored.pendingStep); err != nil {
			return fmt.Errorf("finish the change a stop interrupted: %w", err)
		}
		stored = &storedRelation{schema: stored.schema, name: stored.name, def: stored.pending}
		stored.schema, stored.name = s.dialect.TargetTable(stored.def)
	}
	if stored == nil {
		return s.create(ctx, conn, t)
	}
	if err := schema.MatchNumbers(stored.def, t); err != nil {
		return err
	}
	if ss, sn := s.dialect.TargetTable(stored.def); ss == sch && sn == name && schema.SameDefinition(stored.def, t) {
		if stored.def.RelationID != t.RelationID && t.RelationID != 0 {
			return s.storeDefinition(ctx, conn, stored, t)
		}
		return nil
	}
	return s.runChange(ctx, conn, stored, t, 0)
}

// create creates t's database and table and records its definition.
func (s *Sink) create(ctx context.Context, conn *sql.Conn, t *schema.Table) error {
	sch, name := s.dialect.TargetTable(t)
	stmts, err := s.dialect.CreateTable(t)
	if err != nil {
		return err
	}
	if sch != s.database {
		stmts = append([]string{s.dialect.CreateSchema(sch)}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", sqlHead(stmt), err)
		}
	}
	s.warnLeftOut(t)
	return s.storeDefinition(ctx, conn, &storedRelation{schema: sch, name: name}, t)
}

// runChange brings the table stored describes to t, from step from on,
// recording t as pending first and the steps that ran after each. The
// foreign keys in the change's way are recorded with it, dropped before its
// first step and made again after its last (foreignkeys.go).
func (s *Sink) runChange(ctx context.Context, conn *sql.Conn, stored *storedRelation, t *schema.Table, from int) (err error) {
	steps, err := s.dialect.AlterSteps(stored.def, t)
	if err != nil {
		return err
	}
	changes, err := s.dialect.ColumnChanges(stored.def, t)
	if err != nil {
		return err
	}
	ns, nn := s.dialect.TargetTable(t)
	if done, err := s.boundLockWait(ctx, conn); err != nil {
		return err
	} else if done != nil {
		defer func() {
			if derr := done(); err == nil {
				err = derr
			}
		}()
	}
	if from == 0 {
		// The target table may lack what stored says (a crash between its
		// creation and the record, a table dropped by hand): then create it.
		exists, err := tableExists(ctx, conn, stored.schema, stored.name)
		if err != nil {
			return err
		}
		if !exists {
			if exists, err = tableExists(ctx, conn, ns, nn); err != nil {
				return err
			}
		}
		if !exists {
			if err := s.forgetDefinition(ctx, conn, stored.schema, stored.name); err != nil {
				return err
			}
			return s.create(ctx, conn, t)
		}
		prevDef, err := json.Marshal(stored.def)
		if err != nil {
			return fmt.Errorf("encode definition: %w", err)
		}
		def, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("encode definition: %w", err)
		}
		away, err := s.inTheWay(ctx, conn, stored.schema, stored.name, ns, nn, changes)
		if err != nil {
			return err
		}
		err = func() error {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
			if _, err := tx.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_relation (target_schema, target_name, definition, slot, relation_oid, pending, pending_step)
				VALUES (?, ?, ?, ?, ?, ?, 0) ON DUPLICATE KEY UPDATE pending = VALUES(pending), pending_step = 0`),
				stored.schema, stored.name, string(prevDef), s.slotArg(), oidArg(stored.def), string(def)); err != nil {
				return err
			}
			if err := s.recordAway(ctx, tx, away); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if err != nil {
			return fmt.Errorf("record the change of %s.%s: %w", stored.schema, stored.name, err)
		}
		if len(away) > 0 {
			names := make([]string, len(away))
			for i := range away {
				names[i] = s.dialect.ForeignKeyDisplay(&away[i].key)
			}
			s.log.Info("foreign keys of the target stand in the way of the source's change of a table (MySQL refuses to drop or retype a column a foreign key holds): dropped before it and made again after it",
				"table", s.dialect.QualifiedTable(t), "foreign_keys", strings.Join(names, ", "))
		}
		if err := s.dropAway(ctx, conn, away); err != nil {
			return s.lockHint(ctx, err)
		}
	}
	for i := from; i < len(steps); i++ {
		step := steps[i]
		run, err := s.holds(ctx, conn, ns, nn, step.When)
		if err != nil {
			return err
		}
		if run {
			if _, err := conn.ExecContext(ctx, step.SQL); err != nil {
				return s.lockHint(ctx, fmt.Errorf("%s: %w", sqlHead(step.SQL), err))
			}
		}
		if _, err := conn.ExecContext(ctx, "UPDATE pgrelay_relation SET pending_step = ? WHERE target_schema = ? AND target_name = ?",
			i+1, stored.schema, stored.name); err != nil {
			return fmt.Errorf("record step %d of the change of %s.%s: %w", i+1, stored.schema, stored.name, err)
		}
	}
	if err := s.restoreAway(ctx, conn, ns, nn, "the source's change of "+t.QualifiedName()); err != nil {
		return s.lockHint(ctx, err)
	}
	s.warnLeftOut(t)
	return s.storeDefinition(ctx, conn, stored, t)
}

// ddlLockWait bounds how long a table change waits for a lock while the
// slot has prepared XA transactions on the target (see lockHint).
const ddlLockWait = 60 // seconds

// boundLockWait bounds the session's lock wait (ddlLockWait) while the
// slot has prepared transactions on the target, and returns what restores
// it; nil when there are none.
func (s *Sink) boundLockWait(ctx context.Context, conn *sql.Conn) (func() error, error) {
	if s.slot == "" {
		return nil, nil
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM pgrelay_prepared WHERE slot = ?", s.slot).Scan(&n); err != nil {
		return nil, fmt.Errorf("look up the slot's prepared transactions: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = "+strconv.Itoa(ddlLockWait)); err != nil {
		return nil, fmt.Errorf("bound the lock wait of the change: %w", err)
	}
	return func() error {
		_, err := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION lock_wait_timeout = DEFAULT")
		return err
	}, nil
}

// lockHint adds to a change's lock wait timeout what to do when a prepared
// XA transaction of the slot holds the lock: MySQL locks, for a transaction
// that writes a table, the tables its foreign keys link it to, and the
// transaction's XA COMMIT comes after the change in the stream.
func (s *Sink) lockHint(ctx context.Context, err error) error {
	if mysqlNumber(err) != erLockWaitTimeout || s.slot == "" {
		return err
	}
	var n int
	if qerr := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pgrelay_prepared WHERE slot = ?", s.slot).Scan(&n); qerr != nil || n == 0 {
		return err
	}
	return fmt.Errorf("%w; the slot has %d prepared XA transactions on the target, and one may hold the lock (MySQL locks, for a transaction that writes a table, the tables a foreign key links it to) while its XA COMMIT comes after this change: "+
		"once the source has committed or rolled it back (COMMIT PREPARED, ROLLBACK PREPARED), end it on the target alike (XA RECOVER lists it; XA COMMIT or XA ROLLBACK it) and pgrelay goes on, only recording it", err, n)
}

// storeDefinition records t as what its target table is now, in place of
// stored's row (which may be under an older name).
func (s *Sink) storeDefinition(ctx context.Context, conn *sql.Conn, stored *storedRelation, t *schema.Table) error {
	def, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode definition: %w", err)
	}
	sch, name := s.dialect.TargetTable(t)
	slot, oid := s.slotArg(), oidArg(t)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	if stored.schema != sch || stored.name != name {
		if _, err := tx.ExecContext(ctx, "DELETE FROM pgrelay_relation WHERE target_schema = ? AND target_name = ?", stored.schema, stored.name); err != nil {
			return fmt.Errorf("record the definition: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_relation (target_schema, target_name, definition, slot, relation_oid, pending, pending_step, updated_at)
		VALUES (?, ?, ?, ?, ?, NULL, 0, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE definition = VALUES(definition), slot = VALUES(slot), relation_oid = VALUES(relation_oid),
			pending = NULL, pending_step = 0, updated_at = VALUES(updated_at)`), sch, name, string(def), slot, oid); err != nil {
		return fmt.Errorf("record the definition: %w", err)
	}
	return tx.Commit()
}

// slotArg is the slot as a parameter, NULL before Setup.
func (s *Sink) slotArg() any {
	if s.slot == "" {
		return nil
	}
	return s.slot
}

// oidArg is t's source relation OID as a parameter, NULL when unknown.
func oidArg(t *schema.Table) any {
	if t.RelationID == 0 {
		return nil
	}
	return strconv.FormatUint(uint64(t.RelationID), 10)
}

func (s *Sink) forgetDefinition(ctx context.Context, conn *sql.Conn, sch, name string) error {
	_, err := conn.ExecContext(ctx, "DELETE FROM pgrelay_relation WHERE target_schema = ? AND target_name = ?", sch, name)
	return err
}

// holds reports whether a step's condition holds on the target table
// sch.name now.
func (s *Sink) holds(ctx context.Context, conn *sql.Conn, sch, name string, c schema.MySQLCondition) (bool, error) {
	switch c.Kind {
	case schema.Always:
		return true, nil
	case schema.TableExists:
		return tableExists(ctx, conn, c.Schema, c.Name)
	case schema.ColumnExists, schema.ColumnMissing:
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`, sch, name, c.Column).Scan(&n); err != nil {
			return false, fmt.Errorf("look up column %s of %s.%s: %w", c.Column, sch, name, err)
		}
		return (n > 0) == (c.Kind == schema.ColumnExists), nil
	case schema.KeyIs, schema.KeyIsNot:
		rows, err := conn.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, sch, name)
		if err != nil {
			return false, fmt.Errorf("look up the primary key of %s.%s: %w", sch, name, err)
		}
		var key []string
		for rows.Next() {
			var col string
			if err := rows.Scan(&col); err != nil {
				rows.Close()
				return false, err
			}
			key = append(key, col)
		}
		if err := rows.Close(); err != nil {
			return false, err
		}
		same := slices.EqualFunc(key, c.Key, strings.EqualFold)
		return same == (c.Kind == schema.KeyIs), nil
	}
	return false, fmt.Errorf("unknown step condition %d", c.Kind)
}

func tableExists(ctx context.Context, conn *sql.Conn, sch, name string) (bool, error) {
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", sch, name).Scan(&n); err != nil {
		return false, fmt.Errorf("look up table %s.%s: %w", sch, name, err)
	}
	return n > 0, nil
}

// warnLeftOut logs, once per table version, what the MySQL table lacks of
// the source's: defaults that are expressions, stored generated columns.
func (s *Sink) warnLeftOut(t *schema.Table) {
	qname := s.dialect.QualifiedTable(t)
	for i := range t.Columns {
		if why := s.dialect.DefaultLeftOut(t, i); why != "" {
			s.warnOnce("default "+qname+"."+t.Columns[i].Name+"="+string(t.Columns[i].Default),
				"a column's default is left out on MySQL: replicated rows carry their values, but the target's own inserts will not get it",
				"table", qname, "column", t.Columns[i].Name, "default", string(t.Columns[i].Default), "why", why)
		}
	}
	var gen []string
	for _, g := range t.Generated {
		if g.Expr != "" {
			gen = append(gen, g.Name)
		}
	}
	if len(gen) > 0 {
		s.warnOnce("generated "+qname+strings.Join(gen, ","),
			"stored generated columns of the source are not created on MySQL (their expressions are PostgreSQL's, and pgoutput does not send their values)",
			"table", qname, "columns", strings.Join(gen, ", "))
	}
}

// sqlHead is stmt on one line, cut to its first 120 characters, for an error
// message.
func sqlHead(stmt string) string {
	head := []rune(strings.Join(strings.Fields(stmt), " "))
	if len(head) > 120 {
		return string(head[:119]) + "…"
	}
	return string(head)
}
