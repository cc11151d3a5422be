package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// libpqDSN is pg's database as libpq key=value settings that name a host no
// resolver knows and give its address in hostaddr, with the other libpq
// client settings pgx does not know itself.
func libpqDSN(pg *harness.PG, host string) string {
	return fmt.Sprintf("host=%s hostaddr=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable "+
		"fallback_application_name=pgrelay_e2e_dsn keepalives=1 keepalives_idle=30 keepalives_interval=5 keepalives_count=3",
		host, pg.Port, pg.User, pg.Password, pg.DB)
}

// TestE2ELibpqConnectionSettings: connection strings as libpq takes them
// (hostaddr beside a host name, fallback_application_name, keepalives)
// work for both servers; before, pgx sent each to the server as a run-time
// parameter and the server refused the connection. A libpq setting pgrelay
// cannot honour stops it at once with the setting's name.
func TestE2ELibpqConnectionSettings(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE dsn_t (id int PRIMARY KEY, v text);
		INSERT INTO dsn_t SELECT g, 'v' || g FROM generate_series(1, 500) g`)
	e.extra = append(e.extra,
		"PGRELAY_SOURCE_URL="+libpqDSN(e.src, "pgrelay-source.invalid"),
		"PGRELAY_TARGET_URL="+libpqDSN(e.tgt, "pgrelay-target.invalid"))

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "INSERT INTO dsn_t VALUES (501, 'streamed')")
	e2eWaitTarget(t, e, p, time.Minute, "the streamed row", "SELECT count(*) = 1 FROM dsn_t WHERE id = 501")
	for _, pg := range []*harness.PG{e.src, e.tgt} {
		if n := pg.QueryString(t, "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name = 'pgrelay_e2e_dsn'"); n == "0" {
			t.Errorf("no session named pgrelay_e2e_dsn on %s: fallback_application_name was not applied", pg.DB)
		}
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d:\n%s", code, p.logs())
	}
	if n := e2eCompare(t, e); n != 1 {
		t.Errorf("compared %d tables, want 1", n)
	}

	e.extra = append(e.extra, "PGRELAY_SOURCE_URL="+libpqDSN(e.src, "pgrelay-source.invalid")+" gssencmode=disable")
	p, code := e.run(time.Minute, "status")
	if code != 2 || !strings.Contains(p.logs(), "gssencmode") {
		t.Errorf("status with gssencmode in the source URL exited %d, want 2 with a line naming gssencmode:\n%s", code, p.logs())
	}
}
