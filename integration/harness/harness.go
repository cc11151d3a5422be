package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// testUser is the superuser (PostgreSQL) or all-privileges user (MariaDB) the
// tests connect as.
const testUser = "pgrelay_test"

// defaultMajors are the PostgreSQL majors tested when PGRELAY_TEST_MAJORS is unset.
const defaultMajors = "15,18"

// tempPrefix names the per-process temporary directory; the pid in it lets a
// later run remove what a killed run left behind.
const tempPrefix = "pgrelay-harness-"

// server is a running database server the harness must stop at exit.
type server interface {
	// shutdown stops the server at once and removes its files.
	shutdown()
}

var (
	stateMu  sync.Mutex
	live     = map[server]struct{}{}
	baseDir  string // per-process temporary directory, created on first use
	dbSerial atomic.Int64
)

// Main runs the tests of a package that uses the harness and then stops every
// server it started and removes their temporary directories, whatever the
// tests' outcome. Use it as os.Exit(harness.Main(m)) in TestMain.
func Main(m *testing.M) int {
	if _, err := parseMajors(os.Getenv("PGRELAY_TEST_MAJORS")); err != nil {
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		return 2
	}
	removeStaleDirs(os.TempDir())
	code := m.Run()
	shutdownAll()
	return code
}

// Majors returns the PostgreSQL major versions to test against, from
// PGRELAY_TEST_MAJORS (a comma list such as "14,15,16,17,18"), default 15,18.
// Main rejects a malformed list before any test runs; here malformed entries
// are skipped.
func Majors() []int {
	majors, err := parseMajors(os.Getenv("PGRELAY_TEST_MAJORS"))
	if err != nil || len(majors) == 0 {
		majors, _ = parseMajors(defaultMajors)
	}
	return majors
}

// MajorsFrom parses the comma list of PostgreSQL major versions in the
// environment variable name, def when it is unset or empty; an error names the
// variable and the entry that is not a major version.
func MajorsFrom(name, def string) ([]int, error) {
	return parseMajorList(name, os.Getenv(name), def)
}

func parseMajors(list string) ([]int, error) {
	return parseMajorList("PGRELAY_TEST_MAJORS", list, defaultMajors)
}

func parseMajorList(name, list, def string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		list = def
	}
	var majors []int
	for _, field := range strings.Split(list, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		major, err := strconv.Atoi(field)
		if err != nil || major < 10 || major > 99 {
			return nil, fmt.Errorf("%s=%q: %q is not a PostgreSQL major version; use a comma list such as 15,18", name, list, field)
		}
		if !slices.Contains(majors, major) {
			majors = append(majors, major)
		}
	}
	if len(majors) == 0 {
		return nil, fmt.Errorf("%s=%q names no major version; use a comma list such as 15,18", name, list)
	}
	return majors, nil
}

func register(s server) {
	stateMu.Lock()
	defer stateMu.Unlock()
	live[s] = struct{}{}
}

func unregister(s server) {
	stateMu.Lock()
	defer stateMu.Unlock()
	delete(live, s)
}

// shutdownAll stops every live server (in parallel: an immediate stop still
// waits for the server's children) and removes the per-process directory.
func shutdownAll() {
	stateMu.Lock()
	servers := make([]server, 0, len(live))
	for s := range live {
		servers = append(servers, s)
	}
	clear(live)
	dir := baseDir
	baseDir = ""
	stateMu.Unlock()

	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.shutdown)
	}
	wg.Wait()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// serverDir makes a fresh directory for one server, owned by the account that
// runs it.
func serverDir(kind string, acct *account) (string, error) {
	stateMu.Lock()
	if baseDir == "" {
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
		if err != nil {
			stateMu.Unlock()
			return "", fmt.Errorf("harness: create temporary directory: %w", err)
		}
		// The server account must be able to reach its own directory inside.
		if err := os.Chmod(dir, 0o755); err != nil {
			stateMu.Unlock()
			return "", fmt.Errorf("harness: chmod %s: %w", dir, err)
		}
		baseDir = dir
	}
	base := baseDir
	stateMu.Unlock()

	dir, err := os.MkdirTemp(base, kind+"-")
	if err != nil {
		return "", fmt.Errorf("harness: create directory for %s: %w", kind, err)
	}
	if err := acct.chown(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// removeStaleDirs removes the temporary directories of harness processes that
// no longer exist (a test binary killed before its Main could clean up).
func removeStaleDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, tempPrefix) {
			continue
		}
		pidText, _, ok := strings.Cut(strings.TrimPrefix(name, tempPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(tmp, name))
		}
	}
}

// account is the unprivileged OS user servers run as when the tests run as
// root; nil means "run as the current user".
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount picks the OS user to run a server as: nobody special when the
// tests are not root, else PGRELAY_TEST_OS_USER, the preferred user
// (postgres, mysql) or nobody, whichever exists first.
func serverAccount(preferred string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var names []string
	if v := os.Getenv("PGRELAY_TEST_OS_USER"); v != "" {
		names = append(names, v)
	}
	names = append(names, preferred, "nobody")
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("harness: running as root and none of the users %s exists to run the database servers; create one: useradd --system %s", strings.Join(names, ", "), preferred)
}

func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("harness: chown %s to %s: %w", path, a.name, err)
	}
	return nil
}

func (a *account) credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// repoRoot finds the module root (the directory holding go.mod and scripts/)
// by walking up from the working directory, which go test sets to the
// package's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("harness: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: no go.mod with a scripts/ directory above the working directory; run the tests from inside the pgrelay repository")
		}
		dir = parent
	}
}

// scriptMu serialises set-up scripts: two tests needing the same binaries
// must not fetch them at the same time.
var scriptMu sync.Mutex

// runScript runs scripts/<name> from the repository, for binaries that are
// missing on this machine.
func runScript(name string, args ...string) error {
	scriptMu.Lock()
	defer scriptMu.Unlock()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	script := filepath.Join(root, "scripts", name)
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Dir = root
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("harness: scripts/%s %s failed (%w); output:\n%s", name, strings.Join(args, " "), err, lastLines(string(out), 20))
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName makes a unique database name for a test: a serial number, so names
// never clash, and the test's name, so a person can tell whose it is.
func dbName(t testing.TB, maxLen int) string {
	name := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	prefix := fmt.Sprintf("t%d_", dbSerial.Add(1))
	name = prefix + name
	if len(name) > maxLen {
		name = name[:maxLen]
	}
	return strings.TrimRight(name, "_")
}

// sqlLiteral quotes s as an SQL string literal (both dialects, with
// MariaDB's NO_BACKSLASH_ESCAPES off: backslashes are doubled too).
func sqlLiteral(s string, backslashes bool) string {
	s = strings.ReplaceAll(s, "'", "''")
	if backslashes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + s + "'"
}
