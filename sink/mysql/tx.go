package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// maxPlaceholders is MySQL's limit of placeholders in one prepared
// statement; the sink sends literals, but keeps a multi-row INSERT to as
// many values (error 1390 is where servers and proxies draw the line).
const maxPlaceholders = 65535

// tableMap is what the sink keeps per table version: the mapping and the
// statements' fixed parts.
type tableMap struct {
	t      *schema.Table
	m      *schema.MySQLTable
	qname  string
	cols   []string // quoted column names
	key    []int    // the target's primary key columns, in key order
	full   bool     // REPLICA IDENTITY FULL: rows are found by all old values
	insert string   // INSERT INTO … (…) VALUES
	// maxRows is how many rows one INSERT takes.
	maxRows int
	// foldOK: the target table has no unique index besides its primary key
	// (queue.go), once foldChecked.
	foldChecked, foldOK bool
}

// tableFor returns the mapping of t's version, making it on first use.
func (s *Sink) tableFor(t *schema.Table) (*tableMap, error) {
	if tm := s.tables[t]; tm != nil {
		return tm, nil
	}
	m, err := s.dialect.Table(t)
	if err != nil {
		return nil, err
	}
	tm := &tableMap{t: t, m: m, qname: s.dialect.QualifiedTable(t), full: t.ReplicaIdentity == schema.IdentityFull}
	for _, c := range t.Columns {
		tm.cols = append(tm.cols, s.dialect.QuoteIdent(c.Name))
	}
	for _, name := range t.TargetKey() {
		for i := range t.Columns {
			if t.Columns[i].Name == name {
				tm.key = append(tm.key, i)
			}
		}
	}
	tm.insert = "INSERT INTO " + tm.qname + " (" + strings.Join(tm.cols, ", ") + ") VALUES "
	tm.maxRows = max(1, maxPlaceholders/max(1, len(t.Columns)))
	s.tables[t] = tm
	return tm, nil
}

// forget drops the mappings of t's relation (a new version replaces them).
func (s *Sink) forget(t *schema.Table) {
	for old := range s.tables {
		if old == t || old.RelationID == t.RelationID && t.RelationID != 0 || old.Schema == t.Schema && old.Name == t.Name {
			delete(s.tables, old)
		}
	}
}

// opKind is what a statement does.
type opKind uint8

const (
	opNone opKind = iota
	opInsert
	opUpdate
	opDelete
	opTruncate
)

func (k opKind) String() string {
	switch k {
	case opInsert:
		return "insert into"
	case opUpdate:
		return "update"
	case opDelete:
		return "delete from"
	case opTruncate:
		return "truncate"
	}
	return "apply to"
}

// unit is one statement of a batch and the changes it applies.
type unit struct {
	kind    opKind
	tm      *tableMap
	expect  int64 // rows it must touch, -1 for any
	changes []*sink.Change
}

// Tx is one target transaction on the apply connection.
type Tx struct {
	s     *Sink
	conn  *sql.Conn
	begun bool // START TRANSACTION was sent
	// The batch being built: its statements, ';'-separated, and what each
	// applies.
	batch []byte
	units []unit
	// The run being built: a multi-row INSERT, a DELETE … IN (…) or an
	// UPDATE of many rows by key of one table, not yet in the batch.
	run     []byte
	runUnit unit
	runKeys map[string]bool // a delete or update run's keys: a key repeated ends the run
	upd     updateRun       // an update run's parts
	// Changes queued per table until the next drain (queue.go).
	queues     map[*tableMap]*tableQueue
	queueOrder []*tableQueue
	pending    int
	err        error // the failure that ended the transaction
	// xa is the GID of a transaction to be prepared: it begins with XA
	// START (see twophase.go).
	xa string
}

// Begin starts a target transaction. Nothing is sent until its first batch.
func (s *Sink) Begin(ctx context.Context) (sink.Tx, error) {
	if s.cur != nil {
		return nil, errors.New("sink/mysql: begin: a transaction is already open")
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return nil, err
	}
	s.cur = &Tx{s: s, conn: conn}
	return s.cur, nil
}

