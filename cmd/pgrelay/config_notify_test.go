package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/source"
)

func TestNotifySettingsDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u@h/db")
	cfg, err := loadValidated(t, needSource)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Notify
	if len(s.WebhookURLs) != 0 || s.WebhookSecret != "" || s.WebhookFormat != "json" || s.WebhookRepeat != 10*time.Minute ||
		s.LagAlert.On() || s.SlotWALAlert != (source.WALAlert{Share: 0.8}) || s.PreparedAlert != 10*time.Minute {
		t.Fatalf("defaults: %+v", s)
	}
	// No URL: no notifier, a no-op.
	n, err := notify.New(cfg.Notify.Config(cfg.Slot, cfg.SourceURL, cfg.TargetURL), nil)
	if n != nil || err != nil {
		t.Fatalf("notifier without URLs: %v, %v", n, err)
	}
}

func TestNotifySettingsFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u:src-pw-1@db1:5432/app")
	t.Setenv("PGRELAY_TARGET_URL", "postgres://u:tgt-pw-2@db2:5432/app")
	t.Setenv("PGRELAY_SLOT", "nightly")
	t.Setenv("PGRELAY_WEBHOOK_URL", " https://hooks.example/a , ,http://127.0.0.1:9000/b")
	t.Setenv("PGRELAY_WEBHOOK_SECRET", "sign-me-please")
	t.Setenv("PGRELAY_WEBHOOK_FORMAT", "Slack")
	t.Setenv("PGRELAY_WEBHOOK_REPEAT", "30m")
	t.Setenv("PGRELAY_LAG_ALERT", "2GB")
	t.Setenv("PGRELAY_SLOT_WAL_ALERT", "50GB")
	t.Setenv("PGRELAY_PREPARED_ALERT", "0s")
	cfg, err := loadValidated(t, needSource|needTarget)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Notify
	if !slices.Equal(s.WebhookURLs, []string{"https://hooks.example/a", "http://127.0.0.1:9000/b"}) || s.WebhookSecret != "sign-me-please" ||
		s.WebhookFormat != "slack" || s.WebhookRepeat != 30*time.Minute || s.LagAlert != (notify.LagAlert{Bytes: 2 << 30}) ||
		s.SlotWALAlert != (source.WALAlert{Bytes: 50 << 30}) || s.PreparedAlert != 0 {
		t.Fatalf("from env: %+v", s)
	}
	nc := cfg.Notify.Config(cfg.Slot, cfg.SourceURL, cfg.TargetURL)
	if len(nc.URLs) != 2 || nc.Secret != "sign-me-please" || nc.Format != notify.FormatSlack || nc.Slot != "nightly" ||
		nc.SourceURL != cfg.SourceURL || nc.TargetURL != cfg.TargetURL || nc.Repeat != 30*time.Minute ||
		nc.LagAlert != s.LagAlert || nc.PreparedAlert != 0 {
		t.Fatalf("notify config: %+v", nc)
	}
	t.Setenv("PGRELAY_LAG_ALERT", "5m")
	t.Setenv("PGRELAY_SLOT_WAL_ALERT", "95%")
	if cfg, err = loadValidated(t, needSource); err != nil {
		t.Fatal(err)
	}
	if cfg.Notify.LagAlert != (notify.LagAlert{Behind: 5 * time.Minute}) || cfg.Notify.SlotWALAlert != (source.WALAlert{Share: 0.95}) {
		t.Fatalf("duration lag alert, share: %+v", cfg.Notify)
	}
}

func TestNotifySettingsErrors(t *testing.T) {
	const src = "postgres://u:s3cret-pw@h/db"
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"url scheme", "PGRELAY_WEBHOOK_URL", "ftp://u:s3cret-pw@files.example/x",
			`PGRELAY_WEBHOOK_URL entry 1 (ftp://files.example/…): expected an http:// or https:// URL with a host, e.g. https://hooks.example.com/pgrelay`},
		{"url no scheme", "PGRELAY_WEBHOOK_URL", "https://ok.example/a,hooks.example/T0KEN-s3cret-pw",
			`PGRELAY_WEBHOOK_URL entry 2: expected an http:// or https:// URL with a host, e.g. https://hooks.example.com/pgrelay`},
		{"format", "PGRELAY_WEBHOOK_FORMAT", "xml", `PGRELAY_WEBHOOK_FORMAT="xml": expected json or slack`},
		{"repeat", "PGRELAY_WEBHOOK_REPEAT", "1s", `PGRELAY_WEBHOOK_REPEAT="1s": expected a duration from 10s to 24h, e.g. 10m`},
		{"repeat unit", "PGRELAY_WEBHOOK_REPEAT", "10", `PGRELAY_WEBHOOK_REPEAT="10": expected a duration from 10s to 24h, e.g. 10m`},
		{"lag", "PGRELAY_LAG_ALERT", "high", `PGRELAY_LAG_ALERT="high": expected a lag in bytes (e.g. 1GB) or a duration (e.g. 5m), or 0 for no alert`},
		{"slot wal", "PGRELAY_SLOT_WAL_ALERT", "150%", `PGRELAY_SLOT_WAL_ALERT="150%": expected a share of the source's max_slot_wal_keep_size (e.g. 80%), a size of retained WAL (e.g. 50GB), or 0 for no alert`},
		{"prepared", "PGRELAY_PREPARED_ALERT", "-1m", `PGRELAY_PREPARED_ALERT="-1m": expected a duration up to 168h, e.g. 10m, or 0s for no alert`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("PGRELAY_SOURCE_URL", src)
			t.Setenv(tc.key, tc.value)
			_, err := loadValidated(t, needSource)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-pw") || strings.Contains(err.Error(), "T0KEN") {
				t.Fatalf("error leaks a credential: %q", err)
			}
		})
	}
}

func TestNotifySettingsFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	body := "source_url: postgres://u@h/db\nwebhook_url: [https://a.example/x, https://b.example/y]\nlag_alert: 1073741824\nslot_wal_alert: 90%\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	t.Setenv("PGRELAY_CONFIG", path)
	cfg, err := loadValidated(t, needSource)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Notify.WebhookURLs, []string{"https://a.example/x", "https://b.example/y"}) ||
		cfg.Notify.LagAlert != (notify.LagAlert{Bytes: 1 << 30}) || cfg.Notify.SlotWALAlert != (source.WALAlert{Share: 0.9}) {
		t.Fatalf("from file: %+v", cfg.Notify)
	}
}

// The webhook secret and the credentials a webhook URL carries are redacted
// wherever pgrelay prints, like the connection strings' passwords.
func TestWebhookSecretsNeverPrinted(t *testing.T) {
	clearEnv(t)
	env := map[string]string{
		"PGRELAY_SOURCE_URL":     "postgres://u:hunter22@h/db",
		"PGRELAY_WEBHOOK_URL":    "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX,https://bot:b0t-pass@h.example/x",
		"PGRELAY_WEBHOOK_SECRET": "whsec-signing-key",
		"PGRELAY_SNAPSHOT":       "bogus",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	_ = cfg.Validate(needSource)
	var logBuf bytes.Buffer
	log := newLogger(&logBuf, "text", "info", newRedactor(os.LookupEnv, cfg))
	log.Warn("webhook delivery failed", "error", errString(`Post "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX": EOF`),
		"note", "secret whsec-signing-key, password b0t-pass, token XXXXXXXXXXXXXXXXXXXXXXXX")
	for _, leak := range []string{"XXXXXXXXXXXXXXXXXXXXXXXX", "whsec-signing-key", "b0t-pass", "hunter22"} {
		if strings.Contains(logBuf.String(), leak) {
			t.Errorf("log leaks %q: %s", leak, logBuf.String())
		}
	}

	var stdout, stderr bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if code := run(context.Background(), []string{"tail"}, lookup, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d", code)
	}
	for _, leak := range []string{"XXXXXXXXXXXXXXXXXXXXXXXX", "whsec-signing-key", "b0t-pass", "hunter22"} {
		if strings.Contains(stderr.String(), leak) {
			t.Errorf("stderr leaks %q: %s", leak, stderr.String())
		}
	}
}

// A webhook URL without credentials hides nothing: log lines naming the same
// host, a port or a word of its path stay readable (the whole URL taken for
// a secret hid every four bytes of it, "127." and "pgre" included, wherever
// they appeared).
func TestWebhookURLLeavesLogsReadable(t *testing.T) {
	clearEnv(t)
	t.Setenv("PGRELAY_SOURCE_URL", "postgres://u:hunter22@h/db")
	t.Setenv("PGRELAY_WEBHOOK_URL", "http://127.0.0.1:9000/hooks/pgrelay")
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(needSource); err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	log := newLogger(&logBuf, "text", "info", newRedactor(os.LookupEnv, cfg))
	log.Info("serving /metrics and /healthz", "addr", "127.0.0.1:9187", "gid", "pgrelay_slot_7", "hooks", "http://127.0.0.1:9000/hooks/x")
	for _, want := range []string{"addr=127.0.0.1:9187", "gid=pgrelay_slot_7", "hooks=http://127.0.0.1:9000/hooks/x"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("log lacks %q: %s", want, logBuf.String())
		}
	}
}

// A webhook URL that does not parse (a bad host or port, a bad escape, a
// password pasted with its '/') is one readable line, exit 2, without its
// credentials: taken whole for a secret, its "http" and "://" were hidden in
// the message saying what is expected ("expected an xxxxx or xxxxxs:// URL").
func TestWebhookURLUnparsableReadable(t *testing.T) {
	const want = "pgrelay: PGRELAY_WEBHOOK_URL entry 1: expected an http:// or https:// URL with a host, e.g. https://hooks.example.com/pgrelay\n"
	for _, hook := range []string{
		"http://u:Sekr1tPw@[::1",
		"http://u:Sekr1tPw@h:abc/",
		"https://u:Sek/r1tPw@h/x",
		"http://h/%zz?token=Sekr1tPw",
		"http://h/Sekr1tPwSekr1tPw%zz",
	} {
		clearEnv(t)
		env := map[string]string{
			"PGRELAY_SOURCE_URL":  "postgres://u@h/db",
			"PGRELAY_WEBHOOK_URL": hook,
		}
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		for k, v := range env {
			t.Setenv(k, v)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"tail"}, lookup, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", hook, code, exitUsage)
		}
		if stderr.String() != want {
			t.Errorf("%q: stderr\n%q, want\n%q", hook, stderr.String(), want)
		}
		if strings.Contains(stderr.String(), "Sekr") {
			t.Errorf("%q: stderr shows the password: %s", hook, stderr.String())
		}
	}
}
