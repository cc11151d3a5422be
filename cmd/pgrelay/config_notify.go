package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/source"
)

// Settings of the operator events (docs/operations-webhooks.md).
const (
	keyWebhookURL    = "webhook_url"
	keyWebhookSecret = "webhook_secret"
	keyWebhookFormat = "webhook_format"
	keyWebhookRepeat = "webhook_repeat"
	keyLagAlert      = "lag_alert"
	keySlotWALAlert  = "slot_wal_alert"
	keyPreparedAlert = "prepared_alert"
)

// notifySettings are the webhook and alert settings, checked by validate.
type notifySettings struct {
	// WebhookURLs each get every event (PGRELAY_WEBHOOK_URL, comma-separated).
	WebhookURLs []string
	// WebhookSecret signs the bodies (PGRELAY_WEBHOOK_SECRET). A secret: never printed.
	WebhookSecret string
	// WebhookFormat is json or slack (PGRELAY_WEBHOOK_FORMAT).
	WebhookFormat string
	// WebhookRepeat is how often a lasting condition (retrying, slot at risk)
	// is sent again (PGRELAY_WEBHOOK_REPEAT).
	WebhookRepeat time.Duration
	// LagAlert is the lag past which lag.high is sent (PGRELAY_LAG_ALERT).
	LagAlert notify.LagAlert
	// SlotWALAlert is the retained WAL past which the slot is at risk
	// (PGRELAY_SLOT_WAL_ALERT).
	SlotWALAlert source.WALAlert
	// PreparedAlert is how long a prepared transaction may be held on the
	// target before prepared.waiting is sent (PGRELAY_PREPARED_ALERT; 0 = never).
	PreparedAlert time.Duration

	rawURLs, rawRepeat, rawLagAlert, rawSlotWALAlert, rawPreparedAlert string
	urlsErr                                                            error
}

// loadNotifySettings reads the settings from v, unchecked.
func loadNotifySettings(v *viper.Viper) notifySettings {
	s := notifySettings{
		WebhookSecret:    v.GetString(keyWebhookSecret),
		WebhookFormat:    v.GetString(keyWebhookFormat),
		rawRepeat:        v.GetString(keyWebhookRepeat),
		rawLagAlert:      v.GetString(keyLagAlert),
		rawSlotWALAlert:  v.GetString(keySlotWALAlert),
		rawPreparedAlert: v.GetString(keyPreparedAlert),
	}
	// A config file may give a list; the environment a comma-separated string.
	switch x := v.Get(keyWebhookURL).(type) {
	case nil:
	case string:
		s.WebhookURLs = strings.Split(x, ",")
	case []any:
		for _, e := range x {
			u, ok := e.(string)
			if !ok {
				s.urlsErr = fmt.Errorf("%s entry %v: expected a URL string", envName(keyWebhookURL), e)
				break
			}
			s.WebhookURLs = append(s.WebhookURLs, u)
		}
	default:
		s.urlsErr = fmt.Errorf("%s: expected a comma-separated list of URLs", envName(keyWebhookURL))
	}
	var urls []string
	for _, u := range s.WebhookURLs {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	s.WebhookURLs = urls
	return s
}

// validate applies the defaults and returns every problem, each one line
// naming the variable. A webhook URL is shown as scheme://host/…, never whole:
// it may carry a token.
func (s *notifySettings) validate() []error {
	var errs []error
	if s.urlsErr != nil {
		errs = append(errs, s.urlsErr)
	}
	for i, u := range s.WebhookURLs {
		if notify.CheckURL(u) != nil {
			shown := ""
			if r := notify.RedactURL(u); !strings.HasPrefix(r, "(") {
				shown = " (" + r + ")"
			}
			errs = append(errs, fmt.Errorf("%s entry %d%s: expected an http:// or https:// URL with a host, e.g. https://hooks.example.com/pgrelay", envName(keyWebhookURL), i+1, shown))
		}
	}
	s.WebhookFormat = strings.ToLower(strings.TrimSpace(s.WebhookFormat))
	if s.WebhookFormat == "" {
		s.WebhookFormat = defaultOf(keyWebhookFormat)
	}
	if err := oneOf(keyWebhookFormat, s.WebhookFormat, "json", "slack"); err != nil {
		errs = append(errs, err)
	}
	d, err := time.ParseDuration(orDefault(s.rawRepeat, keyWebhookRepeat))
	if err != nil || d < 10*time.Second || d > 24*time.Hour {
		errs = append(errs, fmt.Errorf("%s=%q: expected a duration from 10s to 24h, e.g. 10m", envName(keyWebhookRepeat), s.rawRepeat))
	}
	s.WebhookRepeat = d
	if s.LagAlert, err = notify.ParseLagAlert(s.rawLagAlert); err != nil {
		errs = append(errs, fmt.Errorf("%s=%q: expected a lag in bytes (e.g. 1GB) or a duration (e.g. 5m), or 0 for no alert", envName(keyLagAlert), s.rawLagAlert))
	}
	if s.SlotWALAlert, err = source.ParseWALAlert(orDefault(s.rawSlotWALAlert, keySlotWALAlert)); err != nil {
		errs = append(errs, fmt.Errorf("%s=%q: expected a share of the source's max_slot_wal_keep_size (e.g. 80%%), a size of retained WAL (e.g. 50GB), or 0 for no alert", envName(keySlotWALAlert), s.rawSlotWALAlert))
	}
	d, err = time.ParseDuration(orDefault(s.rawPreparedAlert, keyPreparedAlert))
	if err != nil || d < 0 || d > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s=%q: expected a duration up to 168h, e.g. 10m, or 0s for no alert", envName(keyPreparedAlert), s.rawPreparedAlert))
	}
	s.PreparedAlert = d
	return errs
}

// secrets are the strings no output may show: the connection strings'
// passwords, the webhook secret, and what of each webhook URL may be a
// credential.
func (c *Config) secrets() []string {
	out := []string{c.Notify.WebhookSecret}
	for _, u := range c.Notify.WebhookURLs {
		out = append(out, notify.URLSecrets(u)...)
	}
	return out
}

// notifyConfig is the notifier's configuration for a validated Config.
func (c *Config) notifyConfig() notify.Config {
	return notify.Config{
		URLs:          c.Notify.WebhookURLs,
		Secret:        c.Notify.WebhookSecret,
		Format:        notify.Format(c.Notify.WebhookFormat),
		Slot:          c.Slot,
		SourceURL:     c.SourceURL,
		TargetURL:     c.TargetURL,
		Repeat:        c.Notify.WebhookRepeat,
		LagAlert:      c.Notify.LagAlert,
		PreparedAlert: c.Notify.PreparedAlert,
	}
}