func (tx *Tx) usable() error {
	if tx.err != nil {
		return tx.err
	}
	if tx.s.cur != tx {
		return errors.New("sink/mysql: the transaction has ended")
	}
	return nil
}

// fail ends the transaction with err (classified), dropping the connection
// when it may be broken.
func (tx *Tx) fail(err error) error {
	lost := connLost(err)
	if lost {
		tx.s.dropConn()
	}
	tx.err = classify(err, lost)
	return tx.err
}

// Apply adds one change to the transaction: queued with its table's
// changes (queue.go), or, with Options.KeepOrder, into the batch at once.
func (tx *Tx) Apply(ctx context.Context, ch *sink.Change) error {
	if err := tx.usable(); err != nil {
		return err
	}
	tm, err := tx.s.tableFor(ch.Table)
	if err != nil {
		return tx.fail(fmt.Errorf("sink/mysql: %s: %w", ch.Table.QualifiedName(), err))
	}
	if tx.s.opts.KeepOrder {
		return tx.applyNow(ctx, tm, ch)
	}
	return tx.queue(ctx, tm, ch)
}

// applyNow adds one change to the batch: into the run being built when it
// continues it.
func (tx *Tx) applyNow(ctx context.Context, tm *tableMap, ch *sink.Change) error {
	switch ch.Kind {
	case sink.Insert:
		row, err := tx.s.rowValues(tm, ch)
		if err != nil {
			return tx.fail(err)
		}
		if err := tx.s.fitsPacket(len(tm.insert)+len(row), opInsert, tm, ch); err != nil {
			return tx.fail(err)
		}
		if tx.runUnit.kind != opInsert || tx.runUnit.tm != tm || len(tx.runUnit.changes) >= tm.maxRows || !tx.fits(len(row)+1) {
			if err := tx.closeRun(ctx); err != nil {
				return err
			}
			if !tx.fits(len(tm.insert) + len(row)) {
				if err := tx.flush(ctx, ""); err != nil {
					return err
				}
			}
			tx.run = append(tx.run[:0], tm.insert...)
			tx.runUnit = unit{kind: opInsert, tm: tm}
		} else {
			tx.run = append(tx.run, ',')
		}
		tx.run = append(tx.run, row...)
		tx.runUnit.changes = append(tx.runUnit.changes, ch)
		return nil
	case sink.Delete:
		if len(tm.key) == 0 {
			if !tm.full {
				return tx.fail(tx.s.changeError(opDelete, tm, ch, errNoIdentity))
			}
			stmt, err := tx.s.deleteFull(tm, ch)
			if err != nil {
				return tx.fail(err)
			}
			return tx.add(ctx, stmt, unit{kind: opDelete, tm: tm, expect: 1, changes: []*sink.Change{ch}})
		}
		key, err := tx.s.keyTuple(tm, ch, ch.Old)
		if err != nil {
			return tx.fail(err)
		}
		if tx.runUnit.kind != opDelete || tx.runUnit.tm != tm || tx.runKeys[string(key)] || len(tx.runUnit.changes) >= tm.maxRows || !tx.fits(len(key)+2) {
			if err := tx.closeRun(ctx); err != nil {
				return err
			}
			head := tx.s.deleteHead(tm)
			if !tx.fits(len(head) + len(key) + 2) {
				if err := tx.flush(ctx, ""); err != nil {
					return err
				}
			}
			tx.run = append(tx.run[:0], head...)
			tx.runUnit = unit{kind: opDelete, tm: tm}
			tx.runKeys = map[string]bool{}
		} else {
			tx.run = append(tx.run, ", "...)
		}
		tx.run = append(tx.run, key...)
		tx.runKeys[string(key)] = true
		tx.runUnit.changes = append(tx.runUnit.changes, ch)
		return nil
	case sink.Update:
		if cols := tx.runColumns(ctx, tm, ch); len(cols) > 0 {
			return tx.addToUpdateRun(ctx, tm, ch, cols)
		}
		stmt, err := tx.s.updateStatement(tm, ch)
		if err != nil {
			return tx.fail(err)
		}
		if err := tx.s.fitsPacket(len(stmt), opUpdate, tm, ch); err != nil {
			return tx.fail(err)
		}
		return tx.add(ctx, stmt, unit{kind: opUpdate, tm: tm, expect: 1, changes: []*sink.Change{ch}})
	}
	return tx.fail(fmt.Errorf("sink/mysql: unknown change kind %q at %s", ch.Kind, ch.LSN))
}

