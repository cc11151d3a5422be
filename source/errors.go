package source

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Fatal reports whether err is an error of a PostgreSQL server or of the
// connection to one that no retry cures, whatever else it carries: a
// certificate that does not verify, TLS required but refused, bad credentials,
// no such database, a permission or syntax error, a preflight problem. A
// person must act.
func Fatal(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var badCert x509.CertificateInvalidError
	var badHost x509.HostnameError
	var pgErr *pgconn.PgError
	var pre *PreflightError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &badCert), errors.As(err, &badHost), tlsRefused(err):
		return true
	case errors.As(err, &pgErr):
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "28", "3D", "42": // bad credentials, no such database, permissions and syntax
			return true
		}
	case errors.As(err, &pre):
		return true
	}
	return false
}

// tlsRefused tells the server's refusal of TLS that the connection settings
// require (sslmode=require or verify-*). pgconn reports it with an error of no
// type of its own, inside its ConnectError: its text is all there is to go by.
func tlsRefused(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) && anyInChain(ce.Unwrap(), func(e error) bool { return e.Error() == "server refused TLS connection" })
}

// anyInChain reports whether match holds for err or any error it wraps.
func anyInChain(err error, match func(error) bool) bool {
	if err == nil {
		return false
	}
	if match(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return anyInChain(u.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if anyInChain(e, match) {
				return true
			}
		}
	}
	return false
}

// Retryable reports whether err is one after which a new session may succeed
// (unless Fatal says otherwise): a lost or refused connection, a server
// shutting down or starting, the slot busy, the stream ended, a snapshot too
// large for the moment.
func Retryable(err error) bool {
	var ne net.Error
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	switch {
	case errors.Is(err, ErrSlotInUse), errors.Is(err, ErrStreamEnded), errors.Is(err, ErrSnapshotTooLarge),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.As(err, &ne), errors.As(err, &connErr), pgconn.SafeToRetry(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01..57P03: shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}
