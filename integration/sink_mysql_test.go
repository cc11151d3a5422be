package integration

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
)

// mySinkHarness runs the shared sink suite against fresh MariaDB databases.
type mySinkHarness struct{ opts mysql.Options }

func (h mySinkHarness) Target(t *testing.T) sinktest.Target {
	my := harness.MariaDB(t)
	// Schema public lands in the test's own database; another schema in a
	// database of its name, which the server's earlier tests may have made
	// (the suite runs its cases one at a time).
	my.Exec(t, "DROP DATABASE IF EXISTS `Odd Schema`")
	return &mySinkTarget{my: my, opts: h.opts}
}

type mySinkTarget struct {
	my   *harness.MY
	opts mysql.Options
}

func (tg *mySinkTarget) Open(t *testing.T) sink.Sink { return tg.open(t) }

func (tg *mySinkTarget) open(t *testing.T) *mysql.Sink {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := mysql.New(ctx, tg.my.URL(), tg.opts)
	if err != nil {
		t.Fatalf("mysql.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (tg *mySinkTarget) Rows(t *testing.T, table *schema.Table) [][]string {
	t.Helper()
	return myRows(t, tg.my, table)
}

// The abilities of sinktest's optional Target interfaces.
var (
	_ sinktest.TableMaker        = (*mySinkTarget)(nil)
	_ sinktest.SessionKiller     = (*mySinkTarget)(nil)
	_ sinktest.ReadOnlySwitch    = (*mySinkTarget)(nil)
	_ sinktest.RestrictedOpener  = (*mySinkTarget)(nil)
	_ sinktest.SequenceReader    = (*mySinkTarget)(nil)
	_ sinktest.PreparedCommitter = (*mySinkTarget)(nil)
)

// myTable is table's target name, quoted: public lands in the database.
func (tg *mySinkTarget) myTable(schemaName, name string) string {
	if schemaName == "public" {
		schemaName = tg.my.DB
	}
	return myQuote(schemaName) + "." + myQuote(name)
}

func (tg *mySinkTarget) CommitPreparedBehind(t *testing.T, gid string) {
	t.Helper()
	tg.my.Exec(t, "XA COMMIT "+mysql.XID(tg.my.DB, gid))
}

func (tg *mySinkTarget) MakeTable(t *testing.T, schemaName, name string, withRow bool) {
	t.Helper()
	q := tg.myTable(schemaName, name)
	tg.my.Exec(t, "CREATE TABLE "+q+" (id BIGINT PRIMARY KEY, name LONGTEXT)")
	if withRow {
		tg.my.Exec(t, "INSERT INTO "+q+" VALUES (1, 'theirs')")
	}
}

// KillSessions ends every other session of the test's database.
func (tg *mySinkTarget) KillSessions(t *testing.T) {
	t.Helper()
	db := tg.my.Open(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", tg.my.DB)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		// A session that ended meanwhile is fine (1094: unknown thread).
		if _, err := db.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10)); err != nil && !strings.Contains(err.Error(), "1094") {
			t.Fatal(err)
		}
	}
}

func (tg *mySinkTarget) SetReadOnly(t *testing.T, on bool) {
	t.Helper()
	tg.my.SetReadOnly(t, on)
}

// OpenRestricted opens a sink as a user that may read and write the rows of
// the test's database, and create nothing.
func (tg *mySinkTarget) OpenRestricted(t *testing.T) sink.Sink {
	t.Helper()
	user := "plain_" + strconv.FormatUint(uint64(len(tg.my.DB))+uint64(time.Now().UnixNano()%1e9), 36)
	tg.my.Exec(t, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'plain-pw'; GRANT SELECT, INSERT, UPDATE, DELETE ON "+myQuote(tg.my.DB)+".* TO '"+user+"'@'%'")
	t.Cleanup(func() { tg.my.Exec(t, "DROP USER '"+user+"'@'%'") })
	u, err := url.Parse(tg.my.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, "plain-pw")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := mysql.New(ctx, u.String(), tg.opts)
	if err != nil {
		t.Fatalf("mysql.New as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// NextValue inserts a row that takes column's next AUTO_INCREMENT value.
func (tg *mySinkTarget) NextValue(t *testing.T, table *schema.Table, column string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := tg.my.Open(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "INSERT INTO "+tg.myTable(table.Schema, table.Name)+" ("+myQuote(column)+") VALUES (NULL)"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// myRows reads a table's rows in text form on a connection of its own, as the
// MySQL dialect maps the table (public lands in the test's database).
func myRows(t *testing.T, my *harness.MY, table *schema.Table) [][]string {
	t.Helper()
	d := schema.NewMySQL(schema.MySQLServer{MariaDB: true, Version: 101100}, my.DB)
	cols := make([]string, len(table.Columns))
	for i, c := range table.Columns {
		cols[i] = d.QuoteIdent(c.Name)
	}
	db := my.Open(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+d.QualifiedTable(table))
	if err != nil {
		t.Fatalf("read rows: %v", err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		raw := make([]sql.RawBytes, len(cols))
		dest := make([]any, len(cols))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("read rows: %v", err)
		}
		row := make([]string, len(cols))
		for i, v := range raw {
			if v == nil {
				row[i] = sinktest.Null
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read rows: %v", err)
	}
	return out
}

// TestSinkMySQL runs the shared sink suite on MariaDB, and again with tiny
// batches: every change then goes in a round trip of its own.
func TestSinkMySQL(t *testing.T) {
	t.Run("mariadb", func(t *testing.T) { sinktest.Run(t, mySinkHarness{}) })
	t.Run("mariadb/small-batches", func(t *testing.T) {
		sinktest.Run(t, mySinkHarness{opts: mysql.Options{BatchBytes: 1}})
	})
}