// fitsPacket refuses a change whose statement alone is larger than the
// server takes in one packet (max_allowed_packet): the server would close
// the session, and a retry would fail the same way.
func (s *Sink) fitsPacket(n int, kind opKind, tm *tableMap, ch *sink.Change) error {
	if s.maxPacket <= 0 || n+1024 <= s.maxPacket {
		return nil
	}
	return s.changeError(kind, tm, ch, fmt.Errorf("the row takes %d bytes as SQL, more than the target's max_allowed_packet (%d) allows: raise it on the server (SET GLOBAL max_allowed_packet = 1073741824, and in its configuration)", n, s.maxPacket))
}

// fits reports whether n more bytes fit the batch with the run.
func (tx *Tx) fits(n int) bool {
	return len(tx.batch)+len(tx.run)+n+256 <= tx.s.batchLimit()
}

// add closes the run and adds one statement to the batch, sending the batch
// first when it would grow past the limit.
func (tx *Tx) add(ctx context.Context, stmt []byte, u unit) error {
	if err := tx.closeRun(ctx); err != nil {
		return err
	}
	if !tx.fits(len(stmt) + 1) {
		if err := tx.flush(ctx, ""); err != nil {
			return err
		}
	}
	tx.appendStatement(stmt, u)
	return nil
}

func (tx *Tx) appendStatement(stmt []byte, u unit) {
	if len(tx.batch) > 0 {
		tx.batch = append(tx.batch, ";\n"...)
	}
	tx.batch = append(tx.batch, stmt...)
	tx.units = append(tx.units, u)
}

// closeRun moves the run being built into the batch.
func (tx *Tx) closeRun(ctx context.Context) error {
	if tx.runUnit.kind == opNone {
		return nil
	}
	u := tx.runUnit
	u.expect = int64(len(u.changes))
	switch u.kind {
	case opDelete:
		tx.run = append(tx.run, ')')
		tx.s.stats.setStatements.Add(1)
		tx.s.stats.setRows.Add(int64(len(u.changes)))
	case opUpdate:
		stmt, err := tx.updateRunStatement(u)
		if err != nil {
			return tx.fail(err)
		}
		tx.run = stmt
	default:
		tx.s.stats.insertRuns.Add(1)
		tx.s.stats.insertRows.Add(int64(len(u.changes)))
	}
	tx.appendStatement(tx.run, u)
	tx.run, tx.runUnit, tx.runKeys = tx.run[:0], unit{}, nil
	return nil
}

// flush sends the batch, after START TRANSACTION when it is the first, with
// tail (the progress row and COMMIT) after it, and checks what each
// statement did. A statement that fails, or touches fewer rows than its
// changes must, ends the transaction with the error of the change at fault.
func (tx *Tx) flush(ctx context.Context, tail string) error {
	if err := tx.closeRun(ctx); err != nil {
		return err
	}
	if len(tx.units) == 0 && tail == "" {
		return nil
	}
	var q strings.Builder
	lead := 0
	if !tx.begun {
		if tx.xa != "" {
			q.WriteString("XA START " + tx.s.xaXid(tx.xa) + ";\n")
		} else {
			q.WriteString("START TRANSACTION;\n")
		}
		lead++
	}
	if len(tx.units) > 0 {
		q.WriteString("SAVEPOINT pgrelay_batch;\n")
		lead++
		q.Write(tx.batch)
	}
	if tail != "" {
		if len(tx.units) > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(tail)
	}
	units := tx.units
	counts, err := tx.exec(ctx, q.String())
	tx.begun = true
	tx.batch, tx.units = tx.batch[:0], nil
	tx.s.stats.batches.Add(1)
	tx.s.stats.statements.Add(int64(lead + len(units)))
	if err != nil {
		if connLost(err) || isRetryable(err, false) || len(units) == 0 {
			return tx.fail(tx.s.batchError(units, err))
		}
		return tx.fail(tx.attribute(ctx, units, err))
	}
	for k, u := range units {
		if u.expect < 0 || lead+k >= len(counts) || counts[lead+k] == u.expect {
			continue
		}
		if len(u.changes) == 1 {
			return tx.fail(tx.s.changeError(u.kind, u.tm, u.changes[0], sink.ErrRowNotFound))
		}
		return tx.fail(tx.attribute(ctx, units, fmt.Errorf("%d rows of %d found", counts[lead+k], u.expect)))
	}
	return nil
}

