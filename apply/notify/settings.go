package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/source"
)

// Settings are the webhook and alert settings (docs/operations-webhooks.md):
// cmd/pgrelay fills the URLs, the secret, the format and the Raw texts;
// Validate reads the rest.
type Settings struct {
	// WebhookURLs each get every event (PGRELAY_WEBHOOK_URL).
	WebhookURLs []string
	// WebhookSecret signs the bodies (PGRELAY_WEBHOOK_SECRET). A secret: never printed.
	WebhookSecret string
	// WebhookFormat is json (default) or slack (PGRELAY_WEBHOOK_FORMAT).
	WebhookFormat string
	// WebhookRepeat is how often a lasting condition (retrying, slot at risk)
	// is sent again (PGRELAY_WEBHOOK_REPEAT; default 10m).
	WebhookRepeat time.Duration
	// LagAlert is the lag past which lag.high is sent (PGRELAY_LAG_ALERT;
	// default none).
	LagAlert LagAlert
	// SlotWALAlert is the retained WAL past which the slot is at risk
	// (PGRELAY_SLOT_WAL_ALERT; default 80%).
	SlotWALAlert source.WALAlert
	// PreparedAlert is how long a prepared transaction may be held on the
	// target before prepared.waiting is sent (PGRELAY_PREPARED_ALERT;
	// default 10m; 0 = never).
	PreparedAlert time.Duration

	// The text of the settings Validate parses, as written ("": default).
	RawRepeat, RawLagAlert, RawSlotWALAlert, RawPreparedAlert string
}

// Validate applies the defaults and returns every problem, each one line
// naming the setting as name calls it ("webhook_url", …). A webhook URL is
// shown as scheme://host/…, never whole: it may carry a token.
func (s *Settings) Validate(name func(setting string) string) []error {
	var errs []error
	bad := func(setting, raw, expected string) {
		errs = append(errs, fmt.Errorf("%s=%q: expected %s", name(setting), raw, expected))
	}
	for i, u := range s.WebhookURLs {
		if CheckURL(u) != nil {
			shown := ""
			if r := RedactURL(u); !strings.HasPrefix(r, "(") {
				shown = " (" + r + ")"
			}
			errs = append(errs, fmt.Errorf("%s entry %d%s: expected an http:// or https:// URL with a host, e.g. https://hooks.example.com/pgrelay", name("webhook_url"), i+1, shown))
		}
	}
	s.WebhookFormat = strings.ToLower(strings.TrimSpace(s.WebhookFormat))
	if s.WebhookFormat == "" {
		s.WebhookFormat = string(FormatJSON)
	}
	if s.WebhookFormat != string(FormatJSON) && s.WebhookFormat != string(FormatSlack) {
		bad("webhook_format", s.WebhookFormat, "json or slack")
	}
	d, err := time.ParseDuration(orDefault(s.RawRepeat, "10m"))
	if err != nil || d < 10*time.Second || d > 24*time.Hour {
		bad("webhook_repeat", s.RawRepeat, "a duration from 10s to 24h, e.g. 10m")
	}
	s.WebhookRepeat = d
	if s.LagAlert, err = ParseLagAlert(s.RawLagAlert); err != nil {
		bad("lag_alert", s.RawLagAlert, "a lag in bytes (e.g. 1GB) or a duration (e.g. 5m), or 0 for no alert")
	}
	if s.SlotWALAlert, err = source.ParseWALAlert(orDefault(s.RawSlotWALAlert, "80%")); err != nil {
		bad("slot_wal_alert", s.RawSlotWALAlert, "a share of the source's max_slot_wal_keep_size (e.g. 80%), a size of retained WAL (e.g. 50GB), or 0 for no alert")
	}
	d, err = time.ParseDuration(orDefault(s.RawPreparedAlert, "10m"))
	if err != nil || d < 0 || d > 7*24*time.Hour {
		bad("prepared_alert", s.RawPreparedAlert, "a duration up to 168h, e.g. 10m, or 0s for no alert")
	}
	s.PreparedAlert = d
	return errs
}

func orDefault(raw, def string) string {
	if v := strings.TrimSpace(raw); v != "" {
		return v
	}
	return def
}

// Secrets are what of the settings no output may show: the webhook secret,
// and what of each webhook URL may be a credential.
func (s *Settings) Secrets() []string {
	out := []string{s.WebhookSecret}
	for _, u := range s.WebhookURLs {
		out = append(out, URLSecrets(u)...)
	}
	return out
}

// Config is the notifier's configuration for validated settings, the slot
// and the connection strings of its events.
func (s *Settings) Config(slot, sourceURL, targetURL string) Config {
	return Config{
		URLs: s.WebhookURLs, Secret: s.WebhookSecret, Format: Format(s.WebhookFormat),
		Slot: slot, SourceURL: sourceURL, TargetURL: targetURL,
		Repeat: s.WebhookRepeat, LagAlert: s.LagAlert, PreparedAlert: s.PreparedAlert,
	}
}
