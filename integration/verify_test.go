package integration

// End-to-end tests of `pgrelay verify`: the built binary compares a source
// and a target that pgrelay migrated or replicates, and exits 0 (equal), 1
// (differences, listed) or 2 (could not compare).

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// e2eVerifyReport is `pgrelay verify --json`.
type e2eVerifyReport struct {
	Equal  bool `json:"equal"`
	Tables []struct {
		Table          string   `json:"table"`
		Schema         string   `json:"schema"`
		Name           string   `json:"name"`
		TargetTable    string   `json:"target_table"`
		TargetSchema   string   `json:"target_schema"`
		TargetName     string   `json:"target_name"`
		Equal          bool     `json:"equal"`
		Result         string   `json:"result"`
		Key            []string `json:"key"`
		ByteOrder      bool     `json:"byte_order"`
		Chunks         int      `json:"chunks"`
		SourceRows     int64    `json:"source_rows"`
		TargetRows     int64    `json:"target_rows"`
		MissingColumns []string `json:"missing_columns"`
		Seconds        float64  `json:"seconds"`
		Differences    []struct {
			Where           string     `json:"where"`
			From            []string   `json:"from"`
			To              []string   `json:"to"`
			SourceRows      int64      `json:"source_rows"`
			TargetRows      int64      `json:"target_rows"`
			MissingOnTarget int        `json:"missing_on_target"`
			ExtraOnTarget   int        `json:"extra_on_target"`
			Changed         int        `json:"changed"`
			MissingKeys     [][]string `json:"missing_keys"`
			ExtraKeys       [][]string `json:"extra_keys"`
			ChangedKeys     [][]string `json:"changed_keys"`
			Unsettled       int        `json:"unsettled"`
			SourceLSN       string     `json:"source_lsn"`
			AppliedLSN      string     `json:"applied_lsn"`
		} `json:"differences"`
	} `json:"tables"`
}

// verify runs `pgrelay verify --json` and returns its report (zero when it
// printed none), the process and its exit code.
func (e *e2eEnv) verify(t *testing.T, timeout time.Duration) (e2eVerifyReport, *e2eProc, int) {
	t.Helper()
	p, code := e.run(timeout, "verify", "--json")
	var r e2eVerifyReport
	raw := strings.Join(p.out.all(), "\n")
	if raw == "" {
		return r, p, code
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("pgrelay verify --json (exit %d): %v; output:\n%s\nlog:\n%s", code, err, raw, p.logs())
	}
	return r, p, code
}