// exec runs a multi-statement query and returns the rows each statement
// touched (found, for UPDATE).
func (tx *Tx) exec(ctx context.Context, query string) ([]int64, error) {
	var counts []int64
	err := tx.conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the driver connection cannot execute")
		}
		res, err := ex.ExecContext(ctx, query, nil)
		if err != nil {
			return err
		}
		if r, ok := res.(gomysql.Result); ok {
			counts = r.AllRowsAffected()
		}
		return nil
	})
	return counts, err
}

// attribute finds the change a failed batch stumbled on: back to the batch's
// savepoint, the batch's changes run one statement each until one fails or
// misses its row. The transaction ends either way.
func (tx *Tx) attribute(ctx context.Context, units []unit, batchErr error) error {
	if _, err := tx.exec(ctx, "ROLLBACK TO SAVEPOINT pgrelay_batch"); err != nil {
		return tx.s.batchError(units, batchErr)
	}
	for _, u := range units {
		for _, ch := range u.changes {
			var stmt []byte
			var err error
			switch u.kind {
			case opInsert:
				var row []byte
				if row, err = tx.s.rowValues(u.tm, ch); err == nil {
					stmt = append([]byte(u.tm.insert), row...)
				}
			case opDelete:
				if len(u.tm.key) == 0 {
					stmt, err = tx.s.deleteFull(u.tm, ch)
				} else {
					var key []byte
					if key, err = tx.s.keyTuple(u.tm, ch, ch.Old); err == nil {
						stmt = append(append([]byte(tx.s.deleteHead(u.tm)), key...), ')')
					}
				}
			case opUpdate:
				stmt, err = tx.s.updateStatement(u.tm, ch)
			}
			if err != nil {
				return err
			}
			counts, err := tx.exec(ctx, string(stmt))
			if err != nil {
				return tx.s.changeError(u.kind, u.tm, ch, err)
			}
			if u.kind != opInsert && (len(counts) == 0 || counts[0] != 1) {
				return tx.s.changeError(u.kind, u.tm, ch, sink.ErrRowNotFound)
			}
		}
		if u.kind == opTruncate {
			if _, err := tx.exec(ctx, "DELETE FROM "+u.tm.qname); err != nil {
				return newChangeError(sink.ChangeError{Op: opTruncate.String(), Table: u.tm.qname, Err: err})
			}
		}
	}
	return tx.s.batchError(units, batchErr)
}

// batchError is the error of a batch whose failing change is not known:
// it names the LSNs the batch spans.
func (s *Sink) batchError(units []unit, err error) error {
	e := sink.ChangeError{Op: "apply batch to", Err: err}
	for _, u := range units {
		if e.Table == "" && u.tm != nil {
			e.Table = u.tm.qname
		}
		for _, ch := range u.changes {
			if e.LSN == 0 {
				e.LSN = ch.LSN
			}
			e.LastLSN = ch.LSN
		}
	}
	if e.Table == "" && e.LSN == 0 {
		return err
	}
	return newChangeError(e)
}

