package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

const preparedRowSQL = `INSERT INTO pgrelay.prepared (slot, gid, end_lsn, created_at)
VALUES ($1, $2, $3::text::pg_lsn, now())`

// Prepare prepares tx under gid instead of committing it.
func (s *Sink) Prepare(ctx context.Context, stx sink.Tx, gid string, p sink.Progress) error {
	tx, ok := stx.(*Tx)
	if !ok || tx.s != s {
		return errors.New("sink/postgres: prepare: transaction is not from this sink")
	}
	if tx.done {
		return errors.New("sink/postgres: prepare: transaction already finished")
	}
	err := tx.prepare(ctx, gid, p)
	if err == nil {
		tx.finish()
		return nil
	}
	var se *sendError
	if !errors.As(err, &se) || !se.commitUnknown {
		// Nothing is prepared: the failed transaction is rolled back.
		_ = tx.Rollback(ctx)
	}
	tx.finish()
	if se != nil && se.commitUnknown {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
		defer cancel()
		conn, cerr := s.applyConn(ctx)
		if cerr != nil {
			return fmt.Errorf("sink/postgres: prepare transaction %s: outcome unknown (%v) and the target cannot be reached; restarting reconciles prepared transactions: %w", pgquote.Literal(gid), err, cerr)
		}
		prepared, qerr := isPrepared(ctx, conn, gid)
		if qerr != nil {
			return fmt.Errorf("sink/postgres: prepare transaction %s: outcome unknown (%v); restarting reconciles prepared transactions: %w", pgquote.Literal(gid), err, qerr)
		}
		if prepared {
			return nil
		}
		return sink.Retryable(err)
	}
	if sqlState(err) == "55000" && !s.canPrepare {
		return fmt.Errorf("sink/postgres: prepare transaction %s: the target has max_prepared_transactions = 0: set it above 0 and restart the target, or run with PGRELAY_TWO_PHASE=off: %w", pgquote.Literal(gid), err)
	}
	return err
}

func (tx *Tx) prepare(ctx context.Context, gid string, p sink.Progress) error {
	if tx.err != nil {
		return tx.err
	}
	if gid == "" || len(gid) > 200 {
		return tx.fail(fmt.Errorf("sink/postgres: prepare: gid %q must be 1 to 200 bytes", gid))
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.flushRun(ctx); err != nil {
		return err
	}
	tx.queueBegin()
	tx.batch.ExecParams(preparedRowSQL, [][]byte{[]byte(tx.s.slotFor(p)), []byte(gid), []byte(p.LSN.String())}, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opPreparedRow, lsn: p.LSN})
	if err := tx.sendChecked(ctx); err != nil {
		return err
	}
	tx.batch.ExecParams("PREPARE TRANSACTION "+pgquote.Literal(gid), nil, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opPrepare, table: pgquote.Literal(gid), lsn: p.LSN})
	return tx.send(ctx)
}

// CommitPrepared commits the prepared transaction gid and records p.
func (s *Sink) CommitPrepared(ctx context.Context, gid string, p sink.Progress) error {
	return s.finishPrepared(ctx, "COMMIT PREPARED", gid, p)
}

// RollbackPrepared rolls back the prepared transaction gid and records p.
func (s *Sink) RollbackPrepared(ctx context.Context, gid string, p sink.Progress) error {
	return s.finishPrepared(ctx, "ROLLBACK PREPARED", gid, p)
}

func (s *Sink) finishPrepared(ctx context.Context, verb, gid string, p sink.Progress) error {
	if s.cur != nil {
		return fmt.Errorf("sink/postgres: %s %s: a transaction is open on the apply connection", strings.ToLower(verb), pgquote.Literal(gid))
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return err
	}
	prefix := "sink/postgres: " + strings.ToLower(verb) + " " + pgquote.Literal(gid)
	if _, err := conn.PgConn().Exec(ctx, verb+" "+pgquote.Literal(gid)).ReadAll(); err != nil {
		if sqlState(err) != "42704" { // undefined_object: not prepared (any more)
			// Retrying is safe: a retry that finds the gid gone settles it below.
			return classify(fmt.Errorf("%s at source LSN %s: %s: %w", prefix, p.LSN, describe(err), err), conn.IsClosed())
		}
		committed, qerr := preparedRow(ctx, conn, gid)
		if qerr != nil {
			return classify(fmt.Errorf("%s: look up pgrelay.prepared: %w", prefix, qerr), conn.IsClosed())
		}
		switch {
		case verb == "COMMIT PREPARED" && !committed:
			return fmt.Errorf("%s at source LSN %s: the target has no such prepared transaction and no record of committing it: it was rolled back or never prepared, so the target is missing a source transaction; re-seed the target", prefix, p.LSN)
		case verb == "ROLLBACK PREPARED" && committed:
			return fmt.Errorf("%s at source LSN %s: the prepared transaction was already committed on the target and cannot be rolled back; the target has diverged, re-seed it", prefix, p.LSN)
		}
		// Finished before a crash: only the bookkeeping is left.
	}
	var fills []string
	if verb == "COMMIT PREPARED" {
		if fills, err = s.fillStatements(ctx, conn, gid); err != nil {
			return classify(fmt.Errorf("%s at source LSN %s: %w", prefix, p.LSN, err), conn.IsClosed())
		}
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	tx.queueBegin()
	for _, stmt := range fills {
		tx.batch.ExecParams(stmt, [][]byte{[]byte(gid)}, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opPreparedFill, lsn: p.LSN, detail: stmt})
	}
	tx.batch.ExecParams("DELETE FROM pgrelay.prepared_fill WHERE gid = $1", [][]byte{[]byte(gid)}, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opPreparedRow, lsn: p.LSN})
	tx.batch.ExecParams("DELETE FROM pgrelay.prepared WHERE gid = $1", [][]byte{[]byte(gid)}, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opPreparedRow, lsn: p.LSN})
	return tx.Commit(ctx, p)
}