// lastLine is the process's last stderr line: the one-line error.
func (p *e2eProc) lastLine() string {
	lines := p.errOut.all()
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// keyIn reports whether integer key k lies in the range (from, to] (nil: open).
func keyIn(k int, from, to []string) bool {
	if from != nil {
		if f, _ := strconv.Atoi(from[0]); k <= f {
			return false
		}
	}
	if to != nil {
		if t, _ := strconv.Atoi(to[0]); k > t {
			return false
		}
	}
	return true
}

// TestVerify: after a migrate, verify finds the tables equal; rows changed,
// deleted and added directly on the target are reported with their table,
// key range and key (exit 1), at once since no replicator runs; key ranges
// still line up when the target sorts a text key differently; a table
// missing on the target, a bad setting, an unreachable target are exit 2.
func TestVerify(t *testing.T) {
	e2eEachMajor(t, testVerify)
}

func testVerify(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eWorkload(t, "types_schema.sql"))
	// Keys that sort one way in byte order and another in most collations.
	e.src.Exec(t, `CREATE TABLE vt_text (k text PRIMARY KEY, v int);
		INSERT INTO vt_text SELECT chr(65 + i % 26 + 32 * (i / 26 % 2)) || i, i FROM generate_series(1, 300) i`)
	e.mustRun(3*time.Minute, "migrate")
	// Small chunks: types_all (604 rows) is 7 of them. A long wait that a
	// static target must never spend.
	e.extra = append(e.extra, "PGRELAY_VERIFY_CHUNK_ROWS=100", "PGRELAY_VERIFY_WAIT=60s", "PGRELAY_LOG_LEVEL=debug")

	r, p, code := e.verify(t, 2*time.Minute)
	if code != 0 || !r.Equal || len(r.Tables) != 7 {
		t.Fatalf("verify after migrate: exit %d, equal %v, %d tables, want 0, true, 7; stdout:\n%s\nlog:\n%s", code, r.Equal, len(r.Tables), strings.Join(p.out.all(), "\n"), p.logs())
	}
	byName := map[string]int{}
	for i, tb := range r.Tables {
		byName[tb.Table] = i
		if !tb.Equal || tb.Result != "equal" || tb.SourceRows != tb.TargetRows || len(tb.Differences) != 0 {
			t.Errorf("table %s after migrate: %+v", tb.Table, tb)
		}
	}
	wantShape := map[string]string{
		"public.types_all":    "[id] 7 604",
		"E2e App.Order Lines": "[Order Line] 4 300",
		"public.full_ident":   "[] 1 6",
		"public.index_ident":  "[code region] 3 200",
		"public.vt_text":      "[k] 4 300",
		"public.parent":       "[id] 1 50",
		"public.child":        "[id] 6 500",
	}
	for name, want := range wantShape {
		i, ok := byName[name]
		if !ok {
			t.Errorf("table %s not verified", name)
			continue
		}
		tb := r.Tables[i]
		if got := strings.Join([]string{"[" + strings.Join(tb.Key, " ") + "]", strconv.Itoa(tb.Chunks), strconv.FormatInt(tb.SourceRows, 10)}, " "); got != want {
			t.Errorf("table %s: key, chunks, rows = %s, want %s", name, got, want)
		}
	}
	text := e.mustRun(2*time.Minute, "verify")
	if tb := r.Tables[byName["E2e App.Order Lines"]]; tb.Schema != "E2e App" || tb.Name != "Order Lines" {
		t.Errorf("--json schema and name of \"E2e App\".\"Order Lines\": %q, %q", tb.Schema, tb.Name)
	}
	// Names print as SQL writes them, quoted where needed.
	if out := strings.Join(text.out.all(), "\n"); !strings.Contains(out, "verify: all 7 tables equal") || !strings.Contains(out, `"E2e App"."Order Lines"`) || !strings.Contains(out, "\npublic.vt_text ") {
		t.Errorf("verify text output:\n%s", out)
	}
	if _, ok := text.findLog("table verified"); !ok {
		t.Errorf("verify logged no progress per table; log:\n%s", text.logs())
	}

	// The target diverges: rows changed, deleted and added behind pgrelay's back.
	e.tgt.Exec(t, `UPDATE types_all SET txt = 'tampered' WHERE id = 250;
		DELETE FROM types_all WHERE id = 42;
		INSERT INTO types_all (id, i4) VALUES (5000, 1);
		UPDATE types_all SET f8 = f8 + 1e-12 WHERE id = 1004;
		UPDATE "E2e App"."Order Lines" SET "Note" = 'x' WHERE "Order" = 7 AND "Line" = 3;
		INSERT INTO full_ident VALUES (1, 'x', 1.5);
		UPDATE index_ident SET qty = -1 WHERE code = 'c17' AND region = 2`)
	start := time.Now()
	r, p, code = e.verify(t, 2*time.Minute)
	if took := time.Since(start); took > 40*time.Second {
		t.Errorf("verify of a static target took %v: it must not wait for a replicator (PGRELAY_VERIFY_WAIT=60s)", took)
	}
	if code != 1 || r.Equal {
		t.Fatalf("verify of a diverged target: exit %d, want 1; stdout:\n%s\nlog:\n%s", code, strings.Join(p.out.all(), "\n"), p.logs())
	}
	if got := p.lastLine(); !strings.HasPrefix(got, "pgrelay: verify: 4 of 7 tables differ: ") {
		t.Errorf("last stderr line %q, want pgrelay: verify: 4 of 7 tables differ: …", got)
	}
	found := map[string]bool{}
	for _, tb := range r.Tables {
		switch tb.Table {
		case "public.parent", "public.child", "public.vt_text":
			if !tb.Equal {
				t.Errorf("table %s is unchanged but reported %+v", tb.Table, tb)
			}
			continue
		}
		if tb.Equal || tb.Result != "differs" {
			t.Errorf("table %s differs but reported %+v", tb.Table, tb)
		}
		for _, d := range tb.Differences {
			if d.Unsettled != 0 {
				t.Errorf("table %s: difference %s unsettled on a static target", tb.Table, d.Where)
			}
			keys := func(ks [][]string) string {
				var out []string
				for _, k := range ks {
					out = append(out, strings.Join(k, ","))
				}
				return strings.Join(out, " ")
			}
			switch tb.Table {
			case "public.types_all":
				for kind, k := range map[string]string{"missing": keys(d.MissingKeys), "extra": keys(d.ExtraKeys), "changed": keys(d.ChangedKeys)} {
					for _, one := range strings.Fields(k) {
						n, _ := strconv.Atoi(one)
						if !keyIn(n, d.From, d.To) {
							t.Errorf("types_all: %s key %d outside the range reported, %s", kind, n, d.Where)
						}
						found["types_all "+kind+" "+one] = true
					}
				}
				if d.SourceRows-int64(d.MissingOnTarget) != d.TargetRows-int64(d.ExtraOnTarget) {
					t.Errorf("types_all: range %s counts source %d, target %d, missing %d, extra %d", d.Where, d.SourceRows, d.TargetRows, d.MissingOnTarget, d.ExtraOnTarget)
				}
			case "E2e App.Order Lines":
				found["order lines changed "+keys(d.ChangedKeys)] = true
			case "public.index_ident":
				found["index_ident changed "+keys(d.ChangedKeys)] = true
			case "public.full_ident":
				found["full_ident "+d.Where+" "+strconv.FormatInt(d.SourceRows, 10)+" "+strconv.FormatInt(d.TargetRows, 10)] = true
			}
		}
	}
	for _, want := range []string{"types_all missing 42", "types_all extra 5000", "types_all changed 250", "types_all changed 1004",
		"order lines changed 7,3", "index_ident changed c17,2", "full_ident whole table 6 7"} {
		if !found[want] {
			t.Errorf("verify did not report %q; found %v", want, found)
		}
	}
	text, code = e.run(2*time.Minute, "verify")
	out := strings.Join(text.out.all(), "\n")
	if code != 1 || !strings.Contains(out, "public.types_all differs:") || !strings.Contains(out, "1 missing on the target: id 42") ||
		!strings.Contains(out, "1 only on the target: id 5000") || !strings.Contains(out, `"id" > '`) {
		t.Errorf("verify text output of a diverged target (exit %d):\n%s", code, out)
	}

	// The target sorts the text key another way than the source: key ranges
	// are compared in byte order and still line up.
	if e.tgt.QueryString(t, "SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'") == "1" {
		e.tgt.Exec(t, `ALTER TABLE vt_text ALTER COLUMN k TYPE text COLLATE "und-x-icu"`)
		r, p, code = e.verify(t, 2*time.Minute)
		i := byName["public.vt_text"]
		if i >= len(r.Tables) || !r.Tables[i].ByteOrder || !r.Tables[i].Equal {
			t.Errorf("vt_text with another collation on the target: exit %d; stdout:\n%s\nlog:\n%s", code, strings.Join(p.out.all(), "\n"), p.logs())
		}
		if _, ok := p.findLog("key columns sort differently"); !ok {
			t.Errorf("no warning about the key order; log:\n%s", p.logs())
		}
		e.tgt.Exec(t, `UPDATE vt_text SET v = -v WHERE k = 'a26'`)
		r, p, _ = e.verify(t, 2*time.Minute)
		if i >= len(r.Tables) || len(r.Tables[i].Differences) != 1 || len(r.Tables[i].Differences[0].ChangedKeys) != 1 || r.Tables[i].Differences[0].ChangedKeys[0][0] != "a26" {
			t.Errorf("vt_text changed row a26 not reported; stdout:\n%s", strings.Join(p.out.all(), "\n"))
		}
	} else {
		t.Log("the target has no ICU collation: the byte-order comparison is not exercised")
	}

	// A table a prepared transaction keeps locked on the source: exit 2 after
	// the lock timeout, with what holds it.
	src := e.src.Conn(t)
	ctx := e2eCtx(t, 3*time.Minute)
	e2eExec(t, ctx, src, "BEGIN", "TRUNCATE child", "PREPARE TRANSACTION 'verify_lock'")
	p, code = e.run(2*time.Minute, "verify")
	e.src.Exec(t, "ROLLBACK PREPARED 'verify_lock'")
	if code != 2 || !strings.Contains(p.lastLine(), "pg_prepared_xacts") {
		t.Errorf("verify of a table locked by a prepared transaction: exit %d, last line %q; want 2, naming pg_prepared_xacts", code, p.lastLine())
	}

	// A table missing on the target: nothing is compared.
	e.tgt.Exec(t, "DROP TABLE child")
	p, code = e.run(2*time.Minute, "verify")
	if code != 2 || len(p.out.all()) != 0 || !strings.Contains(p.lastLine(), "table public.child is missing on the target") {
		t.Errorf("verify with a table missing on the target: exit %d, stdout %q, last line %q; want 2, nothing, the table named", code, p.out.all(), p.lastLine())
	}

	// Bad settings, a bad argument, an unreachable target: exit 2.
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"PGRELAY_VERIFY_CHUNK_ROWS=lots", nil, "PGRELAY_VERIFY_CHUNK_ROWS"},
		{"", []string{"--fast"}, `got "--fast"`},
		{"PGRELAY_TARGET_URL=postgres://nobody@127.0.0.1:1/none", nil, "target"},
	} {
		other := *e
		other.extra = append(slices.Clone(e.extra), c.env)
		p, code := other.run(time.Minute, append([]string{"verify"}, c.args...)...)
		if code != 2 || !strings.Contains(p.lastLine(), c.want) {
			t.Errorf("verify with %s %v: exit %d, last line %q; want 2 naming %s", c.env, c.args, code, p.lastLine(), c.want)
		}
	}
}

