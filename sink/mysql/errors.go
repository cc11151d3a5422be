package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// ErrRowNotFound is wrapped by the error of an update or delete whose row is
// not on the target: the target has diverged from the source.
var ErrRowNotFound = errors.New("row not found on the target (the target has diverged from the source: rows changed there, or the publication changed since the copy; run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always)")

// ErrNoIdentity is wrapped by the error of an update or delete on a table
// without a replica identity key.
var ErrNoIdentity = errors.New("table has no replica identity: pgrelay cannot find the row; give the source table a primary key or REPLICA IDENTITY FULL (PostgreSQL itself refuses such updates and deletes on a publication)")

// ChangeError is the error of one change: what it did, to which table, which
// row, at which source LSN, and what went wrong.
type ChangeError struct {
	Op    string // "insert into", "update", "delete from", "truncate", …
	Table string // quoted target name, e.g. `db`.`t`
	LSN   source.LSN
	// LastLSN is set when the failing change of a run is unknown: it is
	// somewhere in LSN..LastLSN.
	LastLSN source.LSN
	Key     string // the row's identity, e.g. (id)=(42)
	Err     error
}

func (e *ChangeError) Error() string {
	var b strings.Builder
	b.WriteString("sink/mysql: ")
	b.WriteString(e.Op)
	if e.Table != "" {
		b.WriteString(" " + e.Table)
	}
	if e.Key != "" {
		b.WriteString(" key " + e.Key)
	}
	if e.LSN != 0 || e.LastLSN != 0 {
		fmt.Fprintf(&b, " at source LSN %s", e.LSN)
		if e.LastLSN != 0 && e.LastLSN != e.LSN {
			fmt.Fprintf(&b, "..%s", e.LastLSN)
		}
	}
	b.WriteString(": ")
	b.WriteString(oneLine(e.Err.Error()))
	if errors.Is(e.Err, schema.ErrUnfit) {
		b.WriteString("; fix the value on the source, or set " + UnfitSetting + "=null to store NULL for such values (each is logged)")
	}
	return b.String()
}

func (e *ChangeError) Unwrap() error { return e.Err }

// oneLine folds a message (a server's may quote SQL with line breaks) onto
// one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// MySQL error numbers the sink tells apart.
const (
	erLockWaitTimeout   = 1205
	erDeadlock          = 1213
	erDupEntry          = 1062
	erServerShutdown    = 1053
	erTooManyConns      = 1040
	erConnKilled        = 1927 // MariaDB
	erClientInteraction = 4031 // MySQL 8: disconnected for inactivity
	erQueryInterrupted  = 1317
	erReadOnly          = 1290
	erOptionPrevents    = 1290
)

// retryableNumbers are the server errors after which a whole target
// transaction can be retried: nothing of it was committed and a new attempt
// can succeed.
var retryableNumbers = map[uint16]bool{
	erLockWaitTimeout: true, erDeadlock: true, erServerShutdown: true, erTooManyConns: true,
	erConnKilled: true, erClientInteraction: true, 1158: true, 1159: true, 1160: true, 1161: true, // network read/write errors
	1180: true, // got error during COMMIT
}

// valueNumbers are the server errors that refuse a change's value.
var valueNumbers = map[uint16]bool{
	1264: true, // out of range
	1265: true, // data truncated
	1292: true, // incorrect datetime/date/… value
	1366: true, // incorrect integer/decimal/string value
	1367: true, // illegal value
	1406: true, // data too long
	1048: true, // column cannot be null
	3140: true, // invalid JSON text (MySQL)
	4025: true, // CONSTRAINT failed (MariaDB's JSON check)
	3819: true, // check constraint violated (MySQL)
	1411: true, // incorrect value for function
}

// isRetryable reports whether the transaction that failed with err can be
// retried as a whole; lost tells that the connection is gone (a transaction
// cut off before COMMIT was sent is rolled back by the server).
func isRetryable(err error, lost bool) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, schema.ErrUnfit) {
		return false
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return retryableNumbers[me.Number]
	}
	if lost || connLost(err) {
		return true
	}
	return false
}

// connLost reports whether err means the connection is gone.
func connLost(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// classify wraps err with sink.Retryable when the transaction may be retried,
// and a change's value refused by the target with sink.ValueRejected.
func classify(err error, lost bool) error {
	if err == nil {
		return nil
	}
	if isRetryable(err, lost) {
		return sink.Retryable(err)
	}
	var ce *ChangeError
	var me *gomysql.MySQLError
	if errors.As(err, &ce) && errors.As(err, &me) && valueNumbers[me.Number] {
		return sink.ValueRejected(err)
	}
	return err
}

// mysqlNumber is the server error number of err, 0 for others.
func mysqlNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
