// Package migrations holds pgrelay's own metadata schema for each target kind, as
// versioned SQL files embedded in the binary (postgres/NNNN_name.sql), and the
// runner that brings a target up to date.
//
// The runner applies each pending version in its own transaction, in order, and
// records it in the target's versions table. Every transaction first takes a
// transaction-scoped advisory lock, so two pgrelay instances starting together
// apply each version once: the second waits, then finds nothing left to do.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned SQL script.
type Migration struct {
	Version int
	Name    string // the file name without version and extension, e.g. "init"
	SQL     string
}

//go:embed postgres/*.sql
var postgresFiles embed.FS

// Postgres returns the PostgreSQL target migrations in version order.
func Postgres() ([]Migration, error) { return load(postgresFiles, "postgres") }

// load reads dir's NNNN_name.sql files from fsys. Versions must run 1, 2, 3, …
// without gaps or duplicates, so that a missing file is caught at build/test time
// rather than on a user's target.
func load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", dir, err)
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		if !ok || name == "" {
			return nil, fmt.Errorf("migrations: %s/%s: file name must be NNNN_name.sql", dir, e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s/%s: version %q is not a positive number", dir, e.Name(), num)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s/%s: %w", dir, e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: %s: expected version %d, found %d (%s): versions must be 1, 2, 3, … without gaps or duplicates", dir, i+1, m.Version, m.Name)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrations: %s: no migrations", dir)
	}
	return ms, nil
}
