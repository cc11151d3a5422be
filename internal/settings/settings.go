// Package settings reads a program's settings from PREFIX_* environment
// variables over an optional config file (PREFIX_CONFIG: yaml, toml, json or
// env) over defaults, through viper, from one list of what the program reads:
// a config file key outside it, or a value of a kind it cannot take, is an
// error naming the key and what it expects, never the default in its place.
package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/viper"
)

// Kind is the kind of value a setting takes in a config file.
type Kind int

const (
	Text     Kind = iota // a string
	List                 // a comma list, or a list of strings
	Bool                 // true or false, also as a string, 1 or 0
	Number               // a whole number, also as a string
	Duration             // a duration string (0 also as a number)
)

// Setting is one setting: its key (lower case, without the prefix), its
// default ("" = none), the kind of value it takes in a config file and what
// it expects, for an error.
type Setting struct {
	Key, Default string
	Kind         Kind
	Expects      string
}

// Set is what a program reads.
type Set struct {
	Prefix string    // of every variable, e.g. PGRELAY
	List   []Setting // in the order errors are reported
	// NotSettings are prefixes of PREFIX_* variables that are not settings
	// (a project's scripts' own), which Unknown does not report.
	NotSettings []string
}

// EnvName is the environment variable that sets key.
func (s *Set) EnvName(key string) string { return s.Prefix + "_" + strings.ToUpper(key) }

// Index is key's place in the list, -1 when there is no such setting.
func (s *Set) Index(key string) int {
	return slices.IndexFunc(s.List, func(st Setting) bool { return st.Key == key })
}

// Lookup is the setting key; ok is false when there is no such setting.
func (s *Set) Lookup(key string) (st Setting, ok bool) {
	i := s.Index(key)
	if i < 0 {
		return Setting{Kind: Text, Expects: "a string"}, false
	}
	return s.List[i], true
}

// Default is key's default.
func (s *Set) Default(key string) string {
	st, _ := s.Lookup(key)
	return st.Default
}

// OrDefault is raw without surrounding spaces, or key's default when that is empty.
func (s *Set) OrDefault(raw, key string) string {
	if v := strings.TrimSpace(raw); v != "" {
		return v
	}
	return s.Default(key)
}

// Known lists the setting keys, comma-separated.
func (s *Set) Known() string {
	names := make([]string, len(s.List))
	for i, st := range s.List {
		names[i] = st.Key
	}
	return strings.Join(names, ", ")
}

// Viper is the environment over the file named by PREFIX_CONFIG (read with
// lookupEnv) over the defaults.
func (s *Set) Viper(lookupEnv func(string) (string, bool)) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix(s.Prefix)
	v.AutomaticEnv()
	for _, st := range s.List {
		v.SetDefault(st.Key, st.Default)
	}
	path, ok := lookupEnv(s.Prefix + "_CONFIG")
	if !ok || path == "" {
		return v, nil
	}
	file, err := s.readFile(path)
	if err != nil {
		return nil, err
	}
	if err := v.MergeConfigMap(file); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return v, nil
}

