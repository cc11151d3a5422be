package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// MySQLServer is the flavour and version of a MySQL or MariaDB target, read
// at start (SELECT VERSION()). What differs between them decides parts of the
// MySQL dialect and sink: the binary no-pad collation's name, the upsert
// syntax, how JSON keeps numbers, XA across a disconnect.
type MySQLServer struct {
	MariaDB bool
	// Version is major*10000 + minor*100 + patch: 101119 for 10.11.19,
	// 80036 for 8.0.36.
	Version int
}

// ParseMySQLServer reads the flavour and version from VERSION()'s text, e.g.
// "10.11.19-MariaDB-0+deb12u1", "8.0.36", "8.4.0-log".
func ParseMySQLServer(version string) (MySQLServer, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "5.5.5-") // MariaDB's old replication prefix
	s := MySQLServer{MariaDB: strings.Contains(strings.ToLower(version), "mariadb")}
	end := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(v)
	}
	parts := strings.Split(v[:end], ".")
	if len(parts) < 2 || len(parts) > 3 {
		return MySQLServer{}, fmt.Errorf("schema: cannot read a MySQL/MariaDB version from %q", version)
	}
	mul := 10000
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n > 99 {
			return MySQLServer{}, fmt.Errorf("schema: cannot read a MySQL/MariaDB version from %q", version)
		}
		s.Version += n * mul
		mul /= 100
	}
	return s, nil
}

// String is the flavour and version, e.g. "MariaDB 10.11.19".
func (s MySQLServer) String() string {
	name := "MySQL"
	if s.MariaDB {
		name = "MariaDB"
	}
	return fmt.Sprintf("%s %d.%d.%d", name, s.Version/10000, s.Version/100%100, s.Version%100)
}

// Supported returns an error saying what is needed when pgrelay cannot
// replicate into the server: MySQL before 8.0, MariaDB before 10.5.2 (which
// brought RENAME COLUMN and prepared XA transactions that outlive their
// session).
func (s MySQLServer) Supported() error {
	if s.MariaDB && s.Version < 100502 || !s.MariaDB && s.Version < 80000 {
		return fmt.Errorf("%s is not supported: pgrelay needs MySQL 8.0 or later, or MariaDB 10.5.2 or later", s)
	}
	return nil
}

// Collation is the binary, no-pad utf8mb4 collation every text column gets:
// keys 'a', 'A' and 'a ' are three rows, as on PostgreSQL.
func (s MySQLServer) Collation() string {
	if s.MariaDB {
		return "utf8mb4_nopad_bin"
	}
	return "utf8mb4_0900_bin"
}

// RowAlias reports whether INSERT … AS new ON DUPLICATE KEY UPDATE c =
// new.c is the upsert syntax (MySQL 8.0.19+, where VALUES(c) is deprecated);
// otherwise (MariaDB) it is VALUES(c).
func (s MySQLServer) RowAlias() bool { return !s.MariaDB && s.Version >= 80019 }

// JSONNumbersAsDoubles reports whether the server's JSON type keeps numbers
// that are not 64-bit integers as doubles (MySQL), rather than keeping the
// document's text (MariaDB, whose JSON is LONGTEXT with a validity check).
func (s MySQLServer) JSONNumbersAsDoubles() bool { return !s.MariaDB }

// ExpressionDefaults reports whether a TEXT, BLOB or JSON column's default
// must be an expression in parentheses (MySQL 8.0.13+); MariaDB takes a
// literal.
func (s MySQLServer) ExpressionDefaults() bool { return !s.MariaDB }

// XADetachOnPrepare reports whether XA PREPARE detaches the transaction from
// the session (MySQL 8.0.29+, xa_detach_on_prepare on by default): another
// session, or the same one, may then commit it while the preparing session
// goes on. On MariaDB the preparing session stays bound to it until XA
// COMMIT or ROLLBACK, or until it disconnects.
func (s MySQLServer) XADetachOnPrepare() bool { return !s.MariaDB && s.Version >= 80029 }

// LocalInfileDefault is the server's default of local_infile: on for
// MariaDB, off for MySQL 8.
func (s MySQLServer) LocalInfileDefault() bool { return s.MariaDB }
