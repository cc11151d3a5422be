package main

import (
	"fmt"
	"strings"

	"github.com/spf13/viper"

	"github.com/pgrelay/pgrelay/apply/notify"
)

// Settings of the operator events (docs/operations-webhooks.md), checked by
// notify.Settings.Validate.
const (
	keyWebhookURL    = "webhook_url"
	keyWebhookSecret = "webhook_secret"
	keyWebhookFormat = "webhook_format"
	keyWebhookRepeat = "webhook_repeat"
	keyLagAlert      = "lag_alert"
	keySlotWALAlert  = "slot_wal_alert"
	keyPreparedAlert = "prepared_alert"
)

// loadNotifySettings reads the settings from v, unchecked, but for a webhook
// URL list of the wrong form.
func loadNotifySettings(v *viper.Viper) (s notify.Settings, err error) {
	s = notify.Settings{
		WebhookSecret:    v.GetString(keyWebhookSecret),
		WebhookFormat:    v.GetString(keyWebhookFormat),
		RawRepeat:        v.GetString(keyWebhookRepeat),
		RawLagAlert:      v.GetString(keyLagAlert),
		RawSlotWALAlert:  v.GetString(keySlotWALAlert),
		RawPreparedAlert: v.GetString(keyPreparedAlert),
	}
	// A config file may give a list; the environment a comma-separated string.
	var urls []string
	switch x := v.Get(keyWebhookURL).(type) {
	case nil:
	case string:
		urls = strings.Split(x, ",")
	case []any:
		for _, e := range x {
			u, ok := e.(string)
			if !ok {
				return s, fmt.Errorf("%s entry %v: expected a URL string", envName(keyWebhookURL), e)
			}
			urls = append(urls, u)
		}
	default:
		return s, fmt.Errorf("%s: expected a comma-separated list of URLs", envName(keyWebhookURL))
	}
	for _, u := range urls {
		if u = strings.TrimSpace(u); u != "" {
			s.WebhookURLs = append(s.WebhookURLs, u)
		}
	}
	return s, nil
}
