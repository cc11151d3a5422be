package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

var _ sink.BulkLoader = (*Sink)(nil)

// readerSeq numbers the readers LOAD DATA reads: the driver's registry is
// the process's, so each load registers a name of its own.
var readerSeq atomic.Int64

// CopyFrom loads rows in PostgreSQL's COPY text format into t's target
// table, in one target transaction: LOAD DATA LOCAL INFILE from a reader
// that converts each value on the fly, with CHARACTER SET utf8mb4. LOAD DATA
// turns bad values and duplicates into warnings even in strict mode, so any
// warning, or fewer rows loaded than sent, fails the load, naming the table
// and the first warning, and nothing of it stays. A server with local_infile
// off gets multi-row INSERTs instead, with a warning that the copy is slower.
// Safe to call concurrently (each load has a connection of its own).
func (s *Sink) CopyFrom(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	m, err := s.dialect.Table(t)
	if err != nil {
		return 0, fmt.Errorf("sink/mysql: copy into %s: %w", t.QualifiedName(), err)
	}
	tm := &tableMap{t: t, m: m, qname: s.dialect.QualifiedTable(t)}
	for _, c := range t.Columns {
		tm.cols = append(tm.cols, s.dialect.QuoteIdent(c.Name))
	}
	tm.insert = "INSERT INTO " + tm.qname + " (" + strings.Join(tm.cols, ", ") + ") VALUES "
	tm.maxRows = max(1, maxPlaceholders/max(1, len(t.Columns)))
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, classify(fmt.Errorf("sink/mysql: copy into %s: %w", tm.qname, err), true)
	}
	defer conn.Close()
	var rows int64
	if s.localInfile {
		rows, err = s.loadData(ctx, conn, tm, r)
	} else {
		s.warnOnce("local_infile", "the target has local_infile off: the snapshot copy loads with multi-row INSERTs, which is slower than LOAD DATA LOCAL INFILE; turn it on with SET GLOBAL local_infile = 1 (and local_infile = 1 in the server's configuration)")
		rows, err = s.insertRows(ctx, conn, tm, r)
	}
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		if connLost(err) {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return 0, classify(err, false)
	}
	return rows, nil
}

// converter is a table's value conversion for the loads, with
// Options.UnfitAsNull applied.
func (s *Sink) loadConverter(tm *tableMap) func(row int64, col int, text []byte) (schema.MySQLValue, error) {
	return func(row int64, col int, text []byte) (schema.MySQLValue, error) {
		v, err := tm.m.Convert(col, text)
		if err == nil {
			return v, nil
		}
		c := &tm.t.Columns[col]
		if s.opts.UnfitAsNull && errors.Is(err, schema.ErrUnfit) && !c.NotNull && !c.Key {
			s.stats.unfitNulled.Add(1)
			s.log.Warn("a value MySQL cannot hold is stored as NULL ("+UnfitSetting+"=null)", "table", tm.qname, "row", row, "error", err.Error())
			return schema.MySQLValue{Kind: schema.MySQLNull}, nil
		}
		return schema.MySQLValue{}, newChangeError(sink.ChangeError{Op: "copy into", Table: tm.qname, Key: fmt.Sprintf("(row %d of the copy)", row), Err: err})
	}
}

// loadData is CopyFrom through LOAD DATA LOCAL INFILE.
func (s *Sink) loadData(ctx context.Context, conn *sql.Conn, tm *tableMap, r io.Reader) (int64, error) {
	tr := &loadTranscoder{in: newCopyReader(r, len(tm.t.Columns)), convert: s.loadConverter(tm)}
	name := fmt.Sprintf("pgrelay_%d_%d", os.Getpid(), readerSeq.Add(1))
	gomysql.RegisterReaderHandler(name, func() io.Reader { return tr })
	defer gomysql.DeregisterReaderHandler(name)
	cols := make([]string, len(tm.cols))
	var set []string
	for i, c := range tm.cols {
		cols[i] = c
		if tm.m.Binary(i) {
			cols[i] = "@v" + strconv.Itoa(i)
			set = append(set, c+" = UNHEX(@v"+strconv.Itoa(i)+")")
		}
	}
	stmt := "LOAD DATA LOCAL INFILE " + schema.QuoteString("Reader::"+name) + " INTO TABLE " + tm.qname +
		" CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (" + strings.Join(cols, ", ") + ")"
	if len(set) > 0 {
		stmt += " SET " + strings.Join(set, ", ")
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return 0, fmt.Errorf("sink/mysql: copy into %s: %w", tm.qname, err)
	}
	res, err := conn.ExecContext(ctx, stmt)
	if err != nil {
		var ce *sink.ChangeError
		if errors.As(err, &ce) {
			return 0, err
		}
		if mysqlNumber(err) == 3948 || mysqlNumber(err) == 1148 {
			return 0, fmt.Errorf("sink/mysql: copy into %s: the server refuses LOAD DATA LOCAL INFILE: turn local_infile on (SET GLOBAL local_infile = 1): %w", tm.qname, err)
		}
		return 0, fmt.Errorf("sink/mysql: copy into %s: %w", tm.qname, err)
	}
	loaded, _ := res.RowsAffected()
	if err := loadWarnings(ctx, conn, tm.qname); err != nil {
		return 0, err
	}
	if loaded != tr.in.line {
		return 0, fmt.Errorf("sink/mysql: copy into %s: %d rows sent and %d loaded; the load is rolled back", tm.qname, tr.in.line, loaded)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("sink/mysql: copy into %s: commit: %w", tm.qname, err)
	}
	return loaded, nil
}

