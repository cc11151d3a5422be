package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/viper"

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
)

// settingDefaults lists every setting with its default ("" = none). It is the
// single list of what pgrelay reads: a config file key outside it is an error.
var settingDefaults = []struct{ key, def string }{
	{keySourceURL, ""},
	{keyTargetURL, ""},
	{keySlot, "pgrelay"},
	{keyPublication, "pgrelay"},
	{keyTables, ""},
	{keySnapshot, "auto"},
	{keyTwoPhase, "auto"},
	{keyStreaming, "auto"},
	{keyLogFormat, "text"},
	{keyLogLevel, "info"},
	{keyMetricsAddr, ""},
	{keyStatusInterval, "10s"},
	{keyTailBinary, "false"},
	{keyCopyWorkers, "0"},
	{keyKeepOrder, "false"},
	{keyVerifyChunk, "0"},
	{keyVerifyWait, "30s"},
	{keySpillDir, ""},
	{keyPubCheck, "1m"},
	{keyWebhookURL, ""},
	{keyWebhookSecret, ""},
	{keyWebhookFormat, "json"},
	{keyWebhookRepeat, "10m"},
	{keyLagAlert, ""},
	{keySlotWALAlert, "80%"},
	{keyPreparedAlert, "10m"},
}

// envName is the environment variable that sets key.
func envName(key string) string { return envPrefix + "_" + strings.ToUpper(key) }

