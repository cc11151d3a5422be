package main

import (
	"bufio"
	"io"
	"os"
	"strings"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/internal/redact"
)

// redactURL returns the connection string s (any form) with its secrets
// masked, for quoting in a message.
func redactURL(s string) string { return redact.ConnString(s) }

// newRedactor returns the redaction of everything pgrelay prints (errors,
// log lines): the secrets of the source and target URLs, pieces included,
// and the passwords pgx takes from the environment. Without a configuration
// (cfg nil: the config file could not be read) they are taken from the
// environment's URLs and from every line of the config file.
func newRedactor(lookupEnv func(string) (string, bool), cfg *Config) *redact.Redactor {
	var conns, secrets []string
	if cfg != nil {
		conns = append(conns, cfg.SourceURL, cfg.TargetURL)
		secrets = append(secrets, cfg.Notify.Secrets()...)
	} else {
		for _, k := range []string{keySourceURL, keyTargetURL} {
			if v, ok := lookupEnv(envName(k)); ok {
				conns = append(conns, v)
			}
		}
		if v, ok := lookupEnv(envName(keyWebhookSecret)); ok {
			secrets = append(secrets, v)
		}
		if v, ok := lookupEnv(envName(keyWebhookURL)); ok {
			for _, u := range strings.Split(v, ",") {
				secrets = append(secrets, notify.URLSecrets(strings.TrimSpace(u))...)
			}
		}
		if path, ok := lookupEnv(envPrefix + "_CONFIG"); ok && path != "" {
			conns = append(conns, fileLines(path)...)
		}
	}
	for _, k := range []string{"PGPASSWORD", "PGSSLPASSWORD"} {
		if v, ok := lookupEnv(k); ok {
			secrets = append(secrets, v)
		}
	}
	return redact.New(conns...).With(secrets...)
}

// fileLines reads the lines of the file at path (its first MiB), or none.
func fileLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
