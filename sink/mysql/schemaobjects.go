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
// written in its SQL. What maps onto MySQL is there with the tables and
// reported present (the databases of other schemas, constant defaults, a
// serial column's AUTO_INCREMENT, which SetSequences sets); foreign keys are
// made at the end of the migration (foreignkeys.go); everything else MySQL
// cannot hold is reported not carried, saying why, for the user to port.

var (
	_ sink.SchemaCarrier   = (*Sink)(nil)
	_ sink.CutoverRecorder = (*Sink)(nil)
	_ sink.SequenceChecker = (*Sink)(nil)
)

// CarryObjects implements sink.SchemaCarrier. Before the copy it defers
// every object to the end of the migration, when the tables are there; then
// it makes the foreign keys, after forgetting those a change left waiting
// (the source's are made again from its facts), and reports the rest.
func (s *Sink) CarryObjects(ctx context.Context, phase schema.Phase, objs []*schema.Object) ([]sink.ObjectResult, error) {
	if phase >= schema.PostData {
		if err := s.forgetWaiting(ctx); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: schema objects: %w", err), connLost(err))
		}
	}
	names := s.foreignKeyNames(objs)
	var fkConn *sql.Conn
	if phase >= schema.PostData && len(names) > 0 {
		conn, err := s.fkSession(ctx)
		if err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: schema objects: %w", err), true)
		}
		defer discard(conn) // its session's lock wait is not the pool's
		fkConn = conn
	}
	results := make([]sink.ObjectResult, len(objs))
	for i, o := range objs {
		r := sink.ObjectResult{Kind: o.Kind, Name: o.Name}
		switch {
		case o.LeftOut != "" && notCarried(o.Kind) != "":
			r.State, r.Reason = sink.ObjectNotCarried, notCarried(o.Kind)
		case o.LeftOut != "":
			r.State, r.Reason = sink.ObjectLeftOut, o.LeftOut
		case phase < schema.PostData:
			r.State, r.Reason = sink.ObjectDeferred, "a MySQL target looks at it once the tables are there"
		default:
			var err error
			if r.State, r.Reason, err = s.carry(ctx, o, names[o], fkConn); err != nil {
				return nil, classify(fmt.Errorf("sink/mysql: schema object %s: %w", o.Key(), err), connLost(err))
			}
		}
		results[i] = r
	}
	return results, nil
}

// notCarried says why MySQL never holds an object of kind, "" for the
// kinds it may (a schema, a default, a sequence, a foreign key).
func notCarried(kind schema.ObjectKind) string {
	switch kind {
	case schema.KindSchema, schema.KindDefault, schema.KindSequence, schema.KindForeignKey:
		return ""
	case schema.KindType:
		return "not carried to MySQL, which has no types of its own: columns of it hold its values as text, JSON or their base type (docs/mysql.md)"
	case schema.KindView, schema.KindMatView:
		return "not carried to MySQL: its query is PostgreSQL's SQL; write it for MySQL if the application reads it"
	case schema.KindFunction, schema.KindAggregate:
		return "not carried to MySQL: its body is PostgreSQL's; write it for MySQL if the application calls it"
	case schema.KindTrigger:
		return "not carried to MySQL: its function is PostgreSQL's (replicated rows carry what it wrote on the source); write it for MySQL if the application's own writes need it"
	case schema.KindCheck:
		return "not carried to MySQL: its expression is PostgreSQL's SQL (the source checked every replicated row); write it for MySQL if the application's own writes need it"
	case schema.KindPartitioned, schema.KindPartition, schema.KindConstraint, schema.KindIndex:
		return "not carried to MySQL, which gets the published tables as plain tables (each published partition a table of its own)"
	case schema.KindGrant:
		return "not carried to MySQL: its privileges are the target's to grant"
	case schema.KindComment:
		return "not carried to MySQL: pgrelay carries no comments there"
	}
	return fmt.Sprintf("not carried to MySQL: a %s's definition is PostgreSQL's", kind)
}

// carry says what became of o on the target; name is a foreign key's MySQL
// name (foreignKeyNames), made in session fkConn (fkSession).
func (s *Sink) carry(ctx context.Context, o *schema.Object, name string, fkConn *sql.Conn) (sink.ObjectState, string, error) {
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
		return sink.ObjectNotCarried, "not carried to MySQL, which cannot run PostgreSQL's expression (it is not a constant the column holds): replicated rows carry their values, the target's own inserts do not get it", nil
	case schema.KindSequence:
		if how, ok := s.sequenceCarried(o.Name); ok {
			return how.state, how.reason, nil
		}
		return sink.ObjectNotCarried, "not carried to MySQL, which has no sequences: a table's AUTO_INCREMENT stands for one only on the first column of its primary key", nil
	case schema.KindForeignKey:
		return s.carryForeignKey(ctx, fkConn, o, name)
	}
	return sink.ObjectNotCarried, notCarried(o.Kind), nil
}

