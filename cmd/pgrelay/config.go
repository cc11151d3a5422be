package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/internal/settings"
	"github.com/pgrelay/pgrelay/source"
)

// envPrefix is the prefix of every environment variable pgrelay reads.
const envPrefix = "PGRELAY"

// Setting keys, as viper sees them (lower case, no prefix). The environment
// variable of key k is PGRELAY_<K>.
const (
	keySourceURL      = "source_url"
	keyTargetURL      = "target_url"
	keySlot           = "slot"
	keyPublication    = "publication"
	keyTables         = "tables"
	keySnapshot       = "snapshot"
	keyTwoPhase       = "two_phase"
	keyStreaming      = "streaming"
	keyLogFormat      = "log_format"
	keyLogLevel       = "log_level"
	keyMetricsAddr    = "metrics_addr"
	keyStatusInterval = "status_interval"
	keyTailBinary     = "tail_binary"
	keyCopyWorkers    = "copy_workers"
	keyKeepOrder      = "keep_order"
	keyVerifyChunk    = "verify_chunk_rows"
	keyVerifyWait     = "verify_wait"
	keySpillDir       = "spill_dir"
	keyPubCheck       = "publication_check_interval"
	keyMySQLUnfit     = "mysql_unfit"
	keySchema         = "schema"
	keySchemaGrants   = "schema_grants"
)

// envName is the environment variable that sets key.
func envName(key string) string { return conf.EnvName(key) }

// Config is pgrelay's configuration, filled from the environment and an optional
// config file: the relay's (apply/relay), and what cmd uses itself. Validate
// checks it and applies defaults to empty fields.
type Config struct {
	relay.Config
	TargetURL   string
	LogFormat   string // text, json
	LogLevel    string // debug, info, warn, error
	MetricsAddr string // host:port, empty = off
	// KeepOrder applies each target transaction's changes in source order
	// instead of table by table (PGRELAY_KEEP_ORDER), a sink option.
	KeepOrder bool
	// MySQLUnfit is what a MySQL target does with a value its column cannot
	// hold (NaN, an infinite date, …): "error" stops apply naming it, "null"
	// stores NULL, logged and counted (PGRELAY_MYSQL_UNFIT), a sink option.
	MySQLUnfit string
	// Notify holds the webhook and alert settings (config_notify.go).
	Notify notify.Settings

	// raw holds the setting strings that need parsing, so Validate can quote the
	// value the user wrote.
	rawStatusInterval string
	rawTailBinary     string
	rawCopyWorkers    string
	rawKeepOrder      string
	rawVerifyChunk    string
	rawVerifyWait     string
	rawPubCheck       string
	rawSchemaGrants   string
}

// need says which settings a command requires to be present.
type need uint8

const (
	needSource need = 1 << iota // PGRELAY_SOURCE_URL
	needTarget                  // PGRELAY_TARGET_URL
)

// conf is what pgrelay reads: the environment over the file named by
// PGRELAY_CONFIG over the defaults (internal/settings).
var conf = &settings.Set{Prefix: envPrefix, List: settingList,
	// Variables of the project's scripts and tests (Makefile, scripts/,
	// integration/), not settings of the binary.
	NotSettings: []string{"PGRELAY_CACHE", "PGRELAY_TEST_", "PGRELAY_E2E_", "PGRELAY_BENCH_"}}

