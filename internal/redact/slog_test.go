package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestHandler: the message and every kind of attribute (string, error,
// Stringer, group, a list, WithAttrs) lose the secret, and keep the rest.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	r := New("postgres://u:hunter22@h/db")
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil), r)).With("conn", "postgres://u:hunter22@h/db")
	log.Info("password hunter22 rejected",
		"err", errors.New("auth hunter22"),
		slog.Group("g", "inner", "hunter22"),
		"list", []string{"a", "hunter22"},
		"n", 42)
	out := buf.String()
	if strings.Contains(out, "hunter22") {
		t.Fatalf("the log shows the secret: %s", out)
	}
	for _, want := range []string{"rejected", "auth", "g.inner=", "n=42"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lost %q: %s", want, out)
		}
	}
}
