package integration

// verify against a MariaDB target, through sink/mysql's verify session: the
// comparison of apply/verify, unchanged, finds a PostgreSQL source and a
// MariaDB table of DESIGN.md's mapping equal, and names the rows that differ.

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/sink/mysql"
)

func myQuote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// TestVerifyMariaDBTarget: verify.Compare with a PostgreSQL source and a
// MariaDB target holding the same rows in DESIGN.md's mapping reports them
// equal, keyed (int key, and a text key whose PostgreSQL collation differs
// from utf8mb4_nopad_bin, compared in byte order), and keyless; a value
// changed, a row deleted and a row added on MariaDB are named.
func TestVerifyMariaDBTarget(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	pg := harness.Postgres(t, major)
	my := harness.MariaDB(t)
	var pgCols, pgVals, myCols, myVals, names []string
	for _, c := range myCases {
		pgCols = append(pgCols, c.name+" "+c.pgType)
		pgVals = append(pgVals, c.pgVal)
		coll := ""
		if strings.Contains(c.myType, "CHAR") || strings.Contains(c.myType, "TEXT") {
			coll = " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"
		}
		myCols = append(myCols, myQuote(c.name)+" "+c.myType+coll)
		myVals = append(myVals, c.myVal)
		names = append(names, c.name)
	}
	pg.Exec(t, "CREATE TYPE canon_mood AS ENUM ('sad', 'ok'); CREATE TABLE m (id int PRIMARY KEY, "+strings.Join(pgCols, ", ")+")")
	pg.Exec(t, "INSERT INTO m SELECT i, "+strings.Join(pgVals, ", ")+" FROM generate_series(1, 1000) i")
	my.Exec(t, "CREATE TABLE m (id INT PRIMARY KEY, "+strings.Join(myCols, ", ")+") ENGINE=InnoDB")
	my.Exec(t, "INSERT INTO m SELECT seq, "+strings.Join(myVals, ", ")+" FROM seq_1_to_1000")
	// Text keys that sort one way in byte order and another in most
	// collations; 'a' and 'a ' are two rows on both (no-pad).
	collation := `"C"`
	if pg.QueryString(t, "SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'") == "1" {
		collation = `"und-x-icu"`
	}
	pg.Exec(t, `CREATE TABLE k (k text COLLATE `+collation+` PRIMARY KEY, v int);
		INSERT INTO k SELECT chr(65 + i % 26 + 32 * (i / 26 % 2)) || i, i FROM generate_series(1, 300) i;
		INSERT INTO k VALUES ('a', 1), ('a ', 2), ('é', 3), ('E', 4)`)
	my.Exec(t, "CREATE TABLE k (k VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PRIMARY KEY, v INT)")
	my.Exec(t, "INSERT INTO k SELECT CONCAT(CHAR(65 + seq % 26 + 32 * (seq DIV 26 % 2)), seq), seq FROM seq_1_to_300")
	my.Exec(t, "INSERT INTO k VALUES ('a', 1), ('a ', 2), ('é', 3), ('E', 4)")
	pg.Exec(t, "CREATE TABLE nk (a int, n numeric, s text); ALTER TABLE nk REPLICA IDENTITY FULL; INSERT INTO nk SELECT i % 7, i / 8.0, 'x' FROM generate_series(1, 100) i")
	my.Exec(t, "CREATE TABLE nk (a INT, n DECIMAL(65,30), s LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin); INSERT INTO nk SELECT seq % 7, seq / 8, 'x' FROM seq_1_to_100")

	ctx := e2eCtx(t, 3*time.Minute)
	srcSide, err := verify.NewPostgresSource(ctx, pg.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mysql.New(ctx, my.URL(), mysql.Options{Inspect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	sess, err := s.OpenVerify(ctx, "verify")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	tgt := verify.NewTarget(sess)
	tables := []verify.Table{
		{Source: verify.TableName{Schema: "public", Name: "m"}, Target: verify.TableName{Schema: my.DB, Name: "m"}, Columns: append([]string{"id"}, names...)},
		{Source: verify.TableName{Schema: "public", Name: "k"}, Target: verify.TableName{Schema: my.DB, Name: "k"}, Columns: []string{"k", "v"}},
		{Source: verify.TableName{Schema: "public", Name: "nk"}, Target: verify.TableName{Schema: my.DB, Name: "nk"}, Columns: []string{"a", "n", "s"}},
	}
	cfg := verify.Config{ChunkRows: 100, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rep, err := verify.Compare(ctx, cfg, srcSide, tgt, tables)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Tables {
		if !tr.Equal() || tr.SourceRows != tr.TargetRows || tr.SourceRows == 0 {
			t.Errorf("%s: equal %v, rows %d/%d, differences %+v", tr.Table, tr.Equal(), tr.SourceRows, tr.TargetRows, tr.Differences)
		}
	}
	if k := rep.Tables[1]; k.ByteOrder != (collation != `"C"`) || k.Chunks < 3 {
		t.Errorf("text key in collation %s: byte order %v, %d chunks; want byte order only for ICU, several chunks", collation, k.ByteOrder, k.Chunks)
	}

	my.Exec(t, "UPDATE m SET tz = '2024-02-29 07:04:56.789013' WHERE id = 250")
	my.Exec(t, "UPDATE m SET an = '[1.5, 2]' WHERE id = 900") // MariaDB keeps JSON numbers as written
	my.Exec(t, "DELETE FROM m WHERE id = 42")
	my.Exec(t, "INSERT INTO k VALUES ('A ', 5)")
	my.Exec(t, "UPDATE k SET v = -v WHERE k = 'é'")
	my.Exec(t, "UPDATE nk SET s = 'X' WHERE a = 3 LIMIT 1")
	rep, err = verify.Compare(ctx, cfg, srcSide, tgt, tables)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, tr := range rep.Tables {
		for _, d := range tr.Differences {
			for kind, keys := range map[string][]verify.Key{"missing": d.MissingKeys, "extra": d.ExtraKeys, "changed": d.ChangedKeys} {
				for _, k := range keys {
					got[tr.Table.Name] = append(got[tr.Table.Name], kind+" "+verify.FormatKey(k))
				}
			}
			if len(tr.Key) == 0 {
				got[tr.Table.Name] = append(got[tr.Table.Name], "whole table")
			}
		}
		slices.Sort(got[tr.Table.Name])
	}
	want := map[string][]string{
		"m":  {"changed 250", "changed 900", "missing 42"},
		"k":  {"changed é", "extra A "},
		"nk": {"whole table"},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s: differences %q, want %q", name, got[name], w)
		}
	}
}
