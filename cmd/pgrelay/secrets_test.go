package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/internal/redact/redacttest"
)

// syncBuffer is a bytes.Buffer a command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// runSecretCommand runs `pgrelay name` with env (set in the process
// environment, which viper reads) until it ends, or for replicate and
// migrate until it says it will retry, and returns its output.
func runSecretCommand(t *testing.T, name string, env map[string]string) string {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{name}, lookup, &stdout, &stderr) }()
	for {
		select {
		case <-done:
			return stdout.String() + stderr.String()
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(stderr.String(), "will retry") {
				cancel()
			}
		}
	}
}

// No output of any command shows a piece of a password, whatever its
// characters and however it is written (or miswritten) in the source or the
// target URL, with the servers unreachable: configuration errors,
// connection errors, log lines of both formats. The integration test
// TestSecretsNeverShown does the same with the servers up.
func TestRunHidesSecrets(t *testing.T) {
	port := closedPort(t)
	hostPort := fmt.Sprintf("127.0.0.1:%d", port)
	plain := "postgres://relay@" + hostPort + "/app?sslmode=disable"
	commands := []string{"status", "verify", "teardown", "tail", "replicate", "migrate"}
	for i, pw := range redacttest.Secrets {
		forms := redacttest.ConnStrings("relay", pw, hostPort, "app")
		names := make([]string, 0, len(forms))
		for n := range forms {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, form := range names {
			for _, side := range []string{keySourceURL, keyTargetURL} {
				if side == keySourceURL && strings.HasPrefix(form, "mysql") {
					continue
				}
				env := map[string]string{
					envName(keySourceURL): plain,
					envName(keyTargetURL): plain,
					envName(side):         forms[form],
					envName(keyLogFormat): []string{"text", "json"}[i%2],
					envName(keySlot):      "secrets",
				}
				for _, cmd := range commands {
					out := runSecretCommand(t, cmd, env)
					if leak := redacttest.Leak(out, pw); leak != "" {
						t.Errorf("pgrelay %s, %s %s %q: output shows %q of password %q:\n%s", cmd, side, form, forms[form], leak, pw, out)
					}
				}
			}
		}
	}
}

// A connection string given as an argument by mistake is quoted without its
// password.
func TestRunArgumentsHideSecrets(t *testing.T) {
	clearEnv(t)
	lookup := func(string) (string, bool) { return "", false }
	for _, args := range [][]string{
		{"status", "postgres://u:Hunter2Secret@h/db"},
		{"version", "host=h password=Hunter2Secret"},
		{"postgres://u:Hunter2Secret@h/db"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, lookup, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
		if leak := redacttest.Leak(stdout.String()+stderr.String(), "Hunter2Secret"); leak != "" {
			t.Errorf("%q: output shows %q:\n%s", args, leak, stderr.String())
		}
	}
}
