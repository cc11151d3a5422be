package postgres

import (
	"context"
	"fmt"
	"io"

	"github.com/pgrelay/pgrelay/schema"
)

// CopyFrom loads rows in COPY text format (columns in t's order) into t's
// target table on a connection of its own, committing at the end: a failure
// leaves nothing of this call behind. Several CopyFrom calls may run at once
// (parallel copy of tables or of CTID ranges of one table).
func (s *Sink) CopyFrom(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	return s.copyFrom(ctx, t, r, false)
}

// CopyFromClean truncates t's target table and loads r in the same
// transaction, with COPY FREEZE. Use it to redo a table whose earlier copy did
// not finish: the table starts clean and the rows need no later vacuum freeze.
// It must be the only load into the table (not for parallel CTID ranges:
// truncate once, then CopyFrom each range).
func (s *Sink) CopyFromClean(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	return s.copyFrom(ctx, t, r, true)
}

func (s *Sink) copyFrom(ctx context.Context, t *schema.Table, r io.Reader, clean bool) (rows int64, err error) {
	ts := newTableStatements(s.dialect, t)
	conn, err := s.connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	pg := conn.PgConn()
	sql := ts.copySQL
	if clean {
		if _, err := pg.Exec(ctx, "BEGIN; TRUNCATE "+ts.qname).ReadAll(); err != nil {
			return 0, classify(&ChangeError{Op: "truncate", Table: ts.qname, Err: err}, conn.IsClosed())
		}
		sql += " WITH (FREEZE)"
	}
	tag, err := pg.CopyFrom(ctx, r, sql)
	if err != nil {
		ce := &ChangeError{Op: "copy into", Table: ts.qname, Err: err}
		if line := copyLine(err); line > 0 {
			ce.Op = fmt.Sprintf("copy (input line %d) into", line)
		}
		return 0, classify(ce, conn.IsClosed())
	}
	if clean {
		if _, err := pg.Exec(ctx, "COMMIT").ReadAll(); err != nil {
			return 0, classify(&ChangeError{Op: "commit copy into", Table: ts.qname, Err: err}, conn.IsClosed())
		}
	}
	return tag.RowsAffected(), nil
}