// settingList is the single list of what pgrelay reads: a config file key
// outside it is an error.
var settingList = []settings.Setting{
	setting(keySourceURL, "", settings.Text, "the source PostgreSQL URL or key=value settings, e.g. postgres://user@host:5432/db"),
	setting(keyTargetURL, "", settings.Text, "the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db"),
	setting(keySlot, "pgrelay", settings.Text, "a slot name of 1 to 63 characters from a-z, 0-9 and _"),
	setting(keyPublication, "pgrelay", settings.Text, "a publication name of 1 to 63 characters from a-z, 0-9 and _"),
	setting(keyTables, "", settings.List, "schema.table names, as a comma list or a list of strings"),
	setting(keySnapshot, "auto", settings.Text, "auto, always or never"),
	setting(keyTwoPhase, "auto", settings.Text, "auto, on or off"),
	setting(keyStreaming, "auto", settings.Text, "auto, on, off or parallel"),
	setting(keyLogFormat, "text", settings.Text, "text or json"),
	setting(keyLogLevel, "info", settings.Text, "debug, info, warn or error"),
	setting(keyMetricsAddr, "", settings.Text, "host:port, e.g. 127.0.0.1:9187 or :9187"),
	setting(keyStatusInterval, "10s", settings.Duration, "a duration between 100ms and 1h, e.g. 10s"),
	setting(keyTailBinary, "false", settings.Bool, "true or false"),
	setting(keyCopyWorkers, "0", settings.Number, "a number of workers from 0 (one per CPU) to 256"),
	setting(keyKeepOrder, "false", settings.Bool, "true or false"),
	setting(keyVerifyChunk, "0", settings.Number, "a number of rows per chunk from 1 to 10000000, or 0 to choose per table"),
	setting(keyVerifyWait, "30s", settings.Duration, "a duration from 0s (no waiting) to 1h, e.g. 30s"),
	setting(keySpillDir, "", settings.Text, "a directory path"),
	setting(keyPubCheck, "1m", settings.Duration, "a duration from 1s to 24h, e.g. 1m, or 0s to check only at start"),
	setting(keyMySQLUnfit, "error", settings.Text, "error or null"),
	setting(keyWebhookURL, "", settings.List, "http(s) URLs, as a comma list or a list of strings"),
	setting(keyWebhookSecret, "", settings.Text, "the HMAC key the webhook signature is made with"),
	setting(keyWebhookFormat, "json", settings.Text, "json or slack"),
	setting(keyWebhookRepeat, "10m", settings.Duration, "a duration from 10s to 24h, e.g. 10m"),
	setting(keyLagAlert, "", settings.Number, "a size such as 1GB or a duration such as 5m"),
	setting(keySlotWALAlert, "80%", settings.Number, "a share of max_slot_wal_keep_size such as 80% or a size such as 10GB"),
	setting(keyPreparedAlert, "10m", settings.Duration, "a duration, e.g. 10m"),
	setting(keySchema, "all", settings.Text, "all or tables"),
	setting(keySchemaGrants, "false", settings.Bool, "true or false"),
}

// setting is one entry of settingList.
func setting(key, def string, kind settings.Kind, expects string) settings.Setting {
	return settings.Setting{Key: key, Default: def, Kind: kind, Expects: expects}
}

// loadConfig reads the settings into a Config (not yet validated).
func loadConfig(lookupEnv func(string) (string, bool)) (*Config, error) {
	v, err := conf.Viper(lookupEnv)
	if err != nil {
		return nil, err
	}
	tables, err := stringList(v.Get(keyTables))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envName(keyTables), err)
	}
	notifySettings, err := loadNotifySettings(v)
	if err != nil {
		return nil, err
	}
	return &Config{
		Config: relay.Config{
			SourceURL:   pgconnstr.SocketHostURL(strings.TrimSpace(v.GetString(keySourceURL))),
			Slot:        strings.TrimSpace(v.GetString(keySlot)),
			Publication: strings.TrimSpace(v.GetString(keyPublication)),
			Tables:      tables,
			Snapshot:    v.GetString(keySnapshot),
			TwoPhase:    v.GetString(keyTwoPhase),
			Streaming:   v.GetString(keyStreaming),
			SpillDir:    strings.TrimSpace(v.GetString(keySpillDir)),
			Schema:      v.GetString(keySchema),
		},
		TargetURL:         pgconnstr.SocketHostURL(strings.TrimSpace(v.GetString(keyTargetURL))),
		LogFormat:         v.GetString(keyLogFormat),
		LogLevel:          v.GetString(keyLogLevel),
		MetricsAddr:       strings.TrimSpace(v.GetString(keyMetricsAddr)),
		MySQLUnfit:        v.GetString(keyMySQLUnfit),
		rawStatusInterval: v.GetString(keyStatusInterval),
		rawTailBinary:     v.GetString(keyTailBinary),
		rawCopyWorkers:    v.GetString(keyCopyWorkers),
		rawKeepOrder:      v.GetString(keyKeepOrder),
		rawVerifyChunk:    v.GetString(keyVerifyChunk),
		rawVerifyWait:     v.GetString(keyVerifyWait),
		rawPubCheck:       v.GetString(keyPubCheck),
		rawSchemaGrants:   v.GetString(keySchemaGrants),
		Notify:            notifySettings,
	}, nil
}

