package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/internal/settings"
)

// clearEnv unsets every PGRELAY_* variable for the test (t.Setenv restores them).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "PGRELAY_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

func loadValidated(t *testing.T, n need) (*Config, error) {
	t.Helper()
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return cfg, cfg.Validate(n)
}

func TestConfigDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	cfg, err := loadValidated(t, needSource)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Config: relay.Config{SourceURL: "postgres://u@h/db", Slot: "pgrelay", Publication: "pgrelay",
			Snapshot: "auto", TwoPhase: "auto", Streaming: "auto", StatusInterval: 10 * time.Second},
		LogFormat: "text", LogLevel: "info",
	}
	got := *cfg
	got.rawStatusInterval, got.rawTailBinary = "", ""
	if got.SourceURL != want.SourceURL || got.Slot != want.Slot || got.Publication != want.Publication ||
		got.Snapshot != want.Snapshot || got.TwoPhase != want.TwoPhase || got.Streaming != want.Streaming ||
		got.LogFormat != want.LogFormat || got.LogLevel != want.LogLevel || got.StatusInterval != want.StatusInterval ||
		got.TargetURL != "" || got.MetricsAddr != "" || len(got.Tables) != 0 || got.TailBinary || got.KeepOrder ||
		got.VerifyChunkRows != 0 || got.VerifyWait != 30*time.Second || got.PublicationCheck != time.Minute || got.MySQLUnfit != "error" {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestConfigFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "host=localhost dbname=src")
	t.Setenv("PGRELAY_TARGET_URL", "mysql://u:p@127.0.0.1:3306/dst")
	t.Setenv("PGRELAY_SLOT", "my_slot_1")
	t.Setenv("PGRELAY_PUBLICATION", "pub")
	t.Setenv("PGRELAY_TABLES", " public.a, s.b ,,")
	t.Setenv("PGRELAY_SNAPSHOT", "Never")
	t.Setenv("PGRELAY_TWO_PHASE", "off")
	t.Setenv("PGRELAY_STREAMING", "parallel")
	t.Setenv("PGRELAY_LOG_FORMAT", "json")
	t.Setenv("PGRELAY_LOG_LEVEL", "debug")
	t.Setenv("PGRELAY_METRICS_ADDR", ":9187")
	t.Setenv("PGRELAY_STATUS_INTERVAL", "2s")
	t.Setenv("PGRELAY_TAIL_BINARY", "true")
	t.Setenv("PGRELAY_COPY_WORKERS", "6")
	t.Setenv("PGRELAY_KEEP_ORDER", "TRUE")
	t.Setenv("PGRELAY_VERIFY_CHUNK_ROWS", "2500")
	t.Setenv("PGRELAY_VERIFY_WAIT", "0s")
	t.Setenv("PGRELAY_PUBLICATION_CHECK_INTERVAL", "0s")
	t.Setenv("PGRELAY_MYSQL_UNFIT", "NULL")
	cfg, err := loadValidated(t, needSource|needTarget)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceURL != "host=localhost dbname=src" || cfg.TargetURL != "mysql://u:p@127.0.0.1:3306/dst" ||
		cfg.Slot != "my_slot_1" || cfg.Publication != "pub" || strings.Join(cfg.Tables, "|") != "public.a|s.b" ||
		cfg.Snapshot != "never" || cfg.TwoPhase != "off" || cfg.Streaming != "parallel" ||
		cfg.LogFormat != "json" || cfg.LogLevel != "debug" || cfg.MetricsAddr != ":9187" ||
		cfg.StatusInterval != 2*time.Second || !cfg.TailBinary || cfg.CopyWorkers != 6 || !cfg.KeepOrder ||
		cfg.VerifyChunkRows != 2500 || cfg.VerifyWait != 0 || cfg.PublicationCheck != 0 || cfg.MySQLUnfit != "null" {
		t.Fatalf("got %+v", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	const src = "postgres://u:s3cret-pw@h/db"
	cases := []struct {
		name string
		env  map[string]string
		need need
		want string
	}{
		{"source missing", nil, needSource,
			`PGRELAY_SOURCE_URL is required: set it to the source PostgreSQL URL, e.g. postgres://user@host:5432/db`},
		{"target missing", map[string]string{"PGRELAY_SOURCE_URL": src}, needSource | needTarget,
			`PGRELAY_TARGET_URL is required: set it to the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db`},
		{"snapshot", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_SNAPSHOT": "sometimes"}, needSource,
			`PGRELAY_SNAPSHOT="sometimes": expected auto, always or never`},
		{"two phase", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TWO_PHASE": "yes"}, needSource,
			`PGRELAY_TWO_PHASE="yes": expected auto, on or off`},
		{"streaming", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_STREAMING": "fast"}, needSource,
			`PGRELAY_STREAMING="fast": expected auto, on, off or parallel`},
		{"log format", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_LOG_FORMAT": "xml"}, needSource,
			`PGRELAY_LOG_FORMAT="xml": expected text or json`},
		{"log level", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_LOG_LEVEL": "verbose"}, needSource,
			`PGRELAY_LOG_LEVEL="verbose": expected debug, info, warn or error`},
		{"slot upper", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_SLOT": "MySlot"}, needSource,
			`PGRELAY_SLOT="MySlot": expected 1 to 63 characters from a-z, 0-9 and _`},
		{"slot long", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_SLOT": strings.Repeat("a", 64)}, needSource,
			`PGRELAY_SLOT="` + strings.Repeat("a", 64) + `": expected 1 to 63 characters from a-z, 0-9 and _`},
		{"slot dash", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_SLOT": "my-slot"}, needSource,
			`PGRELAY_SLOT="my-slot": expected 1 to 63 characters from a-z, 0-9 and _`},
		{"publication", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_PUBLICATION": "Pub"}, needSource,
			`PGRELAY_PUBLICATION="Pub": expected 1 to 63 characters from a-z, 0-9 and _`},
		{"tables", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TABLES": "public.a,orders"}, needSource,
			`PGRELAY_TABLES entry "orders": expected schema.table, e.g. public.orders (quote a name with capitals or dots: public."Orders")`},
		{"tables three parts", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TABLES": "db.public.a"}, needSource,
			`PGRELAY_TABLES entry "db.public.a": expected schema.table, e.g. public.orders (quote a name with capitals or dots: public."Orders")`},
		{"metrics", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_METRICS_ADDR": "localhost"}, needSource,
			`PGRELAY_METRICS_ADDR="localhost": expected host:port, e.g. 127.0.0.1:9187 or :9187`},
		{"metrics port", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_METRICS_ADDR": "localhost:http"}, needSource,
			`PGRELAY_METRICS_ADDR="localhost:http": expected host:port, e.g. 127.0.0.1:9187 or :9187`},
		{"status interval", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_STATUS_INTERVAL": "10"}, needSource,
			`PGRELAY_STATUS_INTERVAL="10": expected a duration between 100ms and 1h, e.g. 10s`},
		{"tail binary", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TAIL_BINARY": "maybe"}, needSource,
			`PGRELAY_TAIL_BINARY="maybe": expected true or false`},
		{"keep order", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_KEEP_ORDER": "sometimes"}, needSource,
			`PGRELAY_KEEP_ORDER="sometimes": expected true or false`},
		{"mysql unfit", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_MYSQL_UNFIT": "zero"}, needSource,
			`PGRELAY_MYSQL_UNFIT="zero": expected error or null`},
		{"copy workers", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_COPY_WORKERS": "-1"}, needSource,
			`PGRELAY_COPY_WORKERS="-1": expected a number of workers from 0 (one per CPU) to 256`},
		{"verify chunk rows", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_VERIFY_CHUNK_ROWS": "many"}, needSource,
			`PGRELAY_VERIFY_CHUNK_ROWS="many": expected a number of rows per chunk from 1 to 10000000, or 0 to choose per table`},
		{"verify wait", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_VERIFY_WAIT": "-1s"}, needSource,
			`PGRELAY_VERIFY_WAIT="-1s": expected a duration from 0s (no waiting) to 1h, e.g. 30s`},
		{"publication check", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_PUBLICATION_CHECK_INTERVAL": "10ms"}, needSource,
			`PGRELAY_PUBLICATION_CHECK_INTERVAL="10ms": expected a duration from 1s to 24h, e.g. 1m, or 0s to check only at start`},
		{"source scheme", map[string]string{"PGRELAY_SOURCE_URL": "mysql://u:s3cret-pw@h/db"}, needSource,
			`PGRELAY_SOURCE_URL="mysql://u:xxxxx@h/db": expected a postgres:// or postgresql:// URL or key=value settings, e.g. postgres://user@host:5432/db`},
		{"source bare word", map[string]string{"PGRELAY_SOURCE_URL": "localhost"}, needSource,
			`PGRELAY_SOURCE_URL="localhost": expected a postgres:// URL or key=value settings, e.g. postgres://user@host:5432/db`},
		{"source bad port", map[string]string{"PGRELAY_SOURCE_URL": "postgres://u:s3cret-pw@h:port/db"}, needSource,
			`PGRELAY_SOURCE_URL="postgres://u:xxxxx@h:port/db" is not a valid URL (invalid port ":port" after host): expected e.g. postgres://user@host:5432/db`},
		{"source bad kv", map[string]string{"PGRELAY_SOURCE_URL": "host=h password='s3cret-pw port=5"}, needSource,
			`PGRELAY_SOURCE_URL="host=h password=xxxxx" is not a valid connection string (unterminated quoted string in connection info string): expected e.g. postgres://user@host:5432/db`},
		{"source bad sslmode", map[string]string{"PGRELAY_SOURCE_URL": "postgres://u:s3cret-pw@h/db?sslmode=maybe"}, needSource,
			`PGRELAY_SOURCE_URL="postgres://u:xxxxx@h/db?sslmode=maybe" is not a valid connection string (sslmode is invalid): expected e.g. postgres://user@host:5432/db`},
		{"source libpq setting", map[string]string{"PGRELAY_SOURCE_URL": "postgres://u:s3cret-pw@h/db?gssencmode=disable"}, needSource,
			`PGRELAY_SOURCE_URL="postgres://u:xxxxx@h/db?gssencmode=disable": the libpq setting gssencmode is not supported by pgrelay's PostgreSQL driver: remove it from the connection string`},
		{"source hostaddr", map[string]string{"PGRELAY_SOURCE_URL": "host=h hostaddr=db.example password=s3cret-pw"}, needSource,
			`PGRELAY_SOURCE_URL="host=h hostaddr=db.example password=xxxxx": hostaddr "db.example" is not an IP address: give a numeric address, or put the name in host`},
		{"target libpq setting", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "host=h password=s3cret-pw tcp_user_timeout=1000"}, needSource | needTarget,
			`PGRELAY_TARGET_URL="host=h password=xxxxx tcp_user_timeout=1000": the libpq setting tcp_user_timeout is not supported by pgrelay's PostgreSQL driver: remove it from the connection string`},
		{"target scheme", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "sqlite://u:s3cret-pw@h/db"}, needSource,
			`PGRELAY_TARGET_URL="sqlite://u:xxxxx@h/db": expected a postgres://, postgresql:// or mysql:// URL or key=value settings, e.g. postgres://user@host:5432/db`},
		{"target kv", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "host=h password='s3cret-pw"}, needSource | needTarget,
			`PGRELAY_TARGET_URL="host=h password=xxxxx" is not a valid connection string: expected e.g. postgres://user@host:5432/db or host=h dbname=db user=u`},
		{"target neither", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "localhost"}, needSource | needTarget,
			`PGRELAY_TARGET_URL="localhost": expected a postgres:// URL or key=value settings, e.g. postgres://user@host:5432/db`},
		{"target mysql no db", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "mysql://u:s3cret-pw@h:3306"}, needSource | needTarget,
			`PGRELAY_TARGET_URL="mysql://u:xxxxx@h:3306" has no database: expected mysql://user:pass@host:port/db`},
		{"target mysql no host", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_TARGET_URL": "mysql:///db"}, needSource | needTarget,
			`PGRELAY_TARGET_URL="mysql:///db" has no host: expected mysql://user:pass@host:port/db`},
		{"config ext", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_CONFIG": "/etc/pgrelay.ini"}, needSource,
			`PGRELAY_CONFIG="/etc/pgrelay.ini": expected a file ending in .yaml, .yml, .toml, .json or .env`},
		{"config missing", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_CONFIG": "/nonexistent/pgrelay.yaml"}, needSource,
			`PGRELAY_CONFIG="/nonexistent/pgrelay.yaml": file not found`},
		{"two bad settings", map[string]string{"PGRELAY_SOURCE_URL": src, "PGRELAY_SNAPSHOT": "sometimes", "PGRELAY_STATUS_INTERVAL": "5ms"}, needSource,
			`PGRELAY_SNAPSHOT="sometimes": expected auto, always or never; PGRELAY_STATUS_INTERVAL="5ms": expected a duration between 100ms and 1h, e.g. 10s`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := loadValidated(t, tc.need)
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n got %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-pw") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error leaks the password or is not one line: %q", err)
			}
		})
	}
}

