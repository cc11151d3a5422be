package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// What a target older than the source cannot build, and nothing replicated
// depends on, is left out with a warning rather than stopping pgrelay at
// every run: a secondary index (UNIQUE NULLS NOT DISTINCT before
// PostgreSQL 15, an operator class of an extension the target lacks) and a
// column default (uuidv7() before 18). Primary keys are built elsewhere
// and still fail loudly: apply finds rows by them.

// unbuildable reports whether err says the target does not understand a
// definition (syntax, a function, type, operator class or storage parameter
// it lacks, a feature it does not have), as opposed to a failure of the
// moment or a privilege the user must grant.
func unbuildable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch {
	case pgErr.Code == "42501": // insufficient_privilege
		return false
	case strings.HasPrefix(pgErr.Code, "42"), // syntax error or undefined object
		pgErr.Code == "0A000", // feature_not_supported
		pgErr.Code == "22023": // invalid_parameter_value: an unknown storage parameter
		return true
	}
	return false
}

// violated reports whether err is a unique or exclusion constraint's
// violation.
func violated(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "23P01")
}

// logger is where the sink's warnings go.
func (s *Sink) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// warnIndexLeftOut reports a secondary index of table the target could not
// build.
func (s *Sink) warnIndexLeftOut(table, def string, err error) {
	s.logger().Warn("secondary index left out: the target cannot build it (nothing replicated depends on it; create an equivalent one by hand if queries need it)",
		"table", table, "index", indexName(def), "definition", def, "error", describe(err))
}

// indexName is the name in "CREATE [UNIQUE] INDEX [IF NOT EXISTS] name ON …",
// or the constraint's in a constraint's DO block ("… ADD CONSTRAINT "name" …",
// always quoted); "" for another statement.
func indexName(def string) string {
	for _, head := range []string{"CREATE UNIQUE INDEX ", "CREATE INDEX "} {
		if rest, ok := strings.CutPrefix(def, head); ok {
			rest = strings.TrimPrefix(rest, "IF NOT EXISTS ")
			if name, _, ok := strings.Cut(rest, " ON "); ok {
				return name
			}
		}
	}
	if _, rest, ok := strings.Cut(def, " ADD CONSTRAINT \""); ok {
		for i := 0; i < len(rest); i++ {
			if rest[i] != '"' {
				continue
			}
			if i+1 < len(rest) && rest[i+1] == '"' {
				i++ // a doubled quote inside the name
				continue
			}
			return `"` + rest[:i+1]
		}
	}
	return ""
}

// buildIndexes builds the secondary indexes of a table created inside the
// transaction, each under a savepoint: one the target cannot build is left
// out with a warning, and the transaction goes on. Built on a table that
// holds rows (existing: its key moved), one the rows violate is left out
// too: the source's catalog, read now, may be newer than the rows.
func (tx *Tx) buildIndexes(ctx context.Context, qname string, defs []string, existing bool) error {
	if err := tx.send(ctx); err != nil {
		return err
	}
	conn := tx.s.conn
	fail := func(def string, err error) error {
		return tx.fail(classify(changeError(sink.ChangeError{Op: "build index of", Table: qname, Err: fmt.Errorf("%s: %w", def, err)}), conn.IsClosed()))
	}
	for _, def := range defs {
		// SAVEPOINT on its own: a definition the target cannot parse fails
		// the whole query string it is in.
		if _, err := conn.PgConn().Exec(ctx, "SAVEPOINT pgrelay_index").ReadAll(); err != nil {
			return fail(def, err)
		}
		_, err := conn.PgConn().Exec(ctx, def+"; RELEASE SAVEPOINT pgrelay_index").ReadAll()
		if err == nil {
			continue
		}
		if !(unbuildable(err) || existing && violated(err)) || conn.IsClosed() {
			return fail(def, err)
		}
		if _, rerr := conn.PgConn().Exec(ctx, "ROLLBACK TO SAVEPOINT pgrelay_index; RELEASE SAVEPOINT pgrelay_index").ReadAll(); rerr != nil {
			return fail(def, rerr)
		}
		tx.s.warnIndexLeftOut(qname, def, err)
	}
	return nil
}

// leaveOutDefaults returns t, or a copy of it in which the columns whose
// default the target cannot create are marked OmitDefault, each with a
// warning. Only the defaults the DDL sets are checked: every one when the
// table is created (prev nil), else those of new columns and changed ones.
// The check parses each default as SELECT CAST((default) AS type) on the
// metadata connection (the types are committed by then): parsing runs
// nothing, and an explicit cast accepts whatever the column's assignment
// would.
func (s *Sink) leaveOutDefaults(ctx context.Context, t, prev *schema.Table) (*schema.Table, error) {
	var check []int
	for i := range t.Columns {
		c := &t.Columns[i]
		dflt := schema.TargetDefault(c)
		if dflt == "" {
			continue
		}
		if prev != nil {
			if p := prev.Column(c.Name); p != nil && schema.TargetDefault(p) == dflt {
				continue
			}
		}
		check = append(check, i)
	}
	if len(check) == 0 {
		return t, nil
	}
	probe := func(conn *pgx.Conn, cols []int) error {
		list := make([]string, len(cols))
		for k, i := range cols {
			c := &t.Columns[i]
			list[k] = "CAST((" + schema.TargetDefault(c) + ") AS " + c.TypeName + ")"
		}
		_, err := conn.PgConn().Prepare(ctx, "", "SELECT "+strings.Join(list, ", "), nil)
		return err
	}
	omit := map[int]error{}
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		// All at once first: the usual answer is that all of them parse.
		err := probe(conn, check)
		if err == nil || !unbuildable(err) {
			return err
		}
		for _, i := range check {
			if err := probe(conn, []int{i}); err != nil {
				if !unbuildable(err) {
					return err
				}
				omit[i] = err
			}
		}
		return nil
	})
	qname := quotedTable(s.dialect, t)
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: check the column defaults of %s on the target: %w", qname, err)
	}
	if len(omit) == 0 {
		return t, nil
	}
	out := *t
	out.Columns = slices.Clone(t.Columns)
	for _, i := range check {
		if err, ok := omit[i]; ok {
			c := &out.Columns[i]
			c.OmitDefault = true
			s.logger().Warn("column default left out: the target cannot create it (replicated rows carry their values; the target's own inserts get none)",
				"table", qname, "column", c.Name, "default", c.Default, "error", describe(err))
		}
	}
	return &out, nil
}