// stringList turns a comma-separated string or a config-file list into trimmed,
// non-empty entries.
func stringList(val any) ([]string, error) {
	var parts []string
	switch x := val.(type) {
	case nil:
	case string:
		parts = source.SplitTableList(x)
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("entry %v: expected a string schema.table", e)
			}
			parts = append(parts, s)
		}
	case []string:
		parts = x
	default:
		return nil, fmt.Errorf("expected a comma list of schema.table, got %v", x)
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// Validate applies defaults to empty fields and checks every setting, returning
// the problems as one line naming each variable and what is expected. The
// URLs are required only as n says; a URL that is set is always checked. The
// relay's settings are checked by relay.Config.Validate, whose setting keys
// are these; a number or duration that does not parse reaches it as -1, out
// of every range, and its error quotes what the user wrote.
func (c *Config) Validate(n need) error {
	var errs []keyedError
	def := func(field *string, key string) {
		*field = strings.ToLower(strings.TrimSpace(*field))
		if *field == "" {
			*field = conf.Default(key)
		}
	}
	def(&c.LogFormat, keyLogFormat)
	def(&c.LogLevel, keyLogLevel)
	def(&c.MySQLUnfit, keyMySQLUnfit)

	if c.SourceURL != "" {
		if err := checkSourceURL(c.SourceURL); err != nil {
			errs = add(errs, keySourceURL, err)
		}
	}
	if c.TargetURL == "" {
		if n&needTarget != 0 {
			errs = add(errs, keyTargetURL, fmt.Errorf("%s is required: set it to the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db", envName(keyTargetURL)))
		}
	} else if err := checkTargetURL(c.TargetURL); err != nil {
		errs = add(errs, keyTargetURL, err)
	}
	if err := conf.OneOf(keyLogFormat, c.LogFormat, "text", "json"); err != nil {
		errs = add(errs, keyLogFormat, err)
	}
	if err := conf.OneOf(keyLogLevel, c.LogLevel, "debug", "info", "warn", "error"); err != nil {
		errs = add(errs, keyLogLevel, err)
	}
	if err := conf.OneOf(keyMySQLUnfit, c.MySQLUnfit, "error", "null"); err != nil {
		errs = add(errs, keyMySQLUnfit, err)
	}
	if c.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(c.MetricsAddr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil || (p == 0 && port != "0") || strings.ContainsAny(host, " /") {
			errs = add(errs, keyMetricsAddr, fmt.Errorf("%s=%q: expected host:port, e.g. 127.0.0.1:9187 or :9187", envName(keyMetricsAddr), c.MetricsAddr))
		}
	}
	var err error
	if c.TailBinary, err = conf.ParseBool(keyTailBinary, c.rawTailBinary); err != nil {
		errs = add(errs, keyTailBinary, err)
	}
	if c.KeepOrder, err = conf.ParseBool(keyKeepOrder, c.rawKeepOrder); err != nil {
		errs = add(errs, keyKeepOrder, err)
	}
	if c.SchemaGrants, err = conf.ParseBool(keySchemaGrants, c.rawSchemaGrants); err != nil {
		errs = add(errs, keySchemaGrants, err)
	}
	duration := func(key, raw string) time.Duration {
		d, err := time.ParseDuration(conf.OrDefault(raw, key))
		if err != nil {
			return -1
		}
		return d
	}
	number := func(key, raw string) int64 {
		i, err := strconv.ParseInt(conf.OrDefault(raw, key), 10, 64)
		if err != nil {
			return -1
		}
		return i
	}
	c.StatusInterval = duration(keyStatusInterval, c.rawStatusInterval)
	c.CopyWorkers = int(number(keyCopyWorkers, c.rawCopyWorkers))
	c.VerifyChunkRows = number(keyVerifyChunk, c.rawVerifyChunk)
	c.VerifyWait = duration(keyVerifyWait, c.rawVerifyWait)
	c.PublicationCheck = duration(keyPubCheck, c.rawPubCheck)
	raw := map[string]string{keyStatusInterval: c.rawStatusInterval, keyCopyWorkers: c.rawCopyWorkers,
		keyVerifyChunk: c.rawVerifyChunk, keyVerifyWait: c.rawVerifyWait, keyPubCheck: c.rawPubCheck}
	var bad relay.SettingErrors
	if !errors.As(c.Config.Validate(), &bad) {
		bad = nil
	}
	for _, e := range bad {
		if e.Missing && e.Key == keySourceURL && n&needSource == 0 {
			continue
		}
		named := *e
		named.Key = envName(e.Key)
		if v, ok := raw[e.Key]; ok {
			named.Value = v
		}
		errs = add(errs, e.Key, &named)
	}
	// The webhook and alert settings' problems come last, in their order.
	for _, err := range c.Notify.Validate(envName) {
		errs = add(errs, keyWebhookURL, err)
	}
	c.SlotWALAlert, c.AlertRepeat = c.Notify.SlotWALAlert, c.Notify.WebhookRepeat
	slices.SortStableFunc(errs, func(a, b keyedError) int {
		return conf.Index(a.key) - conf.Index(b.key)
	})
	out := make(settings.Errors, len(errs))
	for i, e := range errs {
		out[i] = e.err
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

// keyedError is the error of the setting key.
type keyedError struct {
	key string
	err error
}

func add(errs []keyedError, key string, err error) []keyedError {
	return append(errs, keyedError{key, err})
}

// checkSourceURL checks that s is a libpq connection string (URL or key=value)
// pgx can use. Errors never contain the password.
func checkSourceURL(s string) error {
	name := envName(keySourceURL)
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := strings.ToLower(s[:i])
		if scheme != "postgres" && scheme != "postgresql" {
			return fmt.Errorf("%s=%q: expected a postgres:// or postgresql:// URL or key=value settings, e.g. postgres://user@host:5432/db", name, redactURL(s))
		}
		if _, err := url.Parse(s); err != nil {
			return fmt.Errorf("%s=%q is not a valid URL (%s): expected e.g. postgres://user@host:5432/db", name, redactURL(s), urlErrReason(s, err))
		}
	} else if !strings.Contains(s, "=") {
		return fmt.Errorf("%s=%q: expected a postgres:// URL or key=value settings, e.g. postgres://user@host:5432/db", name, redactURL(s))
	}
	return checkConnString(name, s, notValidConnString(name, s))
}

// checkTargetURL checks that s is a postgres:// or mysql:// URL.
func checkTargetURL(s string) error {
	name := envName(keyTargetURL)
	i := strings.Index(s, "://")
	scheme := ""
	if i >= 0 {
		scheme = strings.ToLower(s[:i])
	}
	switch scheme {
	case "postgres", "postgresql":
	case "mysql":
	case "":
		if !strings.Contains(s, "=") {
			return fmt.Errorf("%s=%q: expected a postgres:// URL or key=value settings, e.g. postgres://user@host:5432/db", name, redactURL(s))
		}
		// libpq key=value settings: a PostgreSQL target.
		return checkConnString(name, s, func(string) error {
			return fmt.Errorf("%s=%q is not a valid connection string: expected e.g. postgres://user@host:5432/db or host=h dbname=db user=u", name, redactURL(s))
		})
	default:
		return fmt.Errorf("%s=%q: expected a postgres://, postgresql:// or mysql:// URL or key=value settings, e.g. postgres://user@host:5432/db", name, redactURL(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%s=%q is not a valid URL (%s): expected e.g. %s://user@host/db", name, redactURL(s), urlErrReason(s, err), scheme)
	}
	if u.Host == "" && scheme == "mysql" {
		return fmt.Errorf("%s=%q has no host: expected mysql://user:pass@host:port/db", name, redactURL(s))
	}
	if scheme == "mysql" && strings.Trim(u.Path, "/") == "" {
		return fmt.Errorf("%s=%q has no database: expected mysql://user:pass@host:port/db", name, redactURL(s))
	}
	if scheme != "mysql" {
		return checkConnString(name, s, notValidConnString(name, s))
	}
	return nil
}

// checkConnString parses the PostgreSQL connection string s (variable name)
// once, as pgrelay will connect with it: a string pgx cannot parse is
// reported by syntax, given pgx's reason with the password scrubbed; a libpq
// setting pgrelay cannot honour by its name.
func checkConnString(name, s string, syntax func(reason string) error) error {
	reason, err := pgconnstr.Check(s)
	switch {
	case err == nil:
		return nil
	case reason == "":
		return fmt.Errorf("%s=%q: %v", name, redactURL(s), redact.New(s).Err(err))
	}
	return syntax(redact.New(s).String(reason))
}

// notValidConnString is the error of a PostgreSQL URL pgx cannot parse.
func notValidConnString(name, s string) func(reason string) error {
	return func(reason string) error {
		return fmt.Errorf("%s=%q is not a valid connection string (%s): expected e.g. postgres://user@host:5432/db", name, redactURL(s), reason)
	}
}

// urlErrReason is the reason url.Parse gave for s without the URL itself, and
// without the pieces of its secrets the reason quotes ("invalid port
// \":pa\" after host" of a password with a '/').
func urlErrReason(s string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return redact.New(s).String(ue.Err.Error())
	}
	return "malformed"
}
