package relay

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
	"github.com/pgrelay/pgrelay/source"
)

// Config is what the relay runs with. Validate applies the defaults and
// checks it; each problem is a *SettingError naming its setting by key
// ("slot", "status_interval": the PGRELAY_ variables without the prefix, in
// lower case).
type Config struct {
	// SourceURL is the source PostgreSQL's URL or key=value settings.
	SourceURL   string
	Slot        string   // replication slot; default pgrelay
	Publication string   // default pgrelay
	Tables      []string // schema.table entries a created publication lists; empty: all
	Snapshot    string   // auto (default), always, never
	TwoPhase    string   // auto (default), on, off
	Streaming   string   // auto (default), on, off, parallel

	// StatusInterval is how often a standby status update is sent to the
	// source when nothing else prompts one; default 10 s.
	StatusInterval time.Duration
	// CopyWorkers is how many tables or table ranges the snapshot copies at
	// once; 0: the number of CPUs.
	CopyWorkers int
	// SpillDir is where transactions larger than the memory bound are
	// spilled; "": $TMPDIR/pgrelay-spill.
	SpillDir string
	// PublicationCheck is how often replicate compares what the publication
	// publishes of each copied table with what was copied; 0: only at start.
	PublicationCheck time.Duration
	// SlotWALAlert is the slot's retained WAL past which it is at risk
	// (PGRELAY_SLOT_WAL_ALERT); the zero value: only past
	// max_slot_wal_keep_size.
	SlotWALAlert source.WALAlert
	// AlertRepeat is how often a lasting WAL-retention warning is logged
	// again (PGRELAY_WEBHOOK_REPEAT); 0: notify.DefaultRepeat.
	AlertRepeat time.Duration
	// VerifyChunkRows is the rows per chunk verify compares; 0: chosen per
	// table.
	VerifyChunkRows int64
	// VerifyWait bounds how long verify waits, per differing chunk, for a
	// running replica to apply past the source's position; 0: no waiting.
	VerifyWait time.Duration
	// TailBinary asks the source for binary column values in tail.
	TailBinary bool
	// Schema says what a migration carries besides the tables:
	// schemacopy.ModeAll (default) or ModeTables (docs/migration.md).
	Schema string
	// SchemaGrants carries the privileges granted on what is carried too
	// (needs Schema all).
	SchemaGrants bool
}

// SettingError is one setting Validate refused.
type SettingError struct {
	Key   string // the setting, e.g. "slot"
	Value string // as Validate saw it
	// Expected says what it takes, e.g. "auto, always or never"; for a
	// missing setting, what to set it to.
	Expected string
	Missing  bool
	Entry    bool // Value is one entry of a list setting
}

func (e *SettingError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("%s is required: %s", e.Key, e.Expected)
	case e.Entry:
		return fmt.Sprintf("%s entry %q: expected %s", e.Key, e.Value, e.Expected)
	}
	return fmt.Sprintf("%s=%q: expected %s", e.Key, e.Value, e.Expected)
}

// SettingErrors are several refused settings, in the order of Config's fields.
type SettingErrors []*SettingError

func (e SettingErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// nameRE is what the server accepts as a slot name. Publication names follow
// the same rule: pgoutput folds publication_names to lower case, so a name
// with capitals could never be found.
var nameRE = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// Validate applies defaults to empty fields and checks every setting; it
// returns nil or SettingErrors, every problem at once.
func (c *Config) Validate() error {
	var errs SettingErrors
	bad := func(key, value, expected string) {
		errs = append(errs, &SettingError{Key: key, Value: value, Expected: expected})
	}
	oneOf := func(field *string, key string, allowed ...string) {
		*field = strings.ToLower(strings.TrimSpace(*field))
		if *field == "" {
			*field = allowed[0]
		}
		if !slices.Contains(allowed, *field) {
			bad(key, *field, strings.Join(allowed[:len(allowed)-1], ", ")+" or "+allowed[len(allowed)-1])
		}
	}
	if c.Slot == "" {
		c.Slot = "pgrelay"
	}
	if c.Publication == "" {
		c.Publication = "pgrelay"
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = 10 * time.Second
	}
	if c.SourceURL == "" {
		errs = append(errs, &SettingError{Key: "source_url", Missing: true,
			Expected: "set it to the source PostgreSQL URL, e.g. postgres://user@host:5432/db"})
	}
	if !nameRE.MatchString(c.Slot) {
		bad("slot", c.Slot, "1 to 63 characters from a-z, 0-9 and _")
	}
	if !nameRE.MatchString(c.Publication) {
		bad("publication", c.Publication, "1 to 63 characters from a-z, 0-9 and _")
	}
	for _, t := range c.Tables {
		if _, _, err := source.SplitTableName(t); err != nil {
			errs = append(errs, &SettingError{Key: "tables", Value: t, Entry: true,
				Expected: `schema.table, e.g. public.orders (quote a name with capitals or dots: public."Orders")`})
		}
	}
	oneOf(&c.Snapshot, "snapshot", "auto", "always", "never")
	oneOf(&c.TwoPhase, "two_phase", "auto", "on", "off")
	oneOf(&c.Streaming, "streaming", "auto", "on", "off", "parallel")
	oneOf(&c.Schema, "schema", schemacopy.ModeAll, schemacopy.ModeTables)
	if c.SchemaGrants && c.Schema == schemacopy.ModeTables {
		errs = append(errs, &SettingError{Key: "schema_grants", Value: "true",
			Expected: "false while PGRELAY_SCHEMA=tables: grants are carried with the schema objects (PGRELAY_SCHEMA=all)"})
	}
	if c.StatusInterval < 100*time.Millisecond || c.StatusInterval > time.Hour {
		bad("status_interval", c.StatusInterval.String(), "a duration between 100ms and 1h, e.g. 10s")
	}
	if c.CopyWorkers < 0 || c.CopyWorkers > 256 {
		bad("copy_workers", fmt.Sprint(c.CopyWorkers), "a number of workers from 0 (one per CPU) to 256")
	}
	if c.VerifyChunkRows < 0 || c.VerifyChunkRows > 10_000_000 {
		bad("verify_chunk_rows", fmt.Sprint(c.VerifyChunkRows), "a number of rows per chunk from 1 to 10000000, or 0 to choose per table")
	}
	if c.VerifyWait < 0 || c.VerifyWait > time.Hour {
		bad("verify_wait", c.VerifyWait.String(), "a duration from 0s (no waiting) to 1h, e.g. 30s")
	}
	if d := c.PublicationCheck; d < 0 || d != 0 && (d < time.Second || d > 24*time.Hour) {
		bad("publication_check_interval", d.String(), "a duration from 1s to 24h, e.g. 1m, or 0s to check only at start")
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
