package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/redact"
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
func envName(key string) string { return envPrefix + "_" + strings.ToUpper(key) }

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

// newViper builds the viper instance pgrelay reads its settings from: the
// PGRELAY_* environment over the file named by PGRELAY_CONFIG over the defaults.
func newViper(lookupEnv func(string) (string, bool)) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.AutomaticEnv()
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
	}
	path, ok := lookupEnv(envPrefix + "_CONFIG")
	if !ok || path == "" {
		return v, nil
	}
	file, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	if err := v.MergeConfigMap(file); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return v, nil
}

// readConfigFile reads a yaml, toml, json or env file into a map of known
// settings. Keys may be written as in the environment (PGRELAY_SOURCE_URL) or
// without the prefix (source_url), in any case.
func readConfigFile(path string) (map[string]any, error) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	switch ext {
	case "yaml", "yml", "toml", "json", "env", "dotenv":
	default:
		return nil, fmt.Errorf("PGRELAY_CONFIG=%q: expected a file ending in .yaml, .yml, .toml, .json or .env", path)
	}
	f := viper.New()
	f.SetConfigFile(path)
	f.SetConfigType(ext)
	if err := f.ReadInConfig(); err != nil {
		var notFound viper.ConfigFileNotFoundError
		if errors.As(err, &notFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("PGRELAY_CONFIG=%q: file not found", path)
		}
		return nil, fmt.Errorf("PGRELAY_CONFIG=%q: %w", path, err)
	}
	out := make(map[string]any)
	var errs []error
	bad := map[string]bool{} // keys already reported
	report := func(k string, val any) {
		if !bad[k] {
			bad[k] = true
			errs = append(errs, fileTypeError(path, k, val))
		}
	}
	// A map holds no keys viper lists (publication: {}) or only nested ones
	// (log_level.x): each setting is looked up by its own name too.
	for _, s := range settings {
		for _, k := range []string{s.key, strings.ToLower(envPrefix) + "_" + s.key} {
			if m, ok := f.Get(k).(map[string]any); ok && f.InConfig(k) {
				report(k, m)
			}
		}
	}
	for _, k := range f.AllKeys() {
		top, _, nested := strings.Cut(k, ".")
		key := strings.TrimPrefix(strings.ToLower(top), strings.ToLower(envPrefix)+"_")
		switch {
		case isSetting(key) && nested:
			report(top, f.Get(top))
		case !isSetting(key):
			return nil, fmt.Errorf("config file %s has unknown setting %q; known settings are %s", path, k, knownSettings())
		case !fileValueFits(key, f.Get(k)):
			report(k, f.Get(k))
		default:
			out[key] = f.Get(k)
		}
	}
	switch len(errs) {
	case 0:
		return out, nil
	case 1:
		return nil, errs[0]
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return nil, settingErrors(errs)
}

// settingKind is the kind of value a setting takes in a config file.
type settingKind int

const (
	textSetting     settingKind = iota // a string
	listSetting                        // a comma list, or a list of strings
	boolSetting                        // true or false, also as a string, 1 or 0
	numberSetting                      // a whole number, also as a string
	durationSetting                    // a duration string (0 also as a number)
)

// setting is one setting pgrelay reads: its default ("" = none), the kind
// of value it takes in a config file and what it expects, for an error.
type setting struct {
	key, def string
	kind     settingKind
	expects  string
}