// A command validates only what it needs: tail runs without a target URL.
func TestConfigTargetNotRequired(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	if _, err := loadValidated(t, needSource); err != nil {
		t.Fatalf("tail's needs: %v", err)
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"c.yaml": "source_url: postgres://file@h/db\nslot: file_slot\ntables: [public.a, public.b]\ntail_binary: true\nstatus_interval: 3s\n",
		"c.toml": "source_url = \"postgres://file@h/db\"\nslot = \"file_slot\"\ntables = \"public.a,public.b\"\ntail_binary = true\nstatus_interval = \"3s\"\n",
		"c.json": `{"source_url": "postgres://file@h/db", "slot": "file_slot", "tables": ["public.a", "public.b"], "tail_binary": true, "status_interval": "3s"}`,
		"c.env":  "PGRELAY_SOURCE_URL=postgres://file@h/db\nPGRELAY_SLOT=file_slot\nPGRELAY_TABLES=public.a,public.b\nPGRELAY_TAIL_BINARY=true\nPGRELAY_STATUS_INTERVAL=3s\n",
	}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			clearEnv(t)
			t.Setenv("PGRELAY_CONFIG", path)
			cfg, err := loadValidated(t, needSource)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SourceURL != "postgres://file@h/db" || cfg.Slot != "file_slot" ||
				strings.Join(cfg.Tables, "|") != "public.a|public.b" || !cfg.TailBinary || cfg.StatusInterval != 3*time.Second {
				t.Fatalf("from file: %+v", cfg)
			}
			// The environment wins over the file; what it leaves unset comes from the file.
			t.Setenv("PGRELAY_SLOT", "env_slot")
			t.Setenv("PGRELAY_TABLES", "s.c")
			cfg, err = loadValidated(t, needSource)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Slot != "env_slot" || strings.Join(cfg.Tables, "|") != "s.c" || cfg.SourceURL != "postgres://file@h/db" {
				t.Fatalf("env over file: %+v", cfg)
			}
		})
	}
}

func TestConfigFileUnknownKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("sorce_url: postgres://h/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	t.Setenv("PGRELAY_CONFIG", path)
	_, err := loadValidated(t, needSource)
	want := `config file ` + path + ` has unknown setting "sorce_url"; known settings are source_url, target_url, slot, publication, tables, snapshot, two_phase, streaming, log_format, log_level, metrics_addr, status_interval, tail_binary, copy_workers, keep_order, verify_chunk_rows, verify_wait, spill_dir, publication_check_interval, mysql_unfit, webhook_url, webhook_secret, webhook_format, webhook_repeat, lag_alert, slot_wal_alert, prepared_alert, schema, schema_grants`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://user:secret@host:5432/db", "postgres://user:xxxxx@host:5432/db"},
		{"postgresql://user:secret@host/db?sslmode=disable", "postgresql://user:xxxxx@host/db?sslmode=disable"},
		{"postgres://user@host/db", "postgres://user@host/db"},
		{"postgres://host/db?user=u&password=secret&sslmode=disable", "postgres://host/db?user=u&password=xxxxx&sslmode=disable"},
		{"postgres://user:p@ss/w?rd@host/db", "postgres://user:xxxxx@host/db"},
		{"mysql://root:secret@127.0.0.1:3306/db?tls=false", "mysql://root:xxxxx@127.0.0.1:3306/db?tls=false"},
		{"host=h user=u password=secret dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password = 'se cr\\'et' dbname=d", "host=h password = xxxxx dbname=d"},
		{"host=h PASSWORD=secret", "host=h PASSWORD=xxxxx"},
		{"host=h dbname=d", "host=h dbname=d"},
		{"postgres://user@host:5432/db?application_name=a@b", "postgres://user@host:5432/db?application_name=a@b"},
		{"postgres://user:pw@host/db?application_name=a@b", "postgres://user:xxxxx@b"},
	}
	for _, tc := range cases {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Passwords never reach stderr: neither in a configuration error nor in a log
// line carrying a driver error that echoed it.
func TestRunNeverPrintsPassword(t *testing.T) {
	clearEnv(t)
	var stdout, stderr bytes.Buffer
	env := map[string]string{
		"PGRELAY_SOURCE_URL": "postgres://u:hunter22@h/db",
		"PGRELAY_SNAPSHOT":   "bogus",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for k, v := range env {
		t.Setenv(k, v)
	}
	code := run(context.Background(), []string{"tail"}, lookup, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if got, want := stderr.String(), "pgrelay: PGRELAY_SNAPSHOT=\"bogus\": expected auto, always or never\n"; got != want {
		t.Fatalf("stderr %q, want %q", got, want)
	}

	var logBuf bytes.Buffer
	log := newLogger(&logBuf, "json", "info", redact.New("postgres://u:hunter22@h/db"))
	log.Info("connect failed: password hunter22 rejected", "url", "postgres://u:hunter22@h/db", "err", errString("auth hunter22"))
	if strings.Contains(logBuf.String(), "hunter22") || !strings.Contains(logBuf.String(), "xxxxx") {
		t.Fatalf("log line leaks or lost its text: %s", logBuf.String())
	}
	stderr.Reset()
	printError(&stderr, errString("dial postgres://u:hunter22@h/db failed\nsecond line"), redact.New("postgres://u:hunter22@h/db"))
	if got, want := stderr.String(), "pgrelay: dial postgres://u:xxxxx@h/db failed; second line\n"; got != want {
		t.Fatalf("printError %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestRunUsage(t *testing.T) {
	clearEnv(t)
	lookup := func(string) (string, bool) { return "", false }
	cases := []struct {
		args       []string
		code       int
		stdout     string // substring
		stderrHead string // first line
	}{
		{nil, exitUsage, "", "usage: pgrelay <command>"},
		{[]string{"help"}, exitOK, "usage: pgrelay <command>", ""},
		{[]string{"--help"}, exitOK, "  tail ", ""},
		{[]string{"version"}, exitOK, "pgrelay ", ""},
		{[]string{"frobnicate"}, exitUsage, "", `pgrelay: unknown command "frobnicate"`},
		{[]string{"tail", "--help"}, exitOK, "usage: pgrelay tail", ""},
		{[]string{"tail"}, exitUsage, "", "pgrelay: PGRELAY_SOURCE_URL is required: set it to the source PostgreSQL URL, e.g. postgres://user@host:5432/db"},
		{[]string{"version", "--bogus"}, exitUsage, "", `pgrelay: version takes no arguments, got "--bogus"`},
		{[]string{"migrate", "--dry-run"}, exitUsage, "", `pgrelay: migrate takes no arguments, got "--dry-run": settings come from PGRELAY_* environment variables`},
		{[]string{"status", "--jsn"}, exitUsage, "", `pgrelay: status takes only --json, got "--jsn": settings come from PGRELAY_* environment variables`},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, lookup, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tc.stdout) {
			t.Errorf("%v: stdout %q lacks %q", tc.args, stdout.String(), tc.stdout)
		}
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if first != tc.stderrHead {
			t.Errorf("%v: stderr starts %q, want %q", tc.args, first, tc.stderrHead)
		}
	}
}

// A mysql:// target the MySQL sink cannot take (a parameter it does not
// know) is a usage error before any server is touched, naming the parameter
// and without the password.
func TestRunRefusesMySQLTargetURL(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u:pw@127.0.0.1:1/db")
	t.Setenv("PGRELAY_TARGET_URL", "mysql://u:Hunter2Secret@127.0.0.1:1/db?parseTime=true")
	for _, cmd := range []string{"migrate", "replicate", "status", "teardown"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{cmd}, os.LookupEnv, &stdout, &stderr)
		if code != exitUsage || !strings.HasPrefix(stderr.String(), "pgrelay: PGRELAY_TARGET_URL: sink/mysql: target URL parameter parseTime is not one pgrelay takes (it takes ") ||
			strings.Contains(stderr.String(), "Hunter2") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want %d and one line naming parseTime", cmd, code, stderr.String(), exitUsage)
		}
	}
}

func TestConfigTargetKeyValue(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	t.Setenv("PGRELAY_TARGET_URL", "host=127.0.0.1 port=5433 dbname=app user=admin password=pw")
	if _, err := loadValidated(t, needSource|needTarget); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownSettings(t *testing.T) {
	got := conf.Unknown([]string{"PGRELAY_SLOTT=x", "PGRELAY_SLOT=a", "PGRELAY_CONFIG=/f.yaml", "PATH=/bin", "PGRELAY_KEEP_ORDER=true", "PGRELAY_A=1", "PGRELAY_CACHE=/c", "PGRELAY_E2E_SEED=1", "PGRELAY_slot=b"})
	if strings.Join(got, ",") != "PGRELAY_A,PGRELAY_SLOTT,PGRELAY_slot" {
		t.Fatalf("conf.Unknown = %q", got)
	}
}

func TestTablesWithCommas(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	t.Setenv("PGRELAY_TABLES", `public."a,b", "S"."X,""Y""" ,s.c`)
	cfg, err := loadValidated(t, needSource)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Tables, "|"); got != `public."a,b"|"S"."X,""Y"""|s.c` {
		t.Fatalf("tables %q", got)
	}
}

// A config file value of a kind a setting cannot take (a list, a map, null,
// a boolean or a number where text is expected, a date) is one line naming
// the key and what it expects, exit 2, for every setting in every format:
// never the default in its place.
func TestConfigFileWrongTypes(t *testing.T) {
	type value struct{ name, yaml, json, toml string }
	values := []value{
		{"list", "[a, b]", `["a", "b"]`, `["a", "b"]`},
		{"list of numbers", "[1, 2]", `[1, 2]`, `[1, 2]`},
		{"empty map", "{}", `{}`, `{}`},
		{"map", "{x: 1}", `{"x": 1}`, `{x = 1}`},
		{"null", "null", `null`, ""},
		{"empty", "", "", ""},
		{"boolean", "true", `true`, `true`},
		{"number", "12", `12`, `12`},
		{"float", "1.5", `1.5`, `1.5`},
		{"date", "", "", `1979-05-27`},
	}
	// What a setting may take besides a string.
	fits := func(key, value string) bool {
		st, _ := conf.Lookup(key)
		switch st.Kind {
		case settings.List:
			return value == "list"
		case settings.Bool:
			return value == "boolean" || value == "number" || value == "float"
		case settings.Number, settings.Duration:
			return value == "number" || value == "float"
		}
		return false
	}
	dir := t.TempDir()
	for _, s := range settingList {
		for _, v := range values {
			if fits(s.Key, v.name) {
				continue
			}
			for _, key := range []string{s.Key, envName(s.Key)} {
				files := map[string]string{}
				if v.yaml != "" || v.name == "empty" {
					files["yaml"] = key + ": " + v.yaml + "\n"
				}
				if v.json != "" {
					files["json"] = `{"` + key + `": ` + v.json + "}"
				}
				if v.toml != "" {
					files["toml"] = key + " = " + v.toml + "\n"
				}
				for ext, body := range files {
					path := filepath.Join(dir, "c."+ext)
					if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
					clearEnv(t)
					env := map[string]string{"PGRELAY_CONFIG": path, "PGRELAY_SOURCE_URL": "postgres://u@127.0.0.1:1/db", "PGRELAY_TARGET_URL": "postgres://u@127.0.0.1:1/db"}
					if s.Key == keySourceURL || s.Key == keyTargetURL {
						delete(env, envName(s.Key)) // the environment wins over the file
					}
					for k, val := range env {
						t.Setenv(k, val)
					}
					lookup := func(k string) (string, bool) { val, ok := env[k]; return val, ok }
					var stdout, stderr bytes.Buffer
					code := run(context.Background(), []string{"status"}, lookup, &stdout, &stderr)
					msg := stderr.String()
					if code != exitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, key) ||
						!strings.Contains(msg, "expected "+s.Expects) && !strings.Contains(msg, "set it to "+s.Expects) {
						t.Errorf("%s %s in %s (%q): exit %d, stderr %q; want exit 2 with one line naming %s and what it expects", key, v.name, ext, body, code, msg, key)
					}
				}
			}
		}
	}
}

// A PGRELAY_SPILL_DIR that cannot be written is found at the start of
// replicate and migrate (exit 2, one line), not at the first transaction
// larger than memory, which may come hours later.
func TestSpillDirChecked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"replicate", "migrate"} {
		clearEnv(t)
		env := map[string]string{"PGRELAY_SOURCE_URL": "postgres://u@127.0.0.1:1/db", "PGRELAY_TARGET_URL": "postgres://u@127.0.0.1:1/db",
			"PGRELAY_SPILL_DIR": filepath.Join(file, "spill")}
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		for k, v := range env {
			t.Setenv(k, v)
		}
		var stdout, stderr bytes.Buffer
		// Unchecked, the command would retry the closed port until then.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		code := run(ctx, []string{cmd}, lookup, &stdout, &stderr)
		cancel()
		if msg := stderr.String(); code != exitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "PGRELAY_SPILL_DIR=") || !strings.Contains(msg, "not a directory") {
			t.Errorf("%s with a spill directory under a file: exit %d, stderr %q; want exit 2 and one line naming PGRELAY_SPILL_DIR", cmd, code, msg)
		}
	}
}
