package harness

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one running server process.
type proc struct {
	name    string // for messages: "PostgreSQL 18", "MariaDB"
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // the exit status; read only after done is closed
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

// spawn starts cmd from one OS thread that lives as long as the process. The
// parent-death signal fires when the thread that forked the child exits, not
// the process, and the Go runtime may retire threads; forking from a locked
// thread that never returns makes the signal mean "the test binary died".
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread must outlive every server
			for req := range spawnCh {
				req.errc <- req.cmd.Start()
			}
		}()
	})
	req := spawnRequest{cmd: cmd, errc: make(chan error, 1)}
	spawnCh <- req
	return <-req.errc
}

// startDaemon starts a long-running server process as acct, its output
// appended to logPath. The process gets its own process group (a ^C in the
// terminal reaches the test binary, whose Main stops the servers in order) and
// SIGKILL when the test binary dies.
func startDaemon(name string, argv []string, acct *account, logPath string, env []string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("harness: open %s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own copy
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: acct.credential(),
	}
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("harness: start %s (%s): %w", name, argv[0], err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to timeout for the process to exit, then kills it.
func (p *proc) stop(sig syscall.Signal, timeout time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// runAs runs a short set-up command (initdb, mariadb-install-db) as acct and
// returns its combined output.
func runAs(acct *account, dir string, env []string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: acct.credential()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// childEnv is the environment for server processes: the test's, without
// variables that would change what the servers or their tools do (PG*, MYSQL*,
// locale), plus a C locale so messages are English and parseable.
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PG"), strings.HasPrefix(name, "MYSQL"), strings.HasPrefix(name, "MARIADB"),
			strings.HasPrefix(name, "LC_"), name == "LANG", name == "LANGUAGE", name == "HOME", name == "TZ":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C", "TZ=UTC", "HOME="+home)
}

// freePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the server binds it; callers retry on a clash.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("harness: find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// fileSize is the current size of path, 0 when it does not exist: the offset
// from which a start attempt's log lines begin.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns what was appended to path after offset, at most the last
// 64 KiB.
func logSince(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	const max = 64 << 10
	if fi.Size()-offset > max {
		offset = fi.Size() - max
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	return lastLines(logSince(path, 0), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// indent prefixes each line of a log excerpt so it stands apart in a test
// failure message.
func indent(s string) string {
	if s == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