// SetFillResolver implements sink.PreparedFills.
func (s *Sink) SetFillResolver(r sink.FillResolver) { s.fill = r }

// DeferFill implements sink.PreparedFills: a row per column in
// pgrelay.prepared_fill, inserted in the open transaction. The row's xmin and
// cmin mark the point of the ADD COLUMN: target rows written before it, by
// earlier transactions or earlier in this one, are the ones to fill. A column
// added again (dropped in between) moves the row's mark to the new point.
func (s *Sink) DeferFill(ctx context.Context, gid string, t *schema.Table, columns []string) error {
	tx := s.cur
	if tx == nil {
		return errors.New("sink/postgres: defer fill: no open transaction")
	}
	if err := tx.usable(); err != nil {
		return err
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.flushRun(ctx); err != nil {
		return err
	}
	qname := quotedTable(s.dialect, t)
	sch, name := s.dialect.TargetTable(t)
	tx.queueBegin()
	for _, col := range columns {
		tx.batch.ExecParams(`INSERT INTO pgrelay.prepared_fill (gid, target_schema, target_table, column_name, source_schema, source_table, source_relid)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (gid, target_schema, target_table, column_name)
			DO UPDATE SET source_schema = excluded.source_schema, source_table = excluded.source_table, source_relid = excluded.source_relid`,
			[][]byte{[]byte(gid), []byte(sch), []byte(name), []byte(col), []byte(t.Schema), []byte(t.Name), []byte(strconv.FormatUint(uint64(t.RelationID), 10))}, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opPreparedFill, table: qname, detail: col})
	}
	return tx.send(ctx)
}

// fillStatements returns the UPDATEs (taking the gid as $1) that give the
// older rows of the columns the committed prepared transaction gid added their
// fill value. A target row is older than the column when a transaction before
// the prepared one wrote it, or the prepared one did before the ADD COLUMN
// (a lower command id than the pgrelay.prepared_fill row's). A target rewrite
// of the table later in the same transaction (ALTER COLUMN … TYPE) would hide
// the older rows: they then keep NULL.
func (s *Sink) fillStatements(ctx context.Context, conn *pgx.Conn, gid string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT f.target_schema, f.target_table, f.column_name, f.source_schema, f.source_table, coalesce(f.source_relid, 0),
			c.oid IS NOT NULL AND EXISTS (SELECT FROM pg_catalog.pg_attribute a
				WHERE a.attrelid = c.oid AND a.attname = f.column_name AND a.attnum > 0 AND NOT a.attisdropped)
		FROM pgrelay.prepared_fill f
		LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = f.target_schema
		LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = f.target_table
		WHERE f.gid = $1 ORDER BY 1, 2, 3`, gid)
	if err != nil {
		return nil, fmt.Errorf("read pgrelay.prepared_fill: %w", err)
	}
	type deferred struct {
		tschema, ttable, column, sschema, stable string
		srelid                                   uint32
		exists                                   bool
	}
	var ds []deferred
	var d deferred
	if _, err := pgx.ForEachRow(rows, []any{&d.tschema, &d.ttable, &d.column, &d.sschema, &d.stable, &d.srelid, &d.exists}, func() error {
		ds = append(ds, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read pgrelay.prepared_fill: %w", err)
	}
	// One UPDATE per table: an UPDATE makes rows of this transaction, which a
	// second one would take for newer than the column.
	var stmts []string
	var from, set, where []string
	flush := func(table string) {
		if len(set) > 0 {
			stmts = append(stmts, "UPDATE "+table+" t SET "+strings.Join(set, ", ")+"\nFROM "+strings.Join(from, ", ")+
				"\nWHERE "+strings.Join(where, "\n   OR "))
		}
		from, set, where = nil, nil, nil
	}
	prevTable := ""
	for _, d := range ds {
		table := s.dialect.QuoteIdent(d.tschema) + "." + s.dialect.QuoteIdent(d.ttable)
		if table != prevTable {
			flush(prevTable)
			prevTable = table
		}
		if !d.exists || s.fill == nil {
			// Dropped again (or the table with it) in the same transaction.
			continue
		}
		fill, found, volatile, err := s.fill(ctx, d.srelid, d.sschema, d.stable, d.column)
		if err != nil {
			return nil, fmt.Errorf("fill value of column %q of %s.%s: %w", d.column, d.sschema, d.stable, err)
		}
		switch {
		case !found || fill == nil && !volatile:
			continue
		case fill == nil:
			return nil, fmt.Errorf("column %q of %s.%s was added with a default that is not immutable (or as an identity column), inside a prepared transaction: the source's older rows hold values it gave there, which cannot be known; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew: %w",
				d.column, d.sschema, d.stable, schema.ErrVolatileDefault)
		}
		f := fmt.Sprintf("f%d", len(from))
		col := s.dialect.QuoteIdent(d.column)
		from = append(from, `(SELECT xmin AS x, cmin::text::bigint AS c FROM pgrelay.prepared_fill WHERE gid = $1 AND target_schema = `+
			pgquote.Literal(d.tschema)+` AND target_table = `+pgquote.Literal(d.ttable)+` AND column_name = `+pgquote.Literal(d.column)+`) `+f)
		older := fmt.Sprintf("t.%s IS NULL AND (pg_catalog.age(t.xmin) > pg_catalog.age(%[2]s.x) OR t.xmin = %[2]s.x AND t.cmin::text::bigint < %[2]s.c)", col, f)
		set = append(set, fmt.Sprintf("%s = CASE WHEN %s THEN %s ELSE t.%s END", col, older, schema.PostgresDialect{}.Literal(fill), col))
		where = append(where, "("+older+")")
	}
	flush(prevTable)
	return stmts, nil
}

// PreparedGIDs lists the prepared transactions of the target's current database
// whose GID starts with prefix.
func (s *Sink) PreparedGIDs(ctx context.Context, prefix string) ([]string, error) {
	var gids []string
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT gid FROM pg_catalog.pg_prepared_xacts
			WHERE database = current_database() AND left(gid, length($1)) = $1 ORDER BY prepared, gid`, prefix)
		if err != nil {
			return err
		}
		gids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: list prepared transactions: %w", err)
	}
	return gids, nil
}

