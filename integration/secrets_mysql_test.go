package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/redact/redacttest"
	"github.com/pgrelay/pgrelay/schema"
)

// TestSecretsNeverShownMySQL is TestSecretsNeverShown for a mysql://
// target: for passwords of every URL-special character set on a MariaDB
// user, the whole life cycle with the password escaped in the URL works and
// shows no piece of it; pasted as it is, wrong, or with a closed port, every
// command fails without showing a piece of it either.
func TestSecretsNeverShownMySQL(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE sec (id int PRIMARY KEY, v text); INSERT INTO sec SELECT g, 'v' FROM generate_series(1, 20) g`)
	user := "sec_" + e.my.DB[:min(len(e.my.DB), 20)]
	e.my.Exec(t, "CREATE USER "+schema.QuoteString(user)+"@'%' IDENTIFIED BY 'initial'; GRANT ALL ON "+myQuote(e.my.DB)+".* TO "+schema.QuoteString(user)+"@'%'")
	t.Cleanup(func() { e.my.Exec(t, "DROP USER "+schema.QuoteString(user)+"@'%'") })
	closed := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()
	check := func(t *testing.T, what, out, pw string) {
		t.Helper()
		if leak := redacttest.Leak(out, pw); leak != "" {
			t.Errorf("%s shows %q of password %q:\n%s", what, leak, pw, out)
		}
	}
	commands := []string{"migrate", "status", "verify", "replicate", "tail", "teardown"}
	// Every special character at once, non-ASCII letters, and the ones that
	// read as a host and port, a bad escape, a backslash.
	passwords := []string{redacttest.Secrets[len(redacttest.Secrets)-2], redacttest.Secrets[len(redacttest.Secrets)-1]}
	for _, pw := range redacttest.Secrets[:len(redacttest.Secrets)-2] {
		if strings.Contains(pw, "@[::1]:1/") || strings.Contains(pw, "%zz") || strings.Contains(pw, `\`) {
			passwords = append(passwords, pw)
		}
	}
	for i, pw := range passwords {
		t.Run(fmt.Sprintf("pw%d", i), func(t *testing.T) {
			e.with().mustRun(time.Minute, "teardown")
			e.my.Exec(t, "DROP TABLE IF EXISTS sec")
			e.my.Exec(t, "ALTER USER "+schema.QuoteString(user)+"@'%' IDENTIFIED BY "+schema.QuoteString(pw))
			forms := redacttest.ConnStrings(user, pw, fmt.Sprintf("127.0.0.1:%d", e.my.Port), e.my.DB)
			with := func(tgt string) *myE2E {
				return e.with("PGRELAY_TARGET_URL="+tgt, "PGRELAY_LOG_FORMAT="+[]string{"json", "text"}[i%2], "PGRELAY_LOG_LEVEL=debug")
			}
			n := 0
			insert := func() {
				n++
				e.src.Exec(t, fmt.Sprintf("INSERT INTO sec VALUES (%d, 'tail')", 1000+100*i+n))
			}
			x := with(forms["mysql url escaped"])
			for _, cmd := range commands {
				out, code := secretsRunMySQL(t, x, cmd, insert)
				check(t, "pgrelay "+cmd+" (mysql url escaped)", out, pw)
				if code != 0 && cmd != "tail" {
					t.Errorf("pgrelay %s with the password escaped: exit %d, want 0:\n%s", cmd, code, out)
				}
			}
			r := []rune(pw)
			wrong := redacttest.ConnStrings(user, string(r[:len(r)/2])+"Zq"+string(r[len(r)/2:]), fmt.Sprintf("127.0.0.1:%d", e.my.Port), e.my.DB)
			closedForms := redacttest.ConnStrings(user, pw, fmt.Sprintf("127.0.0.1:%d", closed), e.my.DB)
			for _, c := range [][2]string{
				{"mysql url raw", forms["mysql url raw"]},
				{"mysql dsn", forms["mysql dsn"]},
				{"wrong password", wrong["mysql url escaped"]},
				{"closed port", closedForms["mysql url escaped"]},
			} {
				for _, cmd := range commands {
					out, _ := secretsRunMySQL(t, with(c[1]), cmd, insert)
					check(t, "pgrelay "+cmd+" ("+c[0]+")", out, pw)
				}
			}
		})
	}
}

// secretsRunMySQL is secretsRun for a MariaDB target.
func secretsRunMySQL(t *testing.T, e *myE2E, cmd string, insert func()) (string, int) {
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
		return fmt.Errorf("it runs on")
	})
	if err != nil {
		p.kill()
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	return strings.Join(p.out.all(), "\n") + "\n" + strings.Join(p.errOut.all(), "\n"), p.code()
}
