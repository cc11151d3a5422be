package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// A migration's schema steps (sink/schema.go, apply/schemacopy) on a MySQL
// target: the objects that go with the replicated tables are PostgreSQL's,
// written in its SQL. What maps onto MySQL is already there with the tables
// (the databases of other schemas, constant defaults, a serial column's
// AUTO_INCREMENT, which SetSequences sets); everything else is reported left
// out, saying why. Foreign keys are left out too: MySQL refuses to drop or
// retype a column a foreign key holds, which the source may do later (it
// drops the key first), and the source enforces them.

var (
	_ sink.SchemaCarrier   = (*Sink)(nil)
	_ sink.CutoverRecorder = (*Sink)(nil)
	_ sink.SequenceChecker = (*Sink)(nil)
)

// CarryObjects implements sink.SchemaCarrier. Before the copy it defers
// every object to the end of the migration, when the tables are there.
func (s *Sink) CarryObjects(ctx context.Context, phase schema.Phase, objs []*schema.Object) ([]sink.ObjectResult, error) {
	results := make([]sink.ObjectResult, len(objs))
	for i, o := range objs {
		r := sink.ObjectResult{Kind: o.Kind, Name: o.Name}
		switch {
		case o.LeftOut != "":
			r.State, r.Reason = sink.ObjectLeftOut, o.LeftOut
		case phase < schema.PostData:
			r.State, r.Reason = sink.ObjectDeferred, "a MySQL target looks at it once the tables are there"
		default:
			var err error
			if r.State, r.Reason, err = s.carry(ctx, o); err != nil {
				return nil, classify(fmt.Errorf("sink/mysql: schema object %s: %w", o.Key(), err), connLost(err))
			}
		}
		results[i] = r
	}
	return results, nil
}

// carry says what became of o on the target.
func (s *Sink) carry(ctx context.Context, o *schema.Object) (sink.ObjectState, string, error) {
	switch o.Kind {
	case schema.KindSchema:
		db := s.dialect.TargetSchema(o.Name)
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db).Scan(&n); err != nil {
			return "", "", err
		}
		if n > 0 {
			return sink.ObjectPresent, "", nil
		}
		if _, err := s.db.ExecContext(ctx, s.dialect.CreateSchema(db)); err != nil {
			return sink.ObjectLeftOut, "the target refused CREATE DATABASE " + s.dialect.QuoteIdent(db) + ": " + oneLine(err.Error()), nil
		}
		return sink.ObjectCreated, "", nil
	case schema.KindDefault:
		column, ok := strings.CutPrefix(o.Name, o.Table.Schema+"."+o.Table.Name+".")
		if !ok {
			return sink.ObjectLeftOut, "the column it belongs to is not known", nil
		}
		def, extra, found, err := s.columnDefault(ctx, o.Table, column)
		switch {
		case err != nil:
			return "", "", err
		case !found:
			return sink.ObjectLeftOut, "the target table has no such column", nil
		case strings.Contains(strings.ToLower(extra), "auto_increment"):
			return sink.ObjectPresent, "as the column's AUTO_INCREMENT", nil
		case def.Valid && def.String != "NULL":
			return sink.ObjectPresent, "", nil
		}
		return sink.ObjectLeftOut, "MySQL cannot run PostgreSQL's expression (it is not a constant the column holds): replicated rows carry their values, the target's own inserts do not get it", nil
	case schema.KindSequence:
		if o.Table.Name != "" {
			if cols, err := s.autoIncrement(ctx, o.Table); err != nil {
				return "", "", err
			} else if cols != "" {
				return sink.ObjectPresent, "as the AUTO_INCREMENT of " + cols, nil
			}
		}
		return sink.ObjectLeftOut, "MySQL has no sequences: a table's AUTO_INCREMENT stands for one only on the first column of its primary key", nil
	case schema.KindForeignKey:
		return sink.ObjectLeftOut, "not made on MySQL, which refuses to drop or retype a column a foreign key holds, as the source may do later; the source enforces it", nil
	case schema.KindType:
		return sink.ObjectLeftOut, "MySQL has no types of its own: columns of it hold its values as text, JSON or their base type (docs/mysql.md)", nil
	}
	return sink.ObjectLeftOut, fmt.Sprintf("a MySQL target does not carry a %s: its definition is PostgreSQL's", o.Kind), nil
}