// HeldPrepared lists slot's prepared transactions in the target's current
// database with their age by the server's clock (sink.PreparedLister).
func (s *Sink) HeldPrepared(ctx context.Context, slot string) ([]sink.HeldPrepared, error) {
	var held []sink.HeldPrepared
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT gid, extract(epoch FROM pg_catalog.statement_timestamp() - prepared)::float8
			FROM pg_catalog.pg_prepared_xacts
			WHERE database = pg_catalog.current_database() AND pg_catalog.left(gid, pg_catalog.length($1)) = $1 ORDER BY prepared, gid`, sink.GIDPrefix(slot))
		if err != nil {
			return err
		}
		var gid string
		var age float64
		_, err = pgx.ForEachRow(rows, []any{&gid, &age}, func() error {
			if sink.OwnGID(slot, gid) {
				held = append(held, sink.HeldPrepared{GID: gid, Age: time.Duration(max(age, 0) * float64(time.Second))})
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: list the prepared transactions of slot %q: %w", slot, err)
	}
	return held, nil
}

// PreparedRow reports whether pgrelay.prepared holds a committed row for gid. A
// gid that is no longer in pg_prepared_xacts but has a row was committed.
func (s *Sink) PreparedRow(ctx context.Context, gid string) (found bool, err error) {
	err = s.withMeta(ctx, func(conn *pgx.Conn) error {
		found, err = preparedRow(ctx, conn, gid)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sink/postgres: read pgrelay.prepared: %w", err)
	}
	return found, nil
}

// PreparedCommitted implements sink.PreparedCommits: the row the prepared
// transaction inserted is committed (with the same prepare end LSN, so a
// wrapped-around xid's old row does not count) and the gid is no longer
// prepared.
func (s *Sink) PreparedCommitted(ctx context.Context, gid string, prepareEnd source.LSN) (committed bool, err error) {
	err = s.withMeta(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pgrelay.prepared WHERE gid = $1 AND end_lsn = $2::text::pg_lsn)
			AND NOT EXISTS (SELECT FROM pg_catalog.pg_prepared_xacts WHERE database = current_database() AND gid = $1)`,
			gid, prepareEnd.String()).Scan(&committed)
	})
	if err != nil {
		return false, fmt.Errorf("sink/postgres: read pgrelay.prepared: %w", err)
	}
	return committed, nil
}

func preparedRow(ctx context.Context, conn *pgx.Conn, gid string) (bool, error) {
	var found bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pgrelay.prepared WHERE gid = $1)", gid).Scan(&found)
	return found, err
}

func isPrepared(ctx context.Context, conn *pgx.Conn, gid string) (bool, error) {
	var found bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_prepared_xacts
		WHERE database = current_database() AND gid = $1)`, gid).Scan(&found)
	return found, err
}