// TestVerifyLive: verify while replicate applies a stream of small
// transactions: chunks that differ because the target is behind are
// re-checked once it has applied past the source position, and the run ends
// equal. With the writes stopped, a row changed on the target is a confirmed
// difference.
func TestVerifyLive(t *testing.T) {
	e2eEachMajor(t, testVerifyLive)
}

func testVerifyLive(t *testing.T, major int) {
	e := e2ePair(t, major)
	// churn_log, which has no key and grows with every insert, is left out:
	// a whole-table checksum of a table written faster than the re-checks
	// cannot settle (see docs/operations.md, "Reading verify").
	e.src.Exec(t, e2eChurnSchema(20000)+`; CREATE TABLE public.e2e_sync (token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
		CREATE PUBLICATION `+e.pub+" FOR TABLE churn, churn_small, e2e_sync")
	e.extra = append(e.extra, "PGRELAY_VERIFY_CHUNK_ROWS=1000")
	rep := e.start("replicate")
	rep.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, rep, time.Minute)

	w := e2eStartWriter(t, e.src, e2eRand(t), 20001)
	// verify starts with the writer under way: the target lags behind it.
	harness.Eventually(t, time.Minute, "the writer's first transactions", func() error {
		if n := w.committed(); n < 20 {
			return fmt.Errorf("%d so far", n)
		}
		return nil
	})
	r, p, code := e.verify(t, 5*time.Minute)
	ops := w.stop(t)
	t.Logf("%d writer transactions during verify", ops)
	if code != 0 || !r.Equal {
		t.Fatalf("verify under writes: exit %d, want 0; stdout:\n%s\nlog:\n%s", code, strings.Join(p.out.all(), "\n"), p.logs())
	}
	if _, ok := p.findLog("equal after re-checks"); !ok {
		t.Errorf("no chunk needed a re-check while %d transactions ran: the test did not exercise the lag; log:\n%s", ops, p.logs())
	}
	if ops < 50 {
		t.Errorf("only %d writer transactions ran; want verify to overlap writes", ops)
	}

	// Writes stopped, replicate still running: a row changed on the target is
	// a difference the re-checks confirm.
	e2eSync(t, e, rep, time.Minute)
	id := e.tgt.QueryString(t, "UPDATE churn SET v = -1 WHERE id = (SELECT min(id) FROM churn) RETURNING id")
	r, p, code = e.verify(t, 5*time.Minute)
	if code != 1 || len(r.Tables) != 3 {
		t.Fatalf("verify of a diverged live target: exit %d, want 1; stdout:\n%s\nlog:\n%s", code, strings.Join(p.out.all(), "\n"), p.logs())
	}
	for _, tb := range r.Tables {
		if tb.Table != "public.churn" {
			continue
		}
		if len(tb.Differences) != 1 || tb.Differences[0].Changed != 1 || tb.Differences[0].Unsettled != 0 || tb.Differences[0].ChangedKeys[0][0] != id {
			t.Errorf("churn: want one confirmed change of id %s, got %+v", id, tb.Differences)
		}
	}
	if code := rep.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, rep.logs())
	}
}
