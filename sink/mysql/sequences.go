package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
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
//
// What became of each sequence is kept for the report of the migration
// (CarryObjects): present as the AUTO_INCREMENT of its columns, or not
// carried, saying why.
func (s *Sink) SetSequences(ctx context.Context, seqs []source.Sequence) error {
	carried := map[string]sequenceCarried{}
	for _, q := range seqs {
		column, why, err := s.setSequence(ctx, q)
		if err != nil {
			return err
		}
		name := schema.ObjectName(schema.QualifiedName{Schema: q.Schema, Name: q.Name})
		c := carried[name]
		if column != "" {
			c.columns = append(c.columns, column)
		} else if c.why == "" {
			c.why = why
		}
		carried[name] = c
	}
	s.seqMu.Lock()
	s.seqCarried = carried
	s.seqMu.Unlock()
	return nil
}

// sequenceCarried is what SetSequences made of a sequence: the columns
// whose AUTO_INCREMENT stands for it, or why none.
type sequenceCarried struct {
	columns []string
	why     string
}

// carriedAs says how the last SetSequences carried the sequence the report
// names name; ok is false when it did not see it.
func (s *Sink) sequenceCarried(name string) (how struct {
	state  sink.ObjectState
	reason string
}, ok bool) {
	s.seqMu.Lock()
	c, ok := s.seqCarried[name]
	s.seqMu.Unlock()
	switch {
	case !ok:
	case len(c.columns) > 0:
		how.state, how.reason = sink.ObjectPresent, "as the AUTO_INCREMENT of "+strings.Join(c.columns, ", ")
	default:
		how.state, how.reason = sink.ObjectNotCarried, "not carried to MySQL, which has no sequences: "+c.why
	}
	return how, ok
}

// setSequence gives q's column its AUTO_INCREMENT and returns the column
// (schema.table.column), or why it cannot have one.
func (s *Sink) setSequence(ctx context.Context, q source.Sequence) (column, why string, err error) {
	sch, name := s.dialect.TargetSchema(q.TableSchema), q.Table
	qname := s.dialect.QuoteIdent(sch) + "." + s.dialect.QuoteIdent(name)
	skip := func(why string) (string, string, error) {
		s.log.Info("a sequence is not carried over to MySQL: "+why, "table", qname, "column", q.Column, "sequence", q.Schema+"."+q.Name)
		return "", why, nil
	}
	if q.Standalone || q.Table == "" {
		return skip("it belongs to no replicated column")
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
	colType, isAuto, why, err := s.autoIncrementFit(ctx, s.db, sch, name, q.Column)
	if err != nil {
		return "", "", classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %w", qname, q.Column, err), false)
	}
	if why != "" {
		return skip(why)
	}
	if !isAuto {
		stmt := "ALTER TABLE " + qname + " MODIFY COLUMN " + s.dialect.QuoteIdent(q.Column) + " " + colType + " NOT NULL AUTO_INCREMENT"
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return "", "", classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %s: %w", qname, q.Column, sqlHead(stmt), err), false)
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
		return "", "", classify(fmt.Errorf("sink/mysql: sequence of %s.%s: %s: %w", qname, q.Column, sqlHead(stmt), err), false)
	}
	return q.TableSchema + "." + q.Table + "." + q.Column, "", nil
}

// autoIncrementFit reads the target column sch.name.column: its type,
// whether it is AUTO_INCREMENT, and, when it cannot be, why (MySQL gives
// one only to an integer column that comes first in an index; pgrelay uses
// the primary key's).
func (s *Sink) autoIncrementFit(ctx context.Context, q querier, sch, name, column string) (colType string, isAuto bool, why string, err error) {
	var extra string
	err = q.QueryRowContext(ctx, `SELECT COLUMN_TYPE, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`, sch, name, column).Scan(&colType, &extra)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, "the target has no column " + sch + "." + name + "." + column, nil
	}
	if err != nil {
		return "", false, "", err
	}
	if strings.Contains(strings.ToLower(extra), "auto_increment") {
		return colType, true, "", nil
	}
	base := strings.ToLower(colType)
	if !(strings.HasPrefix(base, "int") || strings.HasPrefix(base, "bigint") || strings.HasPrefix(base, "smallint") ||
		strings.HasPrefix(base, "mediumint") || strings.HasPrefix(base, "tinyint")) {
		return colType, false, "the column is " + colType + ", and AUTO_INCREMENT needs an integer", nil
	}
	var first string
	err = q.QueryRowContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' AND SEQ_IN_INDEX = 1`, sch, name).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !strings.EqualFold(first, column) {
		return colType, false, "AUTO_INCREMENT needs the column first in the table's primary key", nil
	}
	if err != nil {
		return "", false, "", err
	}
	return colType, false, "", nil
}