// keyText is the change's row identity as the source sent it: (a, b)=(1, x).
func keyText(tm *tableMap, ch *sink.Change) string {
	tuple, cols := ch.New, tm.key
	if ch.Kind != sink.Insert && ch.Old != nil {
		tuple = ch.Old
	}
	if len(cols) == 0 {
		if ch.Kind == sink.Insert || !tm.full {
			return ""
		}
		for i := range tm.t.Columns {
			cols = append(cols, i)
		}
	}
	names, values := make([]string, 0, len(cols)), make([]string, 0, len(cols))
	for _, i := range cols {
		if i >= len(tuple) {
			continue
		}
		names = append(names, tm.t.Columns[i].Name)
		switch v := tuple[i]; v.Kind {
		case source.ValueNull:
			values = append(values, "NULL")
		case source.ValueUnchanged:
			values = append(values, "(unchanged)")
		default:
			text := string(v.Data)
			if len([]rune(text)) > 64 {
				text = string([]rune(text)[:63]) + "…"
			}
			values = append(values, oneLine(text))
		}
	}
	return "(" + strings.Join(names, ", ") + ")=(" + strings.Join(values, ", ") + ")"
}

// appendValue appends column i's value v as a literal. A value the column
// cannot hold is an error, or NULL under Options.UnfitAsNull.
func (s *Sink) appendValue(dst []byte, tm *tableMap, i int, v source.Value, kind opKind, ch *sink.Change) ([]byte, error) {
	switch v.Kind {
	case source.ValueNull:
		return append(dst, "NULL"...), nil
	case source.ValueText:
	case source.ValueBinary:
		return nil, s.changeError(kind, tm, ch, fmt.Errorf("column %q: a binary-format value: a MySQL target takes pgoutput's text format", tm.t.Columns[i].Name))
	default:
		return nil, s.changeError(kind, tm, ch, fmt.Errorf("column %q: an unchanged TOAST value where the row must be whole", tm.t.Columns[i].Name))
	}
	mv, err := tm.m.Convert(i, v.Data)
	if err != nil {
		if s.opts.UnfitAsNull && errors.Is(err, schema.ErrUnfit) && !tm.t.Columns[i].NotNull && !tm.t.Columns[i].Key {
			s.stats.unfitNulled.Add(1)
			s.log.Warn("a value MySQL cannot hold is stored as NULL ("+UnfitSetting+"=null)",
				"table", tm.qname, "key", keyText(tm, ch), "lsn", ch.LSN.String(), "error", err.Error())
			return append(dst, "NULL"...), nil
		}
		return nil, s.changeError(kind, tm, ch, err)
	}
	return schema.AppendLiteral(dst, mv), nil
}

// rowValues renders an insert's row: (v1, v2, …).
func (s *Sink) rowValues(tm *tableMap, ch *sink.Change) ([]byte, error) {
	if len(ch.New) != len(tm.t.Columns) {
		return nil, s.changeError(opInsert, tm, ch, fmt.Errorf("the row has %d values and the table %d columns", len(ch.New), len(tm.t.Columns)))
	}
	row := make([]byte, 0, 16*len(ch.New))
	row = append(row, '(')
	var err error
	for i, v := range ch.New {
		if i > 0 {
			row = append(row, ", "...)
		}
		if row, err = s.appendValue(row, tm, i, v, opInsert, ch); err != nil {
			return nil, err
		}
	}
	return append(row, ')'), nil
}

// deleteHead starts a DELETE of a run of rows by key.
func (s *Sink) deleteHead(tm *tableMap) string {
	return "DELETE FROM " + tm.qname + " WHERE " + keyIn(tm)
}

// keyIn starts the condition on a list of keys (keyTuple's): k IN ( or
// (k1, k2) IN (.
func keyIn(tm *tableMap) string {
	if len(tm.key) == 1 {
		return tm.cols[tm.key[0]] + " IN ("
	}
	cols := make([]string, len(tm.key))
	for k, i := range tm.key {
		cols[k] = tm.cols[i]
	}
	return "(" + strings.Join(cols, ", ") + ") IN ("
}

