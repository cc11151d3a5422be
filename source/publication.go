package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// ErrPublicationDropped: the publication was missing at a change the slot
// had to send (PublicationDroppedError).
var ErrPublicationDropped = errors.New("publication dropped under the slot")

// PublicationDroppedError says that the slot cannot send its changes through
// the publication any more: the source reads the publication as it was at
// each change (the historic catalog of logical decoding), so changes made
// while it did not exist cannot be sent through it, even once it is created
// again. PostgreSQL 17 and older stop the stream at such a change; 18 skips
// it with a warning. Only a new slot and a new copy get past it.
type PublicationDroppedError struct {
	Publication, Slot string
	Err               error // the source's word for it, if any
}

func (e *PublicationDroppedError) Error() string {
	return fmt.Sprintf("publication %q is missing for slot %q: it was dropped or renamed after the slot was made (or PGRELAY_PUBLICATION changed), and the source reads the publication as it was at each change, so the slot cannot send the changes made without it, and creating it again does not bring them back; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
		e.Publication, e.Slot)
}

func (e *PublicationDroppedError) Unwrap() error { return e.Err }

// Is holds for ErrPublicationDropped, and ErrPublicationMissing: the
// publication is missing, and creating it is no fix.
func (e *PublicationDroppedError) Is(target error) bool {
	return target == ErrPublicationDropped || target == ErrPublicationMissing
}

// publicationSkipped tells the warning of PostgreSQL 18's pgoutput that it
// skipped a change because the publication did not exist at it ("skipped
// loading publication"), by its message or its detail.
func publicationSkipped(n *pgproto3.NoticeResponse) bool {
	return strings.HasPrefix(n.Message, "skipped loading publication") || strings.Contains(n.Detail, "does not exist at this point in the WAL")
}

// publicationMissing tells the error of PostgreSQL 17 and older's pgoutput
// at a change made while the publication did not exist.
func publicationMissing(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42704" && strings.HasPrefix(pgErr.Message, "publication ")
}

// CreatePublicationSQL is the statement that creates the publication: FOR ALL
// TABLES, or FOR TABLE the listed schema.table names.
func CreatePublicationSQL(name string, tables []string) (string, error) {
	if name == "" {
		return "", errors.New("publication name is empty")
	}
	if len(tables) == 0 {
		return "CREATE PUBLICATION " + pgquote.Ident(name) + " FOR ALL TABLES", nil
	}
	quoted := make([]string, 0, len(tables))
	for _, t := range tables {
		schemaName, tableName, err := SplitTableName(t)
		if err != nil {
			return "", err
		}
		quoted = append(quoted, pgquote.Ident(schemaName)+"."+pgquote.Ident(tableName))
	}
	return "CREATE PUBLICATION " + pgquote.Ident(name) + " FOR TABLE " + strings.Join(quoted, ", "), nil
}

// PublicationExists reports whether the publication exists in the connection's
// database.
func PublicationExists(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var exists bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $1)", name).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("source: look up publication %q: %w", name, err)
	}
	return exists, nil
}

// EnsurePublication creates the publication when it does not exist (FOR ALL
// TABLES, or FOR TABLE tables) and reports whether it did. When the role may not
// create it, the error wraps ErrPublicationMissing and carries the exact SQL for
// someone who may (a superuser for FOR ALL TABLES; the tables' owner otherwise).
// An existing publication is left as it is (see MissingPublicationTables).
func EnsurePublication(ctx context.Context, conn *pgx.Conn, name string, tables []string) (created bool, err error) {
	sql, err := CreatePublicationSQL(name, tables)
	if err != nil {
		return false, fmt.Errorf("source: publication %q: %w", name, err)
	}
	exists, err := PublicationExists(ctx, conn, name)
	if err != nil || exists {
		return false, err
	}
	_, err = conn.Exec(ctx, sql)
	if err == nil {
		return true, nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "42710": // created meanwhile by someone else
			return false, nil
		case "42501":
			who := "the owner of the tables (with CREATE on the database)"
			if len(tables) == 0 {
				who = "a superuser"
			}
			return false, fmt.Errorf("source: %w: publication %q does not exist and role %q may not create it (%s): run as %s: %s;",
				ErrPublicationMissing, name, conn.Config().User, pgErr.Message, who, sql)
		case "42P01":
			return false, fmt.Errorf("source: create publication %q: %s: fix PGRELAY_TABLES", name, pgErr.Message)
		}
	}
	return false, fmt.Errorf("source: create publication %q (%s): %w", name, sql, err)
}

// MissingPublicationTables lists the schema.table names (as given) that the
// publication does not publish.
func MissingPublicationTables(ctx context.Context, conn *pgx.Conn, name string, tables []string) ([]string, error) {
	var missing []string
	for _, t := range tables {
		schemaName, tableName, err := SplitTableName(t)
		if err != nil {
			return nil, fmt.Errorf("source: publication %q: %w", name, err)
		}
		var published bool
		// A partitioned table listed in the publication is published through
		// its leaf partitions, which pg_publication_tables shows instead of it.
		err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication_tables
			WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)
			OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_rel pr
				JOIN pg_catalog.pg_publication p ON p.oid = pr.prpubid
				JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE p.pubname = $1 AND n.nspname = $2 AND c.relname = $3)`, name, schemaName, tableName).Scan(&published)
		if err != nil {
			return nil, fmt.Errorf("source: check publication %q for %s: %w", name, t, err)
		}
		if !published {
			missing = append(missing, t)
		}
	}
	return missing, nil
}

// DropPublication drops the publication if it exists.
func DropPublication(ctx context.Context, conn *pgx.Conn, name string) error {
	sql := "DROP PUBLICATION IF EXISTS " + pgquote.Ident(name)
	_, err := conn.Exec(ctx, sql)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return fmt.Errorf("source: drop publication %q: role %q may not (%s): run as its owner or a superuser: %s;", name, conn.Config().User, pgErr.Message, sql)
	}
	return fmt.Errorf("source: drop publication %q: %w", name, err)
}