// loadWarnings fails a load the server warned about (a value it changed or
// refused, a duplicate it skipped), naming the first warnings.
func loadWarnings(ctx context.Context, conn *sql.Conn, qname string) error {
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS LIMIT 3")
	if err != nil {
		return fmt.Errorf("sink/mysql: copy into %s: read the load's warnings: %w", qname, err)
	}
	defer rows.Close()
	var warnings []string
	for rows.Next() {
		var level, message string
		var code int
		if err := rows.Scan(&level, &code, &message); err != nil {
			return fmt.Errorf("sink/mysql: copy into %s: read the load's warnings: %w", qname, err)
		}
		warnings = append(warnings, fmt.Sprintf("%s %d: %s", level, code, oneLine(message)))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sink/mysql: copy into %s: read the load's warnings: %w", qname, err)
	}
	if len(warnings) == 0 {
		return nil
	}
	var total int
	_ = conn.QueryRowContext(ctx, "SELECT @@warning_count").Scan(&total)
	return fmt.Errorf("sink/mysql: copy into %s: the server warned about the load (%d warnings: %s); LOAD DATA turns bad values and duplicates into warnings, so the load is rolled back",
		qname, max(total, len(warnings)), strings.Join(warnings, "; "))
}

// insertRows is CopyFrom through multi-row INSERTs, for a server with
// local_infile off.
func (s *Sink) insertRows(ctx context.Context, conn *sql.Conn, tm *tableMap, r io.Reader) (int64, error) {
	in := newCopyReader(r, len(tm.t.Columns))
	convert := s.loadConverter(tm)
	if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return 0, fmt.Errorf("sink/mysql: copy into %s: %w", tm.qname, err)
	}
	var stmt []byte
	var inStmt, total int64
	send := func() error {
		if inStmt == 0 {
			return nil
		}
		res, err := conn.ExecContext(ctx, string(stmt))
		if err != nil {
			return newChangeError(sink.ChangeError{Op: "copy into", Table: tm.qname, Key: fmt.Sprintf("(rows %d to %d of the copy)", total+1, total+inStmt), Err: err})
		}
		if n, _ := res.RowsAffected(); n != inStmt {
			return fmt.Errorf("sink/mysql: copy into %s: %d rows sent and %d inserted", tm.qname, inStmt, n)
		}
		total += inStmt
		stmt, inStmt = stmt[:0], 0
		return nil
	}
	for {
		row, err := in.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("sink/mysql: copy into %s: %w", tm.qname, err)
		}
		if inStmt == 0 {
			stmt = append(stmt, tm.insert...)
		} else {
			stmt = append(stmt, ',')
		}
		stmt = append(stmt, '(')
		for i, f := range row {
			if i > 0 {
				stmt = append(stmt, ", "...)
			}
			v := schema.MySQLValue{Kind: schema.MySQLNull}
			if f != nil {
				if v, err = convert(in.line, i, f); err != nil {
					return 0, err
				}
			}
			stmt = schema.AppendLiteral(stmt, v)
		}
		stmt = append(stmt, ')')
		inStmt++
		if inStmt >= int64(tm.maxRows) || len(stmt) >= s.batchLimit() {
			if err := send(); err != nil {
				return 0, err
			}
		}
	}
	if err := send(); err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("sink/mysql: copy into %s: commit: %w", tm.qname, err)
	}
	return total, nil
}

// Empty empties t's target table before a snapshot copy loads it again
// (TRUNCATE TABLE: no transaction is open on the loads' connections).
func (s *Sink) Empty(ctx context.Context, t *schema.Table) error {
	qname := s.dialect.QualifiedTable(t)
	if _, err := s.db.ExecContext(ctx, "TRUNCATE TABLE "+qname); err != nil {
		return classify(fmt.Errorf("sink/mysql: empty %s: %w", qname, err), false)
	}
	return nil
}

// CreateIndexes builds t's secondary indexes after its data is in, from the
// source's definitions (pg_get_indexdef), as the MySQL dialect translates
// them; one MySQL cannot have (an expression, a partial index, GIN) is left
// out with a warning. An index the table has already is kept.
func (s *Sink) CreateIndexes(ctx context.Context, t *schema.Table, defs []string) error {
	qname := s.dialect.QualifiedTable(t)
	sch, name := s.dialect.TargetTable(t)
	for _, def := range defs {
		idx, err := s.dialect.IndexFromPostgres(t, def)
		if errors.Is(err, schema.ErrIndexLeftOut) {
			s.log.Warn("a secondary index of the source is left out on MySQL", "table", qname, "why", err.Error())
			continue
		}
		if err != nil {
			return fmt.Errorf("sink/mysql: index of %s: %w", qname, err)
		}
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = ?`, sch, name, idx.Name).Scan(&n); err != nil {
			return classify(fmt.Errorf("sink/mysql: index %s of %s: %w", idx.Name, qname, err), false)
		}
		if n > 0 {
			continue
		}
		if _, err := s.db.ExecContext(ctx, idx.SQL); err != nil {
			return classify(fmt.Errorf("sink/mysql: index %s of %s: %s: %w", idx.Name, qname, sqlHead(idx.SQL), err), false)
		}
	}
	return nil
}