// columnDefault reads the target column's default and extra of source table
// t's column.
func (s *Sink) columnDefault(ctx context.Context, t schema.QualifiedName, column string) (def sql.NullString, extra string, found bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`, s.dialect.TargetSchema(t.Schema), t.Name, column).Scan(&def, &extra)
	if errors.Is(err, sql.ErrNoRows) {
		return def, "", false, nil
	}
	return def, extra, err == nil, err
}

// autoIncrement names the AUTO_INCREMENT column of source table t's target
// table, "" when it has none.
func (s *Sink) autoIncrement(ctx context.Context, t schema.QualifiedName) (string, error) {
	var col string
	err := s.db.QueryRowContext(ctx, `SELECT COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA LIKE '%auto_increment%'`, s.dialect.TargetSchema(t.Schema), t.Name).Scan(&col)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return t.Schema + "." + t.Name + "." + col, nil
}

// RecordCutover implements sink.CutoverRecorder: the slot's last report in
// pgrelay_cutover.
func (s *Sink) RecordCutover(ctx context.Context, r sink.CutoverReport) error {
	objects := r.Objects
	if objects == nil {
		objects = []sink.ObjectResult{}
	}
	doc, err := json.Marshal(objects)
	if err != nil {
		return fmt.Errorf("sink/mysql: record the migration's report: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_cutover (slot, schema_mode, caught_up_lsn, finished_at, tables, row_count, sequences, objects)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE schema_mode = VALUES(schema_mode), caught_up_lsn = VALUES(caught_up_lsn),
			finished_at = VALUES(finished_at), tables = VALUES(tables), row_count = VALUES(row_count), sequences = VALUES(sequences), objects = VALUES(objects)`),
		r.Slot, r.Schema, uint64(r.CaughtUpLSN), strings.Trim(timeLiteral(r.FinishedAt), "'"), r.Tables, r.Rows, r.Sequences, string(doc))
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: record the migration's report: %w", err), false)
	}
	return nil
}

// Cutover implements sink.CutoverRecorder.
func (s *Sink) Cutover(ctx context.Context, slot string) (sink.CutoverReport, bool, error) {
	r := sink.CutoverReport{Slot: slot}
	var lsn uint64
	var finished sql.NullString
	var doc string
	err := s.db.QueryRowContext(ctx, "SELECT schema_mode, caught_up_lsn, finished_at, tables, row_count, sequences, objects FROM pgrelay_cutover WHERE slot = ?", slot).
		Scan(&r.Schema, &lsn, &finished, &r.Tables, &r.Rows, &r.Sequences, &doc)
	if errors.Is(err, sql.ErrNoRows) || mysqlNumber(err) == erNoSuchTable {
		return r, false, nil // none, or metadata from before pgrelay kept it
	}
	if err == nil {
		r.CaughtUpLSN = source.LSN(lsn)
		if r.FinishedAt, err = parseTime(finished); err == nil {
			err = json.Unmarshal([]byte(doc), &r.Objects)
		}
	}
	if err != nil {
		return r, false, classify(fmt.Errorf("sink/mysql: read the migration's report of slot %q: %w", slot, err), false)
	}
	return r, true, nil
}

// SequencesBehind implements sink.SequenceChecker: a sequence of a column
// whose target column has no AUTO_INCREMENT, or whose table's next
// AUTO_INCREMENT value the source has handed out already, is named; so is
// a sequence of no column, which MySQL cannot have.
func (s *Sink) SequencesBehind(ctx context.Context, seqs []source.Sequence) ([]string, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, classify(describeConnectError(s.cfg, err), true)
	}
	defer conn.Close()
	if !s.server.MariaDB {
		// MySQL 8 caches information_schema's table statistics.
		if _, err := conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0"); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: compare the sequences: %w", err), false)
		}
	}
	var behind []string
	for _, q := range seqs {
		name := q.Schema + "." + q.Name
		if q.Standalone || q.Table == "" {
			behind = append(behind, name+" (MySQL has no sequences)")
			continue
		}
		sch := s.dialect.TargetSchema(q.TableSchema)
		var next sql.NullInt64
		var extra string
		err := conn.QueryRowContext(ctx, `SELECT t.AUTO_INCREMENT, c.EXTRA FROM information_schema.TABLES t
			JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
			WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ? AND c.COLUMN_NAME = ?`, sch, q.Table, q.Column).Scan(&next, &extra)
		if errors.Is(err, sql.ErrNoRows) {
			behind = append(behind, name+" (the target has no column "+q.TableSchema+"."+q.Table+"."+q.Column+")")
			continue
		}
		if err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: compare sequence %s: %w", name, err), false)
		}
		if !strings.Contains(strings.ToLower(extra), "auto_increment") || !next.Valid {
			behind = append(behind, name+" (its column has no AUTO_INCREMENT on the target)")
			continue
		}
		if !q.Readable {
			continue // its value is not known: nothing to compare
		}
		used := q.LastValue
		if !q.Called {
			used -= q.Increment
		}
		if next.Int64 <= used {
			behind = append(behind, name+" (the target's next value "+strconv.FormatInt(next.Int64, 10)+" the source has handed out)")
		}
	}
	return behind, nil
}