// readFile reads a yaml, toml, json or env file into a map of known
// settings. Keys may be written as in the environment (PGRELAY_SOURCE_URL) or
// without the prefix (source_url), in any case.
func (s *Set) readFile(path string) (map[string]any, error) {
	cfgVar := s.Prefix + "_CONFIG"
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	switch ext {
	case "yaml", "yml", "toml", "json", "env", "dotenv":
	default:
		return nil, fmt.Errorf("%s=%q: expected a file ending in .yaml, .yml, .toml, .json or .env", cfgVar, path)
	}
	f := viper.New()
	f.SetConfigFile(path)
	f.SetConfigType(ext)
	if err := f.ReadInConfig(); err != nil {
		var notFound viper.ConfigFileNotFoundError
		if errors.As(err, &notFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s=%q: file not found", cfgVar, path)
		}
		return nil, fmt.Errorf("%s=%q: %w", cfgVar, path, err)
	}
	prefix := strings.ToLower(s.Prefix) + "_"
	out := make(map[string]any)
	var errs []error
	bad := map[string]bool{} // keys already reported
	report := func(k string, val any) {
		if !bad[k] {
			bad[k] = true
			errs = append(errs, s.fileTypeError(path, k, val))
		}
	}
	// A map holds no keys viper lists (publication: {}) or only nested ones
	// (log_level.x): each setting is looked up by its own name too.
	for _, st := range s.List {
		for _, k := range []string{st.Key, prefix + st.Key} {
			if m, ok := f.Get(k).(map[string]any); ok && f.InConfig(k) {
				report(k, m)
			}
		}
	}
	for _, k := range f.AllKeys() {
		top, _, nested := strings.Cut(k, ".")
		key := strings.TrimPrefix(strings.ToLower(top), prefix)
		_, known := s.Lookup(key)
		switch {
		case known && nested:
			report(top, f.Get(top))
		case !known:
			return nil, fmt.Errorf("config file %s has unknown setting %q; known settings are %s", path, k, s.Known())
		case !s.fits(key, f.Get(k)):
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
	return nil, Errors(errs)
}

// fits tells whether a config file's value val can be read as setting key:
// a value of another kind would otherwise be read as empty, and the setting
// silently take its default.
func (s *Set) fits(key string, val any) bool {
	st, _ := s.Lookup(key)
	kind := st.Kind
	switch v := val.(type) {
	case string:
		return true
	case bool:
		return kind == Bool
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return kind == Bool || kind == Number || kind == Duration
	case []any:
		return kind == List && !slices.ContainsFunc(v, func(e any) bool { _, ok := e.(string); return !ok })
	case []string:
		return kind == List
	}
	return false // null, a map, a date
}

// fileTypeError is the error of config file path's value val for key (as
// written there): what the setting expects and what it got, never the
// value itself beyond a boolean or a number (a URL's password).
func (s *Set) fileTypeError(path, key string, val any) error {
	name := strings.TrimPrefix(strings.ToLower(key), strings.ToLower(s.Prefix)+"_")
	if name != strings.ToLower(key) {
		key = s.EnvName(name) // viper folds the case: PGRELAY_SLOT is read as pgrelay_slot
	}
	st, _ := s.Lookup(name)
	var got string
	switch v := val.(type) {
	case nil:
		return fmt.Errorf("config file %s: %s has no value (null): set it to %s, or leave it out for the default", path, key, st.Expects)
	case bool:
		got = fmt.Sprintf("a boolean (%t)", v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		got = fmt.Sprintf("a number (%v)", v)
		if st.Kind == Text {
			got += "; put it in quotes if it is meant as text"
		}
	case []any, []string:
		got = "a list"
		if st.Kind == List {
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
	return fmt.Errorf("config file %s: %s: expected %s, got %s", path, key, st.Expects, got)
}

// Unknown lists the PREFIX_* variables of environ that are not settings (nor
// PREFIX_CONFIG, nor NotSettings), in order. The environment is read in upper
// case only: PGRELAY_slot is no setting.
func (s *Set) Unknown(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, s.Prefix+"_") || name == s.Prefix+"_CONFIG" ||
			slices.ContainsFunc(s.NotSettings, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(name, s.Prefix+"_"))
		if _, ok := s.Lookup(key); !ok || s.EnvName(key) != name {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ParseBool reads the boolean setting key from raw, its default when empty.
func (s *Set) ParseBool(key, raw string) (bool, error) {
	b, err := strconv.ParseBool(s.OrDefault(raw, key))
	if err != nil {
		return false, fmt.Errorf("%s=%q: expected true or false", s.EnvName(key), raw)
	}
	return b, nil
}

// OneOf checks that val is one of allowed, naming the variable otherwise.
func (s *Set) OneOf(key, val string, allowed ...string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	list := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	return fmt.Errorf("%s=%q: expected %s", s.EnvName(key), val, list)
}

// Errors are several bad settings, reported on one line.
type Errors []error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e Errors) Unwrap() []error { return e }
