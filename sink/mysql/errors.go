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
)

// errNoIdentity is the error of an update or delete on a table without a
// replica identity key.
var errNoIdentity = fmt.Errorf("%w: pgrelay cannot find the row; give the source table a primary key or REPLICA IDENTITY FULL (PostgreSQL itself refuses such updates and deletes on a publication)", sink.ErrNoIdentity)

// unfitHint ends the error of a value MySQL cannot hold.
const unfitHint = "set " + UnfitSetting + "=null to store NULL for such values instead (each one logged and counted), or keep the value out of the replicated table"

// newChangeError is the error of one change (or a run of them) as this sink
// reports it: the server's refusal worded on one line with its number, and
// marked refused when the target refused the row itself (a value it cannot
// hold, a constraint the row breaks).
func newChangeError(ce sink.ChangeError) *sink.ChangeError {
	ce.Sink = "sink/mysql"
	var me *gomysql.MySQLError
	switch {
	case errors.As(ce.Err, &me):
		ce.Reason = oneLine(me.Message) + fmt.Sprintf(" (error %d)", me.Number)
		ce.Refused = valueNumbers[me.Number] || constraintNumbers[me.Number]
	case errors.Is(ce.Err, schema.ErrUnfit):
		ce.Refused = true
		ce.Hint = unfitHint
	default:
		ce.Reason = oneLine(ce.Err.Error())
	}
	return &ce
}

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
	erServerShutdown    = 1053
	erTooManyConns      = 1040
	erConnKilled        = 1927 // MariaDB
	erClientInteraction = 4031 // MySQL 8: disconnected for inactivity
	erOptionPrevents    = 1290 // read_only, super_read_only (and options pgrelay never meets)
	erReadOnlyMode      = 1836 // MySQL: running in read-only mode
	erReadOnlyTx        = 1792 // a write in a READ ONLY transaction
	erTableReadOnly     = 1036 // table is read only (innodb_read_only)
	erAccessDenied      = 1142 // command denied for a table
	erDBAccessDenied    = 1044 // access denied to a database
	erNoSuchTable       = 1146
	erBadTable          = 1051 // DROP of an unknown table
	erBadDB             = 1049
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

// constraintNumbers are the server errors of a row that breaks a constraint
// of the target table.
var constraintNumbers = map[uint16]bool{
	1062: true, // duplicate entry
	1451: true, // a foreign key's parent row (foreign_key_checks is off; a table's own)
	1452: true,
	1169: true, // unique constraint
}

// readOnlyNumbers are the server errors of a write the target refuses as
// read-only.
var readOnlyNumbers = map[uint16]bool{erOptionPrevents: true, erReadOnlyMode: true, erReadOnlyTx: true, erTableReadOnly: true}

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

// readOnlyCause is the cause of a refused write while what makes the
// target read-only is not known yet (the relay asks Preflight).
const readOnlyCause = "the server takes no writes from this user (read_only, super_read_only or innodb_read_only is on, or it is a replica): make it writable, or point PGRELAY_TARGET_URL at the primary"

// classify marks err with its class: a write refused by a read-only target
// as a *sink.ReadOnlyError (sink.ErrReadOnly), sink.Retryable when the
// transaction may be retried, sink.ValueRejected for a change's value the
// target refused.
func classify(err error, lost bool) error {
	if err == nil {
		return nil
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) && readOnlyNumbers[me.Number] && !errors.Is(err, sink.ErrReadOnly) {
		return &sink.ReadOnlyError{Cause: readOnlyCause, Err: err}
	}
	if isRetryable(err, lost) {
		return sink.Retryable(err)
	}
	var ce *sink.ChangeError
	if errors.As(err, &ce) && (errors.As(err, &me) && valueNumbers[me.Number] || errors.Is(err, schema.ErrUnfit)) {
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

// changeError is the error of one change, naming its table, row and LSN.
func (s *Sink) changeError(kind opKind, tm *tableMap, ch *sink.Change, err error) error {
	return newChangeError(sink.ChangeError{Op: kind.String(), Table: tm.qname, LSN: ch.LSN, Key: keyText(tm, ch), Err: err})
}
