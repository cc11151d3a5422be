package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestIfNotExists(t *testing.T) {
	for in, want := range map[string]string{
		`CREATE INDEX t_a ON public.t USING btree (a)`:                       `CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`,
		`CREATE UNIQUE INDEX "T u" ON "S"."T" USING btree (b) WHERE (b > 0)`: `CREATE UNIQUE INDEX IF NOT EXISTS "T u" ON "S"."T" USING btree (b) WHERE (b > 0)`,
		`CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`:         `CREATE INDEX IF NOT EXISTS t_a ON public.t USING btree (a)`,
	} {
		if got := ifNotExists(in); got != want {
			t.Errorf("ifNotExists(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIndexName(t *testing.T) {
	for def, want := range map[string]string{
		"CREATE UNIQUE INDEX IF NOT EXISTS nnd_u_key ON public.nnd USING btree (u) NULLS NOT DISTINCT": "nnd_u_key",
		`CREATE INDEX "Odd Name" ON public.t USING btree (a)`:                                          `"Odd Name"`,
		"DO $pgrelay$ BEGIN END $pgrelay$":                                                             "",
		"DO $pgrelay$\nBEGIN\n\tIF NOT EXISTS (…) THEN\n\t\tALTER TABLE \"public\".\"ex\" ADD CONSTRAINT \"ex_\"\"r\"\"_excl\" EXCLUDE USING gist (r WITH &&);\n\tEND IF;\nEND\n$pgrelay$": `"ex_""r""_excl"`,
	} {
		if got := indexName(def); got != want {
			t.Errorf("indexName(%q) = %q, want %q", def, got, want)
		}
	}
}

func TestUnbuildable(t *testing.T) {
	for code, want := range map[string]bool{
		"42601": true,  // syntax error: NULLS NOT DISTINCT before 15
		"42883": true,  // undefined function: uuidv7() before 18
		"42704": true,  // undefined object: an extension's operator class
		"0A000": true,  // feature not supported
		"22023": true,  // unknown storage parameter
		"42501": false, // a privilege to grant
		"53100": false, // disk full
		"57014": false, // canceled
		"40P01": false, // deadlock
	} {
		if got := unbuildable(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("unbuildable(SQLSTATE %s) = %v, want %v", code, got, want)
		}
	}
	if unbuildable(errors.New("conn closed")) {
		t.Error("a connection error is taken for a definition the target cannot build")
	}
}