// settings is the single list of what pgrelay reads: a config file key
// outside it is an error.
var settings = []setting{
	{keySourceURL, "", textSetting, "the source PostgreSQL URL or key=value settings, e.g. postgres://user@host:5432/db"},
	{keyTargetURL, "", textSetting, "the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db"},
	{keySlot, "pgrelay", textSetting, "a slot name of 1 to 63 characters from a-z, 0-9 and _"},
	{keyPublication, "pgrelay", textSetting, "a publication name of 1 to 63 characters from a-z, 0-9 and _"},
	{keyTables, "", listSetting, "schema.table names, as a comma list or a list of strings"},
	{keySnapshot, "auto", textSetting, "auto, always or never"},
	{keyTwoPhase, "auto", textSetting, "auto, on or off"},
	{keyStreaming, "auto", textSetting, "auto, on, off or parallel"},
	{keyLogFormat, "text", textSetting, "text or json"},
	{keyLogLevel, "info", textSetting, "debug, info, warn or error"},
	{keyMetricsAddr, "", textSetting, "host:port, e.g. 127.0.0.1:9187 or :9187"},
	{keyStatusInterval, "10s", durationSetting, "a duration between 100ms and 1h, e.g. 10s"},
	{keyTailBinary, "false", boolSetting, "true or false"},
	{keyCopyWorkers, "0", numberSetting, "a number of workers from 0 (one per CPU) to 256"},
	{keyKeepOrder, "false", boolSetting, "true or false"},
	{keyVerifyChunk, "0", numberSetting, "a number of rows per chunk from 1 to 10000000, or 0 to choose per table"},
	{keyVerifyWait, "30s", durationSetting, "a duration from 0s (no waiting) to 1h, e.g. 30s"},
	{keySpillDir, "", textSetting, "a directory path"},
	{keyPubCheck, "1m", durationSetting, "a duration from 1s to 24h, e.g. 1m, or 0s to check only at start"},
	{keyMySQLUnfit, "error", textSetting, "error or null"},
	{keyWebhookURL, "", listSetting, "http(s) URLs, as a comma list or a list of strings"},
	{keyWebhookSecret, "", textSetting, "the HMAC key the webhook signature is made with"},
	{keyWebhookFormat, "json", textSetting, "json or slack"},
	{keyWebhookRepeat, "10m", durationSetting, "a duration from 10s to 24h, e.g. 10m"},
	{keyLagAlert, "", numberSetting, "a size such as 1GB or a duration such as 5m"},
	{keySlotWALAlert, "80%", numberSetting, "a share of max_slot_wal_keep_size such as 80% or a size such as 10GB"},
	{keyPreparedAlert, "10m", durationSetting, "a duration, e.g. 10m"},
	{keySchema, "all", textSetting, "all or tables"},
	{keySchemaGrants, "false", boolSetting, "true or false"},
}

// settingIndex is key's place in settings, the order Validate reports bad
// settings in.
func settingIndex(key string) int {
	return slices.IndexFunc(settings, func(s setting) bool { return s.key == key })
}

// settingOf is the setting key (lower case, without the prefix); ok is false
// when pgrelay reads no such setting.
func settingOf(key string) (s setting, ok bool) {
	i := settingIndex(key)
	if i < 0 {
		return setting{kind: textSetting, expects: "a string"}, false
	}
	return settings[i], true
}

// fileValueFits tells whether a config file's value val can be read as
// setting key: a value of another kind would otherwise be read as empty, and
// the setting silently take its default.
func fileValueFits(key string, val any) bool {
	st, _ := settingOf(key)
	kind := st.kind
	switch v := val.(type) {
	case string:
		return true
	case bool:
		return kind == boolSetting
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return kind == boolSetting || kind == numberSetting || kind == durationSetting
	case []any:
		return kind == listSetting && !slices.ContainsFunc(v, func(e any) bool { _, ok := e.(string); return !ok })
	case []string:
		return kind == listSetting
	}
	return false // null, a map, a date
}

