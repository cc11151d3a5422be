package integration

import (
	"testing"

	"github.com/pgrelay/pgrelay/integration/harness"
)

func TestE2ETmpWorkloads(t *testing.T) {
	for _, major := range harness.Majors() {
		pg := harness.Postgres(t, major)
		for _, f := range []string{"types_schema.sql", "types_dml.sql", "replicate_schema.sql", "replicate_mixed.sql", "replicate_identity.sql", "replicate_toast.sql", "replicate_truncate.sql", "replicate_alter.sql", "replicate_big.sql"} {
			pg.Exec(t, e2eWorkload(t, f))
		}
		t.Log(pg.QueryString(t, "SELECT count(*) FROM types_all"), pg.QueryString(t, "SELECT count(*) FROM full_rows"), pg.QueryString(t, "SELECT count(*) FROM big_txn"))
		t.Log(pg.QueryString(t, "SELECT pg_column_size(body) FROM docs LIMIT 1"), pg.QueryString(t, "SELECT string_agg(format('%s %s %s', a, b, c), '; ') FROM full_rows"))
	}
}