// foreignKeyNames gives each foreign key of objs its MySQL name: the
// source's, or, where two going to one database share it (MySQL's names
// are a database's, PostgreSQL's a table's), table_name; cut to 64
// characters.
func (s *Sink) foreignKeyNames(objs []*schema.Object) map[*schema.Object]string {
	key := func(fk *schema.ForeignKey) string {
		return s.dialect.TargetSchema(fk.Table.Schema) + "\x00" + strings.ToLower(fk.Name)
	}
	count := map[string]int{}
	for _, o := range objs {
		if o.Kind == schema.KindForeignKey && o.ForeignKey != nil {
			count[key(o.ForeignKey)]++
		}
	}
	names := map[*schema.Object]string{}
	for _, o := range objs {
		if fk := o.ForeignKey; o.Kind == schema.KindForeignKey && fk != nil {
			names[o] = schema.MySQLForeignKeyName(fk.Table.Name, fk.Name, count[key(fk)] > 1)
		}
	}
	return names
}

// objectLockWait bounds each wait of a migration's foreign key for a lock
// on its tables, in seconds.
const objectLockWait = 10

// fkSession is a session of its own for a migration's foreign keys, whose
// lock waits are bounded (objectLockWait): a prepared XA transaction holds
// its tables until the source's COMMIT PREPARED comes, which a migration
// must not wait for. The caller discards it.
func (s *Sink) fkSession(ctx context.Context) (*sql.Conn, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = "+strconv.Itoa(objectLockWait)); err != nil {
		discard(conn)
		return nil, err
	}
	return conn, nil
}

// carryForeignKey makes foreign key o on the target, named name (or, when
// another constraint of its database has that name, a name with a hash).
func (s *Sink) carryForeignKey(ctx context.Context, conn *sql.Conn, o *schema.Object, name string) (sink.ObjectState, string, error) {
	fk := o.ForeignKey
	if fk == nil {
		return sink.ObjectLeftOut, "the source catalog did not show what it is made of", nil
	}
	if why := schema.MySQLForeignKeyUnfit(fk); why != "" {
		return sink.ObjectNotCarried, "not carried to MySQL: " + why, nil
	}
	k := s.dialect.ForeignKey(fk, name)
	for _, t := range [][2]string{{k.Schema, k.Table}, {k.RefSchema, k.RefTable}} {
		pending, err := s.pendingChange(ctx, s.db, t[0], t[1])
		if err != nil {
			return "", "", err
		}
		if pending {
			return sink.ObjectLeftOut, "a change of " + t[0] + "." + t[1] + " that a stop interrupted is not finished yet (replicate finishes it): the next pgrelay migrate makes it", nil
		}
	}
	made, err := s.makeForeignKey(ctx, conn, k, []string{name, schema.MySQLForeignKeyAltName(name, fk.Table, fk.Name)})
	if mysqlNumber(err) == erLockWaitTimeout {
		return sink.ObjectLeftOut, fmt.Sprintf("not made: it waited %d s for a lock another transaction holds on its tables (a prepared one, whose XA COMMIT comes with the source's COMMIT PREPARED, or the application's): the next pgrelay migrate makes it", objectLockWait), nil
	}
	if err != nil {
		return "", "", err
	}
	switch made.state {
	case sink.ObjectCreated, sink.ObjectPresent:
		var notes []string
		if made.name != fk.Name {
			notes = append(notes, "named "+made.name+" on MySQL, whose constraint names are a database's and at most 64 characters")
		}
		if n := schema.MySQLForeignKeyNotes(fk); n != "" {
			notes = append(notes, n)
		}
		return made.state, strings.Join(notes, "; "), nil
	case sink.ObjectNotCarried:
		return made.state, "not carried to MySQL: " + made.reason, nil
	}
	return made.state, made.reason, nil
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

// SequencesBehind implements sink.SequenceChecker: a sequence whose column
// the target lacks, whose column could have an AUTO_INCREMENT but has none
// (pgrelay sequences gives it one), or whose table's next AUTO_INCREMENT
// value the source has handed out already, is named. One MySQL cannot hold
// (of no column, of a column that cannot be AUTO_INCREMENT, counting down)
// is not: the migration's report lists it as not carried.
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
		if q.Standalone || q.Table == "" || q.Increment <= 0 {
			continue // MySQL cannot hold it
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
			_, _, why, err := s.autoIncrementFit(ctx, conn, sch, q.Table, q.Column)
			if err != nil {
				return nil, classify(fmt.Errorf("sink/mysql: compare sequence %s: %w", name, err), false)
			}
			if why == "" {
				behind = append(behind, name+" (its column has no AUTO_INCREMENT on the target)")
			}
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