// fileTypeError is the error of config file path's value val for key (as
// written there): what the setting expects and what it got, never the
// value itself beyond a boolean or a number (a URL's password).
func fileTypeError(path, key string, val any) error {
	name := strings.TrimPrefix(strings.ToLower(key), strings.ToLower(envPrefix)+"_")
	if name != strings.ToLower(key) {
		key = envName(name) // viper folds the case: PGRELAY_SLOT is read as pgrelay_slot
	}
	st, _ := settingOf(name)
	expects := st.expects
	var got string
	switch v := val.(type) {
	case nil:
		return fmt.Errorf("config file %s: %s has no value (null): set it to %s, or leave it out for the default", path, key, expects)
	case bool:
		got = fmt.Sprintf("a boolean (%t)", v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		got = fmt.Sprintf("a number (%v)", v)
		if st.kind == textSetting {
			got += "; put it in quotes if it is meant as text"
		}
	case []any, []string:
		got = "a list"
		if st.kind == listSetting {
			got = "a list with an entry that is not a string"
		}
	case map[string]any:
		got = "a map"
	default:
		got = "a value of another kind"
		if t := fmt.Sprintf("%T", v); strings.Contains(t, "Date") || strings.Contains(t, "Time") {
			got = "a date or time"
		}
	}
	return fmt.Errorf("config file %s: %s: expected %s, got %s", path, key, expects, got)
}

// scriptVariables are PGRELAY_* variables of the project's scripts and tests
// (Makefile, scripts/, integration/), not settings of the binary.
var scriptVariables = []string{"PGRELAY_CACHE", "PGRELAY_TEST_", "PGRELAY_E2E_", "PGRELAY_BENCH_"}

// unknownSettings lists the PGRELAY_* variables of environ that are not
// settings (nor PGRELAY_CONFIG, nor the scripts' own), in order.
func unknownSettings(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix+"_") || name == envPrefix+"_CONFIG" ||
			slices.ContainsFunc(scriptVariables, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		// The environment is read in upper case only: PGRELAY_slot is no setting.
		if key := strings.ToLower(strings.TrimPrefix(name, envPrefix+"_")); !isSetting(key) || envName(key) != name {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isSetting reports whether key (lower case, without the prefix) is a setting.
func isSetting(key string) bool {
	_, ok := settingOf(key)
	return ok
}

func knownSettings() string {
	names := make([]string, len(settings))
	for i, s := range settings {
		names[i] = s.key
	}
	return strings.Join(names, ", ")
}

// loadConfig reads the settings into a Config (not yet validated).
func loadConfig(lookupEnv func(string) (string, bool)) (*Config, error) {
	v, err := newViper(lookupEnv)
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
			*field = defaultOf(key)
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
	if err := oneOf(keyLogFormat, c.LogFormat, "text", "json"); err != nil {
		errs = add(errs, keyLogFormat, err)
	}
	if err := oneOf(keyLogLevel, c.LogLevel, "debug", "info", "warn", "error"); err != nil {
		errs = add(errs, keyLogLevel, err)
	}
	if err := oneOf(keyMySQLUnfit, c.MySQLUnfit, "error", "null"); err != nil {
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
	if c.TailBinary, err = parseBool(keyTailBinary, c.rawTailBinary); err != nil {
		errs = add(errs, keyTailBinary, err)
	}
	if c.KeepOrder, err = parseBool(keyKeepOrder, c.rawKeepOrder); err != nil {
		errs = add(errs, keyKeepOrder, err)
	}
	if c.SchemaGrants, err = parseBool(keySchemaGrants, c.rawSchemaGrants); err != nil {
		errs = add(errs, keySchemaGrants, err)
	}
	duration := func(key, raw string) time.Duration {
		d, err := time.ParseDuration(orDefault(raw, key))
		if err != nil {
			return -1
		}
		return d
	}
	number := func(key, raw string) int64 {
		i, err := strconv.ParseInt(orDefault(raw, key), 10, 64)
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
		return settingIndex(a.key) - settingIndex(b.key)
	})
	out := make(settingErrors, len(errs))
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

// settingErrors are several bad settings, reported on one line.
type settingErrors []error

func (e settingErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e settingErrors) Unwrap() []error { return e }

// parseBool reads the boolean setting key from raw, its default when empty.
func parseBool(key, raw string) (bool, error) {
	b, err := strconv.ParseBool(orDefault(raw, key))
	if err != nil {
		return false, fmt.Errorf("%s=%q: expected true or false", envName(key), raw)
	}
	return b, nil
}

// orDefault is raw without surrounding spaces, or key's default when that is empty.
func orDefault(raw, key string) string {
	if v := strings.TrimSpace(raw); v != "" {
		return v
	}
	return defaultOf(key)
}

func defaultOf(key string) string {
	s, _ := settingOf(key)
	return s.def
}

// oneOf checks that val is one of allowed, naming the variable otherwise.
func oneOf(key, val string, allowed ...string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	list := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	return fmt.Errorf("%s=%q: expected %s", envName(key), val, list)
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
