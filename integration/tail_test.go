package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// tailEnv is the environment without any PGRELAY_* variable, plus extra.
func tailEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGRELAY_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

var tailLSN = regexp.MustCompile(`^[0-9A-F]{1,8}/[0-9A-F]{1,8}$`)

func TestTail(t *testing.T) {
	bin := e2eBinary(t)
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			testTail(t, bin, major)
		})
	}
}

func testTail(t *testing.T, bin string, major int) {
	pg := harness.Postgres(t, major)
	pg.Exec(t, "CREATE TABLE tailed (id int PRIMARY KEY, v text)")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "tail")
	cmd.Env = tailEnv(
		"PGRELAY_SOURCE_URL="+pg.URL(),
		"PGRELAY_PUBLICATION=tail_pub",
		"PGRELAY_LOG_FORMAT=json",
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	logLines := make(chan string, 100)
	var logs []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logLines <- sc.Text()
		}
		close(logLines)
	}()

	// Wait for the "streaming" log line: from then on, changes are captured.
	deadline := time.After(time.Minute)
	for streaming := false; !streaming; {
		select {
		case l, ok := <-logLines:
			if !ok {
				t.Fatalf("pgrelay tail exited before streaming: %v\n%s", cmd.Wait(), strings.Join(logs, "\n"))
			}
			logs = append(logs, l)
			streaming = strings.Contains(l, `"msg":"streaming"`)
		case <-deadline:
			t.Fatalf("no streaming log line after 1m:\n%s", strings.Join(logs, "\n"))
		}
	}
	if !strings.Contains(strings.Join(logs, "\n"), `"msg":"created publication"`) {
		t.Errorf("tail did not report creating its publication:\n%s", strings.Join(logs, "\n"))
	}

	conn := pg.Conn(t)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn,
		"INSERT INTO tailed VALUES (1, 'a'), (2, E'line\\n\"two\"')",
		"UPDATE tailed SET v = 'b' WHERE id = 1",
		"DELETE FROM tailed WHERE id = 2",
		"COMMIT")
	want := []string{"begin", "relation", "insert", "insert", "update", "delete", "commit"}
	if major >= 15 {
		decExec(t, conn, "BEGIN", "INSERT INTO tailed VALUES (3, 'p')", "PREPARE TRANSACTION 'tail_gid'", "COMMIT PREPARED 'tail_gid'")
		want = append(want, "begin_prepare", "insert", "prepare", "commit_prepared")
	}
	pg.Exec(t, "SELECT pg_logical_emit_message(false, 'tail-test', 'hello')")
	want = append(want, "message")

	var got []map[string]any
	var raw []string
	for len(got) < len(want) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed after %d lines: %v", len(raw), raw)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(l), &obj); err != nil {
				t.Fatalf("line %q is not JSON: %v", l, err)
			}
			raw = append(raw, l)
			got = append(got, obj)
		case <-time.After(time.Minute):
			t.Fatalf("after 1m only %d lines:\n%s", len(raw), strings.Join(raw, "\n"))
		}
	}
	for i, obj := range got {
		if obj["type"] != want[i] {
			t.Fatalf("line %d is %v, want %s; lines:\n%s", i, obj["type"], want[i], strings.Join(raw, "\n"))
		}
		// Fixed field order: type, then lsn.
		if !strings.HasPrefix(raw[i], `{"type":"`+want[i]+`","lsn":"`) {
			t.Errorf("line %d does not start with type and lsn: %s", i, raw[i])
		}
		if lsn, _ := obj["lsn"].(string); !tailLSN.MatchString(lsn) {
			t.Errorf("line %d: lsn %q is not X/X", i, obj["lsn"])
		}
	}

	num := func(v any) uint64 {
		f, _ := v.(float64)
		return uint64(f)
	}
	if num(got[0]["xid"]) != uint64(xid) {
		t.Errorf("begin xid %v, want %d", got[0]["xid"], xid)
	}
	if got[0]["final_lsn"] != got[6]["commit_lsn"] {
		t.Errorf("begin final_lsn %v != commit commit_lsn %v", got[0]["final_lsn"], got[6]["commit_lsn"])
	}
	for _, k := range []string{"commit_time"} {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got[6][k])); err != nil || !strings.HasSuffix(fmt.Sprint(got[6][k]), "Z") {
			t.Errorf("commit %s %v: want RFC 3339 UTC", k, got[6][k])
		}
	}
	if got[1]["namespace"] != "public" || got[1]["name"] != "tailed" || got[1]["replica_identity"] != "default" {
		t.Errorf("relation line %s", raw[1])
	}
	wantLine := func(i int, fields string) {
		t.Helper()
		if !strings.Contains(raw[i], fields) {
			t.Errorf("line %d\n %s\nlacks %s", i, raw[i], fields)
		}
	}
	wantLine(2, `"namespace":"public","relation":"tailed","new":{"id":"1","v":"a"}}`)
	wantLine(3, `"new":{"id":"2","v":"line\n\"two\""}}`)
	wantLine(4, `"relation":"tailed","new":{"id":"1","v":"b"}}`)
	wantLine(5, `"relation":"tailed","old_kind":"key","old":{"id":"2"}}`)
	if major >= 15 {
		if got[7]["gid"] != "tail_gid" || got[9]["gid"] != "tail_gid" || got[10]["gid"] != "tail_gid" || got[7]["xid"] != got[10]["xid"] {
			t.Errorf("two-phase lines:\n%s", strings.Join(raw[7:11], "\n"))
		}
		wantLine(8, `"new":{"id":"3","v":"p"}}`)
	}
	msg := got[len(got)-1]
	if msg["transactional"] != false || msg["prefix"] != "tail-test" || msg["content"] != base64.StdEncoding.EncodeToString([]byte("hello")) {
		t.Errorf("message line %s", raw[len(raw)-1])
	}

	// SIGINT stops tail cleanly: exit 0, and its temporary slot goes away.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for l := range logLines {
		logs = append(logs, l)
	}
	err = cmd.Wait()
	waited = true
	if err != nil {
		t.Fatalf("after SIGINT: %v\n%s", err, strings.Join(logs, "\n"))
	}
	for _, l := range logs {
		if pg.Password != "" && strings.Contains(l, pg.Password) {
			t.Errorf("log line shows the password: %s", l)
		}
		if !json.Valid([]byte(l)) {
			t.Errorf("PGRELAY_LOG_FORMAT=json but log line is not JSON: %s", l)
		}
	}
	harness.Eventually(t, 5*time.Second, "tail's temporary slot to go away after it exited", func() error {
		if n := pg.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pgrelay_tail_%' AND database = current_database()"); n != "0" {
			return fmt.Errorf("%s such slots", n)
		}
		return nil
	})
}

