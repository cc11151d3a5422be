package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestPostgresMigrationsLoad(t *testing.T) {
	ms, err := Postgres()
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Version != 1 || ms[0].Name != "init" || !strings.Contains(ms[0].SQL, "pgrelay.progress") {
		t.Fatalf("first migration: %+v", ms[0])
	}
	for _, table := range []string{"pgrelay.progress", "pgrelay.prepared", "pgrelay.table_state", "pgrelay.seed"} {
		if !strings.Contains(ms[0].SQL, "CREATE TABLE "+table+" (") {
			t.Errorf("0001_init.sql does not create %s", table)
		}
	}
}

func TestLoadRejects(t *testing.T) {
	sql := &fstest.MapFile{Data: []byte("SELECT 1")}
	for name, files := range map[string]fstest.MapFS{
		"gap":       {"d/0001_a.sql": sql, "d/0003_c.sql": sql},
		"duplicate": {"d/0001_a.sql": sql, "d/0001_b.sql": sql},
		"no name":   {"d/0001.sql": sql},
		"bad num":   {"d/x_a.sql": sql},
		"zero":      {"d/0000_a.sql": sql},
		"empty":     {"d/readme.txt": sql},
	} {
		if _, err := load(files, "d"); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "migrations: ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
	ms, err := load(fstest.MapFS{"d/0002_b.sql": sql, "d/0001_a.sql": sql, "d/notes.md": sql}, "d")
	if err != nil || len(ms) != 2 || ms[0].Name != "a" || ms[1].Version != 2 {
		t.Fatalf("load: %+v, %v", ms, err)
	}
}

func TestMySQLMigrationsLoad(t *testing.T) {
	ms, err := MySQL()
	if err != nil {
		t.Fatal(err)
	}
	stmts := SplitStatements(ms[0].SQL)
	for _, table := range []string{"pgrelay_progress", "pgrelay_prepared", "pgrelay_table_state", "pgrelay_seed", "pgrelay_relation"} {
		found := false
		for _, s := range stmts {
			found = found || strings.Contains(s, "CREATE TABLE IF NOT EXISTS "+table+" (")
		}
		if !found {
			t.Errorf("mysql/0001_init.sql does not create %s", table)
		}
	}
	for _, s := range stmts {
		if strings.HasSuffix(s, ";") || !strings.Contains(s, "CREATE TABLE IF NOT EXISTS") {
			t.Errorf("statement %q: every statement of 0001 is an idempotent CREATE TABLE, without its semicolon", s)
		}
	}
	if len(stmts) != 5 {
		t.Errorf("%d statements, want 5", len(stmts))
	}
}

func TestSplitStatements(t *testing.T) {
	got := SplitStatements("-- a comment;\nCREATE TABLE a (x int);\n\n-- b\nCREATE TABLE b (\n  y int -- note;\n);\n-- trailing\n")
	want := []string{"-- a comment;\nCREATE TABLE a (x int)", "-- b\nCREATE TABLE b (\n  y int -- note;\n)"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("SplitStatements = %q, want %q", got, want)
	}
}