// keyTuple renders the key values of tuple for deleteHead's list: v, or
// (v1, v2) for a composite key.
func (s *Sink) keyTuple(tm *tableMap, ch *sink.Change, tuple source.Tuple) ([]byte, error) {
	var out []byte
	if len(tm.key) > 1 {
		out = append(out, '(')
	}
	for k, i := range tm.key {
		if k > 0 {
			out = append(out, ", "...)
		}
		if i >= len(tuple) || tuple[i].Kind != source.ValueText {
			return nil, s.changeError(opDelete, tm, ch, fmt.Errorf("key column %q has no value", tm.t.Columns[i].Name))
		}
		lit, err := s.appendValue(nil, tm, i, tuple[i], opDelete, ch)
		if err != nil {
			return nil, err
		}
		out = append(out, tm.m.CompareAs(i, string(lit))...)
	}
	if len(tm.key) > 1 {
		out = append(out, ')')
	}
	return out, nil
}

// where renders the condition that finds a change's row: the key columns
// by =, or, under REPLICA IDENTITY FULL, every old value by <=> (NULL-safe).
func (s *Sink) where(tm *tableMap, kind opKind, ch *sink.Change, tuple source.Tuple) ([]byte, error) {
	var out []byte
	cols, op := tm.key, " = "
	if len(cols) == 0 {
		op = " <=> "
		for i := range tm.t.Columns {
			if i < len(tuple) && tuple[i].Kind != source.ValueUnchanged {
				cols = append(cols, i)
			}
		}
	}
	if len(cols) == 0 {
		return nil, s.changeError(kind, tm, ch, errors.New("no old values to find the row by"))
	}
	for k, i := range cols {
		if k > 0 {
			out = append(out, " AND "...)
		}
		if i >= len(tuple) || tuple[i].Kind == source.ValueUnchanged {
			return nil, s.changeError(kind, tm, ch, fmt.Errorf("key column %q has no value", tm.t.Columns[i].Name))
		}
		lit, err := s.appendValue(nil, tm, i, tuple[i], kind, ch)
		if err != nil {
			return nil, err
		}
		out = append(out, tm.cols[i]...)
		out = append(out, op...)
		out = append(out, tm.m.CompareAs(i, string(lit))...)
	}
	return out, nil
}

// deleteFull renders the DELETE of one row found by all its old values.
func (s *Sink) deleteFull(tm *tableMap, ch *sink.Change) ([]byte, error) {
	if ch.OldKind != source.OldFull {
		return nil, s.changeError(opDelete, tm, ch, errors.New("REPLICA IDENTITY FULL, but the source sent no old row"))
	}
	cond, err := s.where(tm, opDelete, ch, ch.Old)
	if err != nil {
		return nil, err
	}
	return append(append([]byte("DELETE FROM "+tm.qname+" WHERE "), cond...), " LIMIT 1"...), nil
}

// updateStatement renders an update: the new values of every column but the
// unchanged TOAST ones (the target keeps its value), on the row found by the
// old key (when the key changed), the old row (REPLICA IDENTITY FULL) or the
// new row's key.
func (s *Sink) updateStatement(tm *tableMap, ch *sink.Change) ([]byte, error) {
	if len(tm.key) == 0 && !tm.full {
		return nil, s.changeError(opUpdate, tm, ch, errNoIdentity)
	}
	if len(ch.New) != len(tm.t.Columns) {
		return nil, s.changeError(opUpdate, tm, ch, fmt.Errorf("the row has %d values and the table %d columns", len(ch.New), len(tm.t.Columns)))
	}
	find := ch.New
	switch {
	case ch.OldKind == source.OldKey || ch.OldKind == source.OldFull:
		find = ch.Old
	case len(tm.key) == 0:
		return nil, s.changeError(opUpdate, tm, ch, errors.New("REPLICA IDENTITY FULL, but the source sent no old row"))
	}
	stmt := []byte("UPDATE " + tm.qname + " SET ")
	set := 0
	var err error
	for i, v := range ch.New {
		if v.Kind == source.ValueUnchanged {
			continue
		}
		if set > 0 {
			stmt = append(stmt, ", "...)
		}
		stmt = append(stmt, tm.cols[i]...)
		stmt = append(stmt, " = "...)
		if stmt, err = s.appendValue(stmt, tm, i, v, opUpdate, ch); err != nil {
			return nil, err
		}
		set++
	}
	if set == 0 {
		// Every value unchanged: the row must still be there.
		stmt = append(stmt, tm.cols[0]...)
		stmt = append(stmt, " = "...)
		stmt = append(stmt, tm.cols[0]...)
	}
	cond, err := s.where(tm, opUpdate, ch, find)
	if err != nil {
		return nil, err
	}
	stmt = append(append(stmt, " WHERE "...), cond...)
	if len(tm.key) == 0 {
		stmt = append(stmt, " LIMIT 1"...)
	}
	return stmt, nil
}

