package integration

// Passwords never appear in pgrelay's output, in any part: the sweep of every
// command over passwords of every character with a meaning in a URL, written
// rightly and wrongly, with the servers up and with a port nobody listens on.
// cmd/pgrelay's TestRunHidesSecrets does the same through run() with no
// server at all.

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/internal/redact/redacttest"
)

// secretsRun runs `pgrelay cmd` with env until it exits, or settles and is
// stopped: replicate once it streams, replicate and migrate once they wait
// to retry, tail once it printed a change (insert makes one once it
// streams). It returns everything the command printed and its exit code.
func secretsRun(t *testing.T, e *e2eEnv, cmd string, insert func()) (output string, code int) {
	t.Helper()
	p := e.start(cmd)
	inserted := false
	err := harness.Await(2*time.Minute, 20*time.Millisecond, "pgrelay "+cmd+" to settle", func() error {
		if p.exited() {
			return nil
		}
		logs := strings.Join(p.errOut.all(), "\n")
		streaming := strings.Contains(logs, `"msg":"streaming"`) || strings.Contains(logs, "msg=streaming")
		if cmd == "tail" && streaming && !inserted {
			insert()
			inserted = true
		}
		if strings.Contains(logs, "will retry") || cmd == "replicate" && streaming || cmd == "tail" && len(p.out.all()) > 0 {
			p.term(t, time.Minute)
			return nil
		}
		return errors.New("it runs on")
	})
	if err != nil {
		p.kill()
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	return strings.Join(p.out.all(), "\n") + "\n" + strings.Join(p.errOut.all(), "\n"), p.code()
}

// TestSecretsNeverShown: for passwords of every URL-special character and of
// non-ASCII letters, set on a role of the source and of the target: the
// whole life cycle (migrate, status, verify, replicate, tail, teardown) with
// the password written as each form wants it works and shows no piece of it
// (4 characters or more) in stdout or in the log, text or JSON; and with the
// password pasted as it is (split by the parsers into a host, a port, a
// database or a key), with a wrong password, or with a closed port, every
// command fails without showing a piece of it either. Nor does any event
// replicate and migrate send to a webhook.
func TestSecretsNeverShown(t *testing.T) {
	major := harness.Majors()[0]
	e := e2ePair(t, major)
	hooks := newHookReceiver(t, "", false)
	e.extra = append(e.extra, "PGRELAY_WEBHOOK_URL="+hooks.url)
	role := "r_" + e.src.DB[:min(len(e.src.DB), 60)]
	servers := []*harness.PG{e.src}
	if e.tgt.Port != e.src.Port {
		servers = append(servers, e.tgt)
	}
	for _, pg := range servers {
		pg.Exec(t, "CREATE ROLE "+pgquote.Ident(role)+" LOGIN SUPERUSER REPLICATION")
	}
	t.Cleanup(func() {
		e.src.Exec(t, "DROP OWNED BY "+pgquote.Ident(role))
		e.tgt.Exec(t, "DROP OWNED BY "+pgquote.Ident(role))
		for _, pg := range servers {
			pg.Exec(t, "DROP ROLE "+pgquote.Ident(role))
		}
	})
	e.src.Exec(t, `CREATE TABLE sec (id int PRIMARY KEY, v text); INSERT INTO sec SELECT g, 'v' FROM generate_series(1, 20) g`)
	closed := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()

	good := []string{"url escaped", "url query escaped", "kv quoted", "kv sslpassword"}
	raw := []string{"url raw", "url query raw", "kv raw", "url sslpassword raw", "kv sslpassword raw"}
	passwords := []string{redacttest.Secrets[len(redacttest.Secrets)-2], redacttest.Secrets[len(redacttest.Secrets)-1]}
	for _, pw := range redacttest.Secrets[:len(redacttest.Secrets)-2] {
		// One of each special character: @ : / ? # % & space ' " \ and
		// the ones that read as a host.
		if strings.ContainsAny(pw, `@/?#% '"\&é`) || strings.Contains(pw, ":") && !strings.Contains(pw, "@") {
			passwords = append(passwords, pw)
		}
	}
	commands := []string{"migrate", "status", "verify", "replicate", "tail", "teardown"}
	check := func(t *testing.T, what, out, pw string) {
		t.Helper()
		if leak := redacttest.Leak(out, pw); leak != "" {
			t.Errorf("%s shows %q of password %q:\n%s", what, leak, pw, out)
		}
	}
	for i, pw := range passwords {
		t.Run(fmt.Sprintf("pw%d", i), func(t *testing.T) {
			events := len(hooks.requests())
			defer func() {
				var texts []string
				for _, r := range hooks.requests()[events:] {
					texts = append(texts, string(r.body))
					for k, v := range r.fields {
						texts = append(texts, fmt.Sprintf("%s=%v", k, v))
					}
				}
				if len(texts) == 0 {
					t.Error("no event was sent")
				}
				check(t, "the events", strings.Join(texts, "\n"), pw)
			}()
			// What the previous password's runs left: the slot, the
			// publication and metadata (teardown), the target's table.
			e.mustRun(time.Minute, "teardown")
			e.tgt.Exec(t, "DROP TABLE IF EXISTS sec")
			for _, pg := range servers {
				pg.Exec(t, "ALTER ROLE "+pgquote.Ident(role)+" PASSWORD "+pgquote.Literal(pw))
			}
			srcForms := redacttest.ConnStrings(role, pw, fmt.Sprintf("127.0.0.1:%d", e.src.Port), e.src.DB)
			tgtForms := redacttest.ConnStrings(role, pw, fmt.Sprintf("127.0.0.1:%d", e.tgt.Port), e.tgt.DB)
			with := func(src, tgt string) *e2eEnv {
				x := *e
				x.extra = append(slices.Clone(e.extra), "PGRELAY_SOURCE_URL="+src, "PGRELAY_TARGET_URL="+tgt,
					"PGRELAY_LOG_FORMAT="+[]string{"json", "text"}[i%2], "PGRELAY_LOG_LEVEL=debug")
				return &x
			}

			// Written rightly: the life cycle works.
			form := good[i%len(good)]
			x := with(srcForms[form], tgtForms[form])
			n := 0
			insert := func() {
				n++
				e.src.Exec(t, fmt.Sprintf("INSERT INTO sec VALUES (%d, 'tail')", 1000+100*i+n))
			}
			for _, cmd := range commands {
				out, code := secretsRun(t, x, cmd, insert)
				check(t, "pgrelay "+cmd+" ("+form+")", out, pw)
				// tail ends by the signal, with the signal's exit code.
				if code != 0 && cmd != "tail" {
					t.Errorf("pgrelay %s with the password written as %s: exit %d, want 0:\n%s", cmd, form, code, out)
				}
			}

			// Pasted as it is, wrong, or to a closed port: fails, and says
			// nothing of it.
			r := []rune(pw)
			wrongForms := redacttest.ConnStrings(role, string(r[:len(r)/2])+"Zq"+string(r[len(r)/2:]), fmt.Sprintf("127.0.0.1:%d", e.src.Port), e.src.DB)
			closedForms := redacttest.ConnStrings(role, pw, fmt.Sprintf("127.0.0.1:%d", closed), e.src.DB)
			var cases [][3]string // what, source URL, target URL
			for _, f := range raw {
				cases = append(cases,
					[3]string{"source " + f, srcForms[f], e.tgt.URL()},
					[3]string{"target " + f, e.src.URL(), tgtForms[f]})
			}
			cases = append(cases,
				[3]string{"wrong password " + form, wrongForms[form], tgtForms[form]},
				[3]string{"closed port " + form, closedForms[form], tgtForms[form]},
				[3]string{"closed target port " + form, srcForms[form], closedForms[form]})
			for _, c := range cases {
				x := with(c[1], c[2])
				for _, cmd := range commands {
					out, _ := secretsRun(t, x, cmd, insert)
					check(t, "pgrelay "+cmd+" ("+c[0]+")", out, pw)
				}
			}
		})
	}
}
