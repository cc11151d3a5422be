package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var _ sink.SequenceSetter = (*Sink)(nil)

// SetSequences gives each serial or identity column whose target column can
// carry one an AUTO_INCREMENT set past the source sequence's value: MySQL
// has no sequences, and a table has at most one AUTO_INCREMENT column, the
// first of an index. A column that cannot (not an integer, not first in its
// table's primary key, a sequence counting down or not readable) is left as
// it is, with a log line saying why. Replicated rows keep their values
// either way (the sessions run with NO_AUTO_VALUE_ON_ZERO).
func (s *Sink) SetSequences(ctx context.Context, seqs []source.Sequence) error {
	for _, q := range seqs {
		if err := s.setSequence(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) setSequence(ctx context.Context, q source.Sequence) error {
	sch, name := s.dialect.TargetSchema(q.TableSchema), q.Table
	qname := s.dialect.QuoteIdent(sch) + "." + s.dialect.QuoteIdent(name)
	skip := func(why string) error {
		s.log.Info("a sequence is not carried over to MySQL: "+why, "table", qname, "column", q.Column, "sequence", q.Schema+"."+q.Name)
		return nil
	}
	if q.Standalone || q.Table == "" {
		return skip("it belongs to no replicated column, and MySQL has no sequences")
	}
	if !q.Readable {
		return skip("pgrelay may not read its value on the source")
	}
	if q.Increment <= 0 {
		return skip("it counts down, and AUTO_INCREMENT counts up")
	}
	next := q.LastValue
	if q.Called {
		next += q.Increment
	}
	var colType, extra string
	err := s.db.QueryRowContext(ctx, `SELECT COLUMN_TYPE, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`, sch, name, q.Column).Scan(&colType, &extra)
	if errors.Is(err, sql.ErrNoRows) {
		return skip("the target has no such column")
	}
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %w", qname, q.Column, err), false)
	}
	if !strings.Contains(strings.ToLower(extra), "auto_increment") {
		base := strings.ToLower(colType)
		if !(strings.HasPrefix(base, "int") || strings.HasPrefix(base, "bigint") || strings.HasPrefix(base, "smallint") ||
			strings.HasPrefix(base, "mediumint") || strings.HasPrefix(base, "tinyint")) {
			return skip("the column is " + colType + ", and AUTO_INCREMENT needs an integer")
		}
		var first string
		err := s.db.QueryRowContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' AND SEQ_IN_INDEX = 1`, sch, name).Scan(&first)
		if errors.Is(err, sql.ErrNoRows) || err == nil && !strings.EqualFold(first, q.Column) {
			return skip("AUTO_INCREMENT needs the column first in the table's primary key")
		}
		if err != nil {
			return classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %w", qname, q.Column, err), false)
		}
		stmt := "ALTER TABLE " + qname + " MODIFY COLUMN " + s.dialect.QuoteIdent(q.Column) + " " + colType + " NOT NULL AUTO_INCREMENT"
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %s: %w", qname, q.Column, sqlHead(stmt), err), false)
		}
	}
	if q.Increment != 1 {
		s.log.Info("AUTO_INCREMENT steps by auto_increment_increment, not by the source sequence's increment",
			"table", qname, "column", q.Column, "increment", q.Increment)
	}
	if next < 1 {
		next = 1
	}
	// InnoDB never sets it below the column's largest value plus one.
	stmt := "ALTER TABLE " + qname + " AUTO_INCREMENT = " + strconv.FormatInt(next, 10)
	if _, err := s.db.ExecContext(ctx, stmt); err != nil {
		return classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %s: %w", qname, q.Column, sqlHead(stmt), err), false)
	}
	return nil
}