// Truncate empties tables with DELETE, which is transactional (MySQL's
// TRUNCATE TABLE commits the open transaction). RESTART IDENTITY does not
// reset AUTO_INCREMENT: replicated rows carry their values.
func (tx *Tx) Truncate(ctx context.Context, tables []*schema.Table, options uint8) error {
	if err := tx.usable(); err != nil {
		return err
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	for _, t := range tables {
		tm, err := tx.s.tableFor(t)
		if err != nil {
			return tx.fail(fmt.Errorf("sink/mysql: truncate %s: %w", t.QualifiedName(), err))
		}
		if err := tx.add(ctx, []byte("DELETE FROM "+tm.qname), unit{kind: opTruncate, tm: tm, expect: -1}); err != nil {
			return err
		}
	}
	return nil
}

// Commit records p in the transaction and commits it. The commit joins the
// last batch when no statement of it can miss its row (inserts, truncates);
// otherwise the batch's counts are checked first.
func (tx *Tx) Commit(ctx context.Context, p sink.Progress) error {
	if err := tx.usable(); err != nil {
		return err
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.closeRun(ctx); err != nil {
		return err
	}
	for _, u := range tx.units {
		if u.kind == opUpdate || u.kind == opDelete {
			if err := tx.flush(ctx, ""); err != nil {
				return err
			}
			break
		}
	}
	slot := p.Slot
	if slot == "" {
		slot = tx.s.slot
	}
	commit := ";\nCOMMIT"
	if tx.xa != "" {
		if tx.begun {
			commit = ";\nXA END " + tx.s.xaXid(tx.xa) + ";\nXA COMMIT " + tx.s.xaXid(tx.xa) + " ONE PHASE"
		} else {
			tx.xa = "" // nothing sent yet: an ordinary transaction
		}
	}
	err := tx.flush(ctx, tx.s.progressSQL(slot, p)+commit)
	if err != nil && connLost(err) {
		// The commit's outcome is unknown: the stored position tells.
		if stored, rerr := readProgress(ctx, tx.s.db, slot); rerr == nil && stored.LSN >= p.LSN && p.LSN != 0 {
			err = nil
		}
	}
	if err != nil {
		_ = tx.end(ctx)
		return err
	}
	tx.s.cur = nil
	return nil
}

// Rollback abandons the transaction.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.s.cur != tx {
		return nil
	}
	return tx.end(ctx)
}

// end rolls back what the server holds of the transaction: a session left
// inside it would commit it with its next START TRANSACTION.
func (tx *Tx) end(ctx context.Context) error {
	tx.s.cur = nil
	if !tx.begun || tx.s.conn != tx.conn || tx.conn == nil {
		return nil
	}
	rollback := "ROLLBACK"
	if tx.xa != "" {
		rollback = "XA END " + tx.s.xaXid(tx.xa) + ";\nXA ROLLBACK " + tx.s.xaXid(tx.xa)
	}
	if _, err := tx.exec(context.WithoutCancel(ctx), rollback); err != nil {
		tx.s.dropConn()
		if connLost(err) {
			return nil // the server rolls back a transaction whose session ends
		}
		return fmt.Errorf("sink/mysql: rollback: %w", err)
	}
	return nil
}