// Config is pgrelay's configuration, filled from the environment and an optional
// config file. Validate checks it and applies defaults to empty fields.
type Config struct {
	SourceURL   string
	TargetURL   string
	Slot        string
	Publication string
	Tables      []string // schema.table entries; empty means every table
	Snapshot    string   // auto, always, never
	TwoPhase    string   // auto, on, off
	Streaming   string   // auto, on, off, parallel
	LogFormat   string   // text, json
	LogLevel    string   // debug, info, warn, error
	MetricsAddr string   // host:port, empty = off

	// StatusInterval is how often a standby status update is sent to the source
	// when nothing else prompts one (PGRELAY_STATUS_INTERVAL).
	StatusInterval time.Duration
	// TailBinary asks the source for binary column values in `pgrelay tail`
	// (PGRELAY_TAIL_BINARY).
	TailBinary bool
	// CopyWorkers is how many tables or table ranges the snapshot copies at
	// once (PGRELAY_COPY_WORKERS; 0 = the number of CPUs).
	CopyWorkers int
	// KeepOrder applies each target transaction's changes in source order
	// instead of table by table (PGRELAY_KEEP_ORDER).
	KeepOrder bool
	// VerifyChunkRows is the rows per chunk `pgrelay verify` compares
	// (PGRELAY_VERIFY_CHUNK_ROWS; 0 = chosen per table).
	VerifyChunkRows int64
	// VerifyWait bounds how long `pgrelay verify` waits, per differing chunk,
	// for a running replica to apply past the source's position
	// (PGRELAY_VERIFY_WAIT).
	VerifyWait time.Duration
	// SpillDir is where transactions larger than the memory bound are spilled
	// (PGRELAY_SPILL_DIR; empty = $TMPDIR/pgrelay-spill).
	SpillDir string
	// PublicationCheck is how often replicate compares what the publication
	// publishes of each copied table with what was copied
	// (PGRELAY_PUBLICATION_CHECK_INTERVAL; 0 = only at start).
	PublicationCheck time.Duration
	// Notify holds the webhook and alert settings (config_notify.go).
	Notify notifySettings

	// raw holds the setting strings that need parsing, so Validate can quote the
	// value the user wrote.
	rawStatusInterval string
	rawTailBinary     string
	rawCopyWorkers    string
	rawKeepOrder      string
	rawVerifyChunk    string
	rawVerifyWait     string
	rawPubCheck       string
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
	for _, s := range settingDefaults {
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
	for _, s := range settingDefaults {
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

// settingTypes says what each setting takes in a config file; a setting not
// listed takes a string.
var settingTypes = map[string]struct {
	kind    settingKind
	expects string
}{
	keySourceURL:      {textSetting, "the source PostgreSQL URL or key=value settings, e.g. postgres://user@host:5432/db"},
	keyTargetURL:      {textSetting, "the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db"},
	keySlot:           {textSetting, "a slot name of 1 to 63 characters from a-z, 0-9 and _"},
	keyPublication:    {textSetting, "a publication name of 1 to 63 characters from a-z, 0-9 and _"},
	keyTables:         {listSetting, "schema.table names, as a comma list or a list of strings"},
	keySnapshot:       {textSetting, "auto, always or never"},
	keyTwoPhase:       {textSetting, "auto, on or off"},
	keyStreaming:      {textSetting, "auto, on, off or parallel"},
	keyLogFormat:      {textSetting, "text or json"},
	keyLogLevel:       {textSetting, "debug, info, warn or error"},
	keyMetricsAddr:    {textSetting, "host:port, e.g. 127.0.0.1:9187 or :9187"},
	keyStatusInterval: {durationSetting, "a duration between 100ms and 1h, e.g. 10s"},
	keyTailBinary:     {boolSetting, "true or false"},
	keyCopyWorkers:    {numberSetting, "a number of workers from 0 (one per CPU) to 256"},
	keyKeepOrder:      {boolSetting, "true or false"},
	keyVerifyChunk:    {numberSetting, "a number of rows per chunk from 1 to 10000000, or 0 to choose per table"},
	keyVerifyWait:     {durationSetting, "a duration from 0s (no waiting) to 1h, e.g. 30s"},
	keySpillDir:       {textSetting, "a directory path"},
	keyPubCheck:       {durationSetting, "a duration from 1s to 24h, e.g. 1m, or 0s to check only at start"},
	keyWebhookURL:     {listSetting, "http(s) URLs, as a comma list or a list of strings"},
	keyWebhookSecret:  {textSetting, "the HMAC key the webhook signature is made with"},
	keyWebhookFormat:  {textSetting, "json or slack"},
	keyWebhookRepeat:  {durationSetting, "a duration from 10s to 24h, e.g. 10m"},
	keyLagAlert:       {numberSetting, "a size such as 1GB or a duration such as 5m"},
	keySlotWALAlert:   {numberSetting, "a share of max_slot_wal_keep_size such as 80% or a size such as 10GB"},
	keyPreparedAlert:  {durationSetting, "a duration, e.g. 10m"},
}

// fileValueFits tells whether a config file's value val can be read as
// setting key: a value of another kind would otherwise be read as empty, and
// the setting silently take its default.
func fileValueFits(key string, val any) bool {
	kind := settingTypes[key].kind
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
	expects := settingTypes[name].expects
	if expects == "" {
		expects = "a string"
	}
	var got string
	switch v := val.(type) {
	case nil:
		return fmt.Errorf("config file %s: %s has no value (null): set it to %s, or leave it out for the default", path, key, expects)
	case bool:
		got = fmt.Sprintf("a boolean (%t)", v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		got = fmt.Sprintf("a number (%v)", v)
		if settingTypes[name].kind == textSetting {
			got += "; put it in quotes if it is meant as text"
		}
	case []any, []string:
		got = "a list"
		if settingTypes[name].kind == listSetting {
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
// (README: The two commands), not settings of the binary.
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
	return slices.ContainsFunc(settingDefaults, func(s struct{ key, def string }) bool { return s.key == key })
}

func knownSettings() string {
	names := make([]string, len(settingDefaults))
	for i, s := range settingDefaults {
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
	return &Config{
		SourceURL:         socketHostURL(strings.TrimSpace(v.GetString(keySourceURL))),
		TargetURL:         socketHostURL(strings.TrimSpace(v.GetString(keyTargetURL))),
		Slot:              strings.TrimSpace(v.GetString(keySlot)),
		Publication:       strings.TrimSpace(v.GetString(keyPublication)),
		Tables:            tables,
		Snapshot:          v.GetString(keySnapshot),
		TwoPhase:          v.GetString(keyTwoPhase),
		Streaming:         v.GetString(keyStreaming),
		LogFormat:         v.GetString(keyLogFormat),
		LogLevel:          v.GetString(keyLogLevel),
		MetricsAddr:       strings.TrimSpace(v.GetString(keyMetricsAddr)),
		SpillDir:          strings.TrimSpace(v.GetString(keySpillDir)),
		rawStatusInterval: v.GetString(keyStatusInterval),
		rawTailBinary:     v.GetString(keyTailBinary),
		rawCopyWorkers:    v.GetString(keyCopyWorkers),
		rawKeepOrder:      v.GetString(keyKeepOrder),
		rawVerifyChunk:    v.GetString(keyVerifyChunk),
		rawVerifyWait:     v.GetString(keyVerifyWait),
		rawPubCheck:       v.GetString(keyPubCheck),
		Notify:            loadNotifySettings(v),
	}, nil
}

// stringList turns a comma-separated string or a config-file list into trimmed,
// non-empty entries.
func stringList(val any) ([]string, error) {
	var parts []string
	switch x := val.(type) {
	case nil:
	case string:
		parts = splitOutsideQuotes(x)
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

// splitOutsideQuotes splits s at the commas that are not inside a double
// quoted identifier: public."a,b",s.c is two entries.
func splitOutsideQuotes(s string) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted // "" inside quotes toggles twice: still quoted
		case ',':
			if !quoted {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// slotNameRE is what the server accepts as a slot name. Publication names
// follow the same rule: pgoutput folds publication_names to lower case, so a
// name with capitals could never be found.
var slotNameRE = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// Validate applies defaults to empty fields and checks every setting, returning
// the first problem as one line naming the variable and what is expected. The
// URLs are required only as n says; a URL that is set is always checked.
func (c *Config) Validate(n need) error {
	// Every bad setting is reported, not only the first.
	var errs []error
	def := func(field *string, key string) {
		*field = strings.ToLower(strings.TrimSpace(*field))
		if *field == "" {
			*field = defaultOf(key)
		}
	}
	def(&c.Snapshot, keySnapshot)
	def(&c.TwoPhase, keyTwoPhase)
	def(&c.Streaming, keyStreaming)
	def(&c.LogFormat, keyLogFormat)
	def(&c.LogLevel, keyLogLevel)
	if c.Slot == "" {
		c.Slot = defaultOf(keySlot)
	}
	if c.Publication == "" {
		c.Publication = defaultOf(keyPublication)
	}

	if c.SourceURL == "" {
		if n&needSource != 0 {
			errs = append(errs, fmt.Errorf("%s is required: set it to the source PostgreSQL URL, e.g. postgres://user@host:5432/db", envName(keySourceURL)))
		}
	} else if err := checkSourceURL(c.SourceURL); err != nil {
		errs = append(errs, err)
	}
	if c.TargetURL == "" {
		if n&needTarget != 0 {
			errs = append(errs, fmt.Errorf("%s is required: set it to the target URL, e.g. postgres://user@host:5432/db or mysql://user@host:3306/db", envName(keyTargetURL)))
		}
	} else if err := checkTargetURL(c.TargetURL); err != nil {
		errs = append(errs, err)
	}
	if !slotNameRE.MatchString(c.Slot) {
		errs = append(errs, fmt.Errorf("%s=%q: expected 1 to 63 characters from a-z, 0-9 and _", envName(keySlot), c.Slot))
	}
	if !slotNameRE.MatchString(c.Publication) {
		errs = append(errs, fmt.Errorf("%s=%q: expected 1 to 63 characters from a-z, 0-9 and _", envName(keyPublication), c.Publication))
	}
	for _, t := range c.Tables {
		if _, _, err := source.SplitTableName(t); err != nil {
			errs = append(errs, fmt.Errorf("%s entry %q: expected schema.table, e.g. public.orders (quote a name with capitals or dots: public.\"Orders\")", envName(keyTables), t))
		}
	}
	if err := oneOf(keySnapshot, c.Snapshot, "auto", "always", "never"); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf(keyTwoPhase, c.TwoPhase, "auto", "on", "off"); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf(keyStreaming, c.Streaming, "auto", "on", "off", "parallel"); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf(keyLogFormat, c.LogFormat, "text", "json"); err != nil {
		errs = append(errs, err)
	}
	if err := oneOf(keyLogLevel, c.LogLevel, "debug", "info", "warn", "error"); err != nil {
		errs = append(errs, err)
	}
	if c.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(c.MetricsAddr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil || (p == 0 && port != "0") || strings.ContainsAny(host, " /") {
			errs = append(errs, fmt.Errorf("%s=%q: expected host:port, e.g. 127.0.0.1:9187 or :9187", envName(keyMetricsAddr), c.MetricsAddr))
		}
	}

	raw := orDefault(c.rawStatusInterval, keyStatusInterval)
	d, err := time.ParseDuration(raw)
	if err != nil || d < 100*time.Millisecond || d > time.Hour {
		errs = append(errs, fmt.Errorf("%s=%q: expected a duration between 100ms and 1h, e.g. 10s", envName(keyStatusInterval), c.rawStatusInterval))
	}
	c.StatusInterval = d

	if c.TailBinary, err = parseBool(keyTailBinary, c.rawTailBinary); err != nil {
		errs = append(errs, err)
	}
	if c.KeepOrder, err = parseBool(keyKeepOrder, c.rawKeepOrder); err != nil {
		errs = append(errs, err)
	}

	raw = orDefault(c.rawCopyWorkers, keyCopyWorkers)
	w, err := strconv.Atoi(raw)
	if err != nil || w < 0 || w > 256 {
		errs = append(errs, fmt.Errorf("%s=%q: expected a number of workers from 0 (one per CPU) to 256", envName(keyCopyWorkers), c.rawCopyWorkers))
	}
	c.CopyWorkers = w

	raw = orDefault(c.rawVerifyChunk, keyVerifyChunk)
	rows, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || rows < 0 || rows > 10_000_000 {
		errs = append(errs, fmt.Errorf("%s=%q: expected a number of rows per chunk from 1 to 10000000, or 0 to choose per table", envName(keyVerifyChunk), c.rawVerifyChunk))
	}
	c.VerifyChunkRows = rows

	raw = orDefault(c.rawVerifyWait, keyVerifyWait)
	if d, err = time.ParseDuration(raw); err != nil || d < 0 || d > time.Hour {
		errs = append(errs, fmt.Errorf("%s=%q: expected a duration from 0s (no waiting) to 1h, e.g. 30s", envName(keyVerifyWait), c.rawVerifyWait))
	}
	c.VerifyWait = d

	raw = orDefault(c.rawPubCheck, keyPubCheck)
	if d, err = time.ParseDuration(raw); err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
		errs = append(errs, fmt.Errorf("%s=%q: expected a duration from 1s to 24h, e.g. 1m, or 0s to check only at start", envName(keyPubCheck), c.rawPubCheck))
	}
	c.PublicationCheck = d
	errs = append(errs, c.Notify.validate()...)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return settingErrors(errs)
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
	for _, s := range settingDefaults {
		if s.key == key {
			return s.def
		}
	}
	return ""
}

// oneOf checks that val is one of allowed, naming the variable otherwise.
func oneOf(key, val string, allowed ...string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	list := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	return fmt.Errorf("%s=%q: expected %s", envName(key), val, list)
}

// socketHostURL rewrites a postgres URL whose host is a percent-encoded
// Unix-socket directory, as libpq takes it (postgres://u@%2Fvar%2Frun%2Fpg:5432/db),
// into the form Go's URL parser and pgx take (postgres://u@:5432/db?host=%2Fvar%2Frun%2Fpg).
// Anything else is returned as it is.
func socketHostURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		return s
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	userinfo, hostport := "", auth
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		userinfo, hostport = auth[:i+1], auth[i+1:]
	}
	if !strings.HasPrefix(strings.ToLower(hostport), "%2f") {
		return s
	}
	host, port := hostport, ""
	if i := strings.LastIndex(hostport, ":"); i >= 0 {
		host, port = hostport[:i], hostport[i:]
	}
	dir, err := url.PathUnescape(host)
	if err != nil {
		return s
	}
	path, query, _ := strings.Cut(tail, "?")
	q := "host=" + url.QueryEscape(dir)
	if query != "" {
		q += "&" + query
	}
	return scheme + "://" + userinfo + port + path + "?" + q
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
	_, err := pgconnstr.Parse(s)
	if err == nil {
		return nil
	}
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) { // pgx's own errors are all ParseConfigErrors
		return fmt.Errorf("%s=%q: %v", name, redactURL(s), redact.New(s).Err(err))
	}
	// pgx's reason is its inner error, or else what follows the connection
	// string its message quotes (redacted only in part).
	reason := "cannot be parsed"
	if inner := pce.Unwrap(); inner != nil {
		reason = inner.Error()
	} else if text := pce.Error(); strings.LastIndex(text, "`: ") >= 0 {
		reason = text[strings.LastIndex(text, "`: ")+3:]
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