// TestTailBadSettings: each bad setting gives exactly one clear line on stderr,
// nothing on stdout and a non-zero exit, without the password.
func TestTailBadSettings(t *testing.T) {
	bin := e2eBinary(t)
	major := harness.Majors()[0]
	pg := harness.Postgres(t, major)

	closedPort := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return port
	}()
	wrongPassword := strings.Replace(pg.URL(), ":"+pg.Password+"@", ":wrong-pw-123@", 1)
	if wrongPassword == pg.URL() {
		t.Fatalf("cannot swap the password in %s", pg.URL())
	}

	cases := []struct {
		name   string
		env    []string
		code   int
		want   string // the whole line, or a prefix when it ends in "..."
		secret string
	}{
		{"no source", nil, 2,
			"pgrelay: PGRELAY_SOURCE_URL is required: set it to the source PostgreSQL URL, e.g. postgres://user@host:5432/db", ""},
		{"bad streaming", []string{"PGRELAY_SOURCE_URL=" + pg.URL(), "PGRELAY_STREAMING=sometimes"}, 2,
			`pgrelay: PGRELAY_STREAMING="sometimes": expected auto, on, off or parallel`, ""},
		{"bad log level", []string{"PGRELAY_SOURCE_URL=" + pg.URL(), "PGRELAY_LOG_LEVEL=loud"}, 2,
			`pgrelay: PGRELAY_LOG_LEVEL="loud": expected debug, info, warn or error`, ""},
		{"bad tables", []string{"PGRELAY_SOURCE_URL=" + pg.URL(), "PGRELAY_TABLES=orders"}, 2,
			`pgrelay: PGRELAY_TABLES entry "orders": expected schema.table...`, ""},
		{"malformed url", []string{"PGRELAY_SOURCE_URL=postgres://u:hidden-pw@h:notaport/db"}, 2,
			`pgrelay: PGRELAY_SOURCE_URL="postgres://u:xxxxx@h:notaport/db" is not a valid URL...`, "hidden-pw"},
		{"refused", []string{"PGRELAY_SOURCE_URL=postgres://u:hidden-pw@127.0.0.1:" + strconv.Itoa(closedPort) + "/db"}, 1,
			"pgrelay: tail: ...", "hidden-pw"},
		{"wrong password", []string{"PGRELAY_SOURCE_URL=" + wrongPassword}, 1,
			"pgrelay: tail: ...", "wrong-pw-123"},
		{"missing table", []string{"PGRELAY_SOURCE_URL=" + pg.URL(), "PGRELAY_TABLES=public.nope", "PGRELAY_PUBLICATION=bad_pub"}, 1,
			"pgrelay: tail: ...", pg.Password},
	}
	if major < 16 {
		cases = append(cases, struct {
			name   string
			env    []string
			code   int
			want   string
			secret string
		}{"parallel too new", []string{"PGRELAY_SOURCE_URL=" + pg.URL(), "PGRELAY_STREAMING=parallel"}, 1,
			"pgrelay: tail: ...", pg.Password})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "tail")
			cmd.Env = tailEnv(tc.env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != tc.code {
				t.Fatalf("exit %v, want code %d; stderr %q", err, tc.code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			out := stderr.String()
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("want exactly one line on stderr, got %q", out)
			}
			line := strings.TrimSuffix(out, "\n")
			if prefix, ok := strings.CutSuffix(tc.want, "..."); ok {
				if !strings.HasPrefix(line, prefix) || len(line) < len(prefix)+10 {
					t.Errorf("stderr %q, want %q followed by a reason", line, prefix)
				}
			} else if line != tc.want {
				t.Errorf("stderr\n got %q\nwant %q", line, tc.want)
			}
			if tc.secret != "" && strings.Contains(line, tc.secret) {
				t.Errorf("stderr shows the password: %q", line)
			}
			t.Logf("%s", line)
		})
	}
}
