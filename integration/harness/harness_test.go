package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestParseMajors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "", want: []int{15, 18}},
		{in: "14,15,16,17,18", want: []int{14, 15, 16, 17, 18}},
		{in: " 18 , 15,18,", want: []int{18, 15}},
		{in: "15,x", bad: true},
		{in: "9", bad: true},
		{in: ",", bad: true},
	} {
		got, err := parseMajors(tc.in)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "PGRELAY_TEST_MAJORS") {
				t.Errorf("parseMajors(%q) = %v, %v; want an error naming PGRELAY_TEST_MAJORS", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseMajors(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	t.Setenv("PGRELAY_TEST_MAJORS", "16,17")
	if got := Majors(); !slices.Equal(got, []int{16, 17}) {
		t.Errorf("Majors() = %v, want [16 17]", got)
	}
	t.Setenv("PGRELAY_TEST_MAJORS", "junk")
	if got := Majors(); !slices.Equal(got, []int{15, 18}) {
		t.Errorf("Majors() with junk = %v, want the default [15 18]", got)
	}
}

func TestMajorsFrom(t *testing.T) {
	t.Setenv("PGRELAY_BENCH_TARGET_MAJORS", "")
	if got, err := MajorsFrom("PGRELAY_BENCH_TARGET_MAJORS", "15,18"); err != nil || !slices.Equal(got, []int{15, 18}) {
		t.Errorf("unset: MajorsFrom = %v, %v; want the default [15 18]", got, err)
	}
	t.Setenv("PGRELAY_BENCH_TARGET_MAJORS", "17")
	if got, err := MajorsFrom("PGRELAY_BENCH_TARGET_MAJORS", "15,18"); err != nil || !slices.Equal(got, []int{17}) {
		t.Errorf("17: MajorsFrom = %v, %v; want [17]", got, err)
	}
	t.Setenv("PGRELAY_BENCH_TARGET_MAJORS", "18,pg")
	if got, err := MajorsFrom("PGRELAY_BENCH_TARGET_MAJORS", "15,18"); err == nil || !strings.Contains(err.Error(), "PGRELAY_BENCH_TARGET_MAJORS") || !strings.Contains(err.Error(), `"pg"`) {
		t.Errorf("18,pg: MajorsFrom = %v, %v; want an error naming the variable and the entry", got, err)
	}
}

func TestDBName(t *testing.T) {
	t.Run("Mixed/Case Sub-test with spaces & ünïcode", func(t *testing.T) {
		a, b := dbName(t, 63), dbName(t, 63)
		if a == b {
			t.Fatalf("two names for one test are equal: %s", a)
		}
		for _, name := range []string{a, b} {
			if len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || !strings.HasPrefix(name, "t") {
				t.Errorf("dbName = %q: want at most 63 of [a-z0-9_] starting with t", name)
			}
			if !strings.Contains(name, "testdbname_mixed_case_sub_test") {
				t.Errorf("dbName = %q does not name the test", name)
			}
		}
		if short := dbName(t, 12); len(short) > 12 || strings.HasSuffix(short, "_") {
			t.Errorf("dbName(12) = %q", short)
		}
	})
}

func TestQuoting(t *testing.T) {
	if got := sqlLiteral(`it's a \ path`, true); got != `'it''s a \\ path'` {
		t.Errorf("sqlLiteral with backslashes = %s", got)
	}
	if got := sqlLiteral(`it's a \ path`, false); got != `'it''s a \ path'` {
		t.Errorf("sqlLiteral = %s", got)
	}
	if got := mysqlIdent("a`b"); got != "`a``b`" {
		t.Errorf("mysqlIdent = %s", got)
	}
	if got := pgURL("u", "p@ss/:", 5432, "db"); got != "postgres://u:p%40ss%2F%3A@127.0.0.1:5432/db?sslmode=disable" {
		t.Errorf("pgURL = %s", got)
	}
	my := &MY{Host: "127.0.0.1", Port: 3306, DB: "d", User: "u", Password: "p@ss"}
	if got := my.URL(); got != "mysql://u:p%40ss@127.0.0.1:3306/d" {
		t.Errorf("MY.URL = %s", got)
	}
	if got := my.DSN(); !strings.HasPrefix(got, "u:p@ss@tcp(127.0.0.1:3306)/d") {
		t.Errorf("MY.DSN = %s", got)
	}
}

func TestWithSettingRejectsBadName(t *testing.T) {
	var o pgOptions
	WithSetting("wal_level; DROP", "x")(&o)
	if o.err == nil {
		t.Fatal("WithSetting accepted a malformed name")
	}
	o = pgOptions{}
	WithSetting("wal_sender_timeout", "5s")(&o)
	if o.err != nil || !o.dedicated || len(o.settings) != 1 {
		t.Fatalf("WithSetting = %+v", o)
	}
}

// TestProductionDurability checks that the option's settings win over the
// harness's fsync and full_page_writes off and its small
// logical_decoding_work_mem.
func TestProductionDurability(t *testing.T) {
	pg := Postgres(t, Majors()[0], ProductionDurability())
	for name, want := range map[string]string{"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on", "logical_decoding_work_mem": "64MB"} {
		if got := pg.QueryString(t, "SELECT pg_catalog.current_setting($1)", name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if !pg.dedicated {
		t.Error("ProductionDurability gave a shared server")
	}
}

const childEnvVar = "PGRELAY_HARNESS_TEST_CHILD"

// TestServersDieWithTestBinary kills a test binary that has a server running
// (as go test -timeout or a kill -9 would) and checks that the server dies
// with it and that the next run removes its temporary directory.
func TestServersDieWithTestBinary(t *testing.T) {
	if os.Getenv(childEnvVar) == "1" {
		srv, err := newPGServer(Majors()[0], nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("pid %d dir %s\n", srv.proc.cmd.Process.Pid, srv.dir)
		time.Sleep(5 * time.Minute) // until killed
		os.Exit(1)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestServersDieWithTestBinary$")
	child.Env = append(os.Environ(), childEnvVar+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "pid %d dir %s", &pid, &dir); err != nil || serr != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("child did not report its server: %q (%v, %v)", line, err, serr)
	}
	if !processAlive(pid) {
		t.Fatalf("postmaster %d is not running in the child", pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	if err := waitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) { return !processAlive(pid), nil }); err != nil {
		t.Fatalf("postmaster %d still running after its test binary was killed: %v", pid, err)
	}
	childBase := filepath.Dir(dir)
	if _, err := os.Stat(childBase); err != nil {
		t.Fatalf("child's temporary directory %s: %v", childBase, err)
	}
	removeStaleDirs(filepath.Dir(childBase))
	if _, err := os.Stat(childBase); !os.IsNotExist(err) {
		t.Fatalf("stale directory %s not removed (%v)", childBase, err)
	}
}

// processAlive reports whether pid runs; a zombie (exited, not yet reaped by
// its new parent) counts as dead.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestBinaries(t *testing.T) {
	for _, major := range Majors() {
		dir, err := Binaries(major)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"postgres", "initdb", "pg_ctl"} {
			if !isExecutable(filepath.Join(dir, name)) {
				t.Errorf("Binaries(%d) = %s has no %s", major, dir, name)
			}
		}
	}
	dir, err := ClientBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"psql", "pg_recvlogical", "pgbench", "pg_dump", "pg_restore"} {
		if !isExecutable(filepath.Join(dir, name)) {
			t.Errorf("ClientBinaries() = %s has no %s", dir, name)
		}
	}
}
