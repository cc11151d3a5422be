package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testSet = &Set{Prefix: "APP", NotSettings: []string{"APP_TEST_"}, List: []Setting{
	{Key: "url", Kind: Text, Expects: "a URL"},
	{Key: "tables", Kind: List, Expects: "table names"},
	{Key: "verbose", Default: "false", Kind: Bool, Expects: "true or false"},
	{Key: "workers", Default: "4", Kind: Number, Expects: "a number"},
}}

// viperFor reads a config file with body through testSet.
func viperFor(t *testing.T, name, body string, env map[string]string) (map[string]any, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "APP_CONFIG" {
			return path, true
		}
		v, ok := env[k]
		return v, ok
	}
	v, err := testSet.Viper(lookup)
	if err != nil {
		return nil, err
	}
	return map[string]any{"url": v.GetString("url"), "workers": v.GetString("workers"), "tables": v.Get("tables")}, nil
}

func TestFile(t *testing.T) {
	got, err := viperFor(t, "c.yaml", "APP_URL: x://h\ntables: [a, b]\n", nil)
	if err != nil || got["url"] != "x://h" || got["workers"] != "4" {
		t.Fatalf("got %v, %v; want the file's url (key with the prefix) and the default workers", got, err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"c.yaml", "url: [a]\n", "url: expected a URL, got a list"},
		{"c.yaml", "url: 12\n", "got a number (12); put it in quotes"},
		{"c.json", `{"workers": true}`, "workers: expected a number, got a boolean (true)"},
		{"c.yaml", "tables: [1]\n", "got a list with an entry that is not a string"},
		{"c.toml", "url = {x = 1}\n", "url: expected a URL, got a map"},
		{"c.yaml", "url:\n", "url has no value (null): set it to a URL"},
		{"c.yaml", "urll: x\n", `unknown setting "urll"; known settings are url, tables, verbose, workers`},
		{"c.ini", "url=x\n", "expected a file ending in .yaml"},
	} {
		if _, err := viperFor(t, c.name, c.body, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v; want %q", c.name, c.body, err, c.want)
		}
	}
	if _, err := viperFor(t, "c.yaml", "url: [a]\nworkers: {}\n", nil); err == nil || len(err.(Errors)) != 2 {
		t.Errorf("two bad values: %v; want both on one line", err)
	}
}

func TestUnknown(t *testing.T) {
	got := testSet.Unknown([]string{"APP_URL=x", "APP_URLL=x", "APP_CONFIG=f", "APP_TEST_X=1", "APP_url=x", "PATH=/bin"})
	if strings.Join(got, ",") != "APP_URLL,APP_url" {
		t.Fatalf("Unknown = %q", got)
	}
}

func TestParse(t *testing.T) {
	if b, err := testSet.ParseBool("verbose", " "); err != nil || b {
		t.Errorf("empty: %v, %v; want the default false", b, err)
	}
	if _, err := testSet.ParseBool("verbose", "yes"); err == nil || err.Error() != `APP_VERBOSE="yes": expected true or false` {
		t.Errorf("yes: %v", err)
	}
	if err := testSet.OneOf("url", "c", "a", "b"); err == nil || err.Error() != `APP_URL="c": expected a or b` {
		t.Errorf("OneOf: %v", err)
	}
}
