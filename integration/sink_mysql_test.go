package integration

import (
	"context"
	"database/sql"
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
