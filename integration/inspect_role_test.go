package integration

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2EInspectWithoutReplicaRole: status, verify and teardown need no more
// than reading the target and, for teardown, dropping pgrelay's metadata: a
// target role that may not set session_replication_role (which replicate
// and migrate need, and a superuser or a GRANT SET ON PARAMETER gives) runs
// them. They used to open the target as apply does, and failed on that
// setting.
func TestE2EInspectWithoutReplicaRole(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	role := "e2e_inspect_" + e.slot
	db := pgx.Identifier{e.tgt.DB}.Sanitize()
	e.tgt.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'inspect-pw'; GRANT CREATE ON DATABASE %s TO %[1]s;
		GRANT CREATE ON SCHEMA public TO %[1]s; GRANT SET ON PARAMETER session_replication_role TO %[1]s`, role, db))
	t.Cleanup(func() { e.tgt.Exec(t, fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %[1]s", role)) })
	u, err := url.Parse(e.tgt.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "inspect-pw")
	e.extra = append(slices.Clone(e.extra), "PGRELAY_TARGET_URL="+u.String())
	e.src.Exec(t, "CREATE TABLE insp (id int PRIMARY KEY, v text); INSERT INTO insp VALUES (1, 'a'), (2, 'b')")
	e.mustRun(3*time.Minute, "migrate")

	// What the role owns it keeps; the setting it may no longer make.
	e.tgt.Exec(t, "REVOKE SET ON PARAMETER session_replication_role FROM "+role)
	if p, code := e.run(time.Minute, "migrate"); code == 0 || !strings.Contains(p.logs(), "session_replication_role") {
		t.Fatalf("migrate without the privilege of session_replication_role: exit %d, want a failure naming it; log:\n%s", code, p.logs())
	}
	st, raw := e.status(t)
	if !st.Seeded || len(st.Tables) != 1 || st.Tables[0].Name != "insp" {
		t.Errorf("status: %s", raw)
	}
	if r, p, code := e.verify(t, 2*time.Minute); code != 0 || !r.Equal {
		t.Errorf("verify: exit %d, equal %v; log:\n%s", code, r.Equal, p.logs())
	}
	e.mustRun(time.Minute, "teardown")
	if n := e.tgt.QueryString(t, "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = 'pgrelay'"); n != "0" {
		t.Errorf("teardown left pgrelay's metadata schema")
	}
	if n := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); n != "0" {
		t.Errorf("teardown left slot %s", e.slot)
	}
}
