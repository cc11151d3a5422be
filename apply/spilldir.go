package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A spillDir is one applier's private directory under Config.SpillDir, named
// "<slot>-<random>". It holds a lock file locked for the applier's lifetime, so
// that the start-up cleanup of another process on the same slot (say, a second
// instance waiting for the slot) removes only directories whose owner is gone.
type spillDir struct {
	path string
	lock *os.File
}

const spillLockName = "lock"

func createSpillDir(parent, slot string) (*spillDir, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("apply: create spill directory: %w (set PGRELAY_SPILL_DIR to a writable directory)", err)
	}
	path, err := os.MkdirTemp(parent, slot+"-*")
	if err != nil {
		return nil, fmt.Errorf("apply: create spill directory: %w (set PGRELAY_SPILL_DIR to a writable directory)", err)
	}
	f, err := os.OpenFile(filepath.Join(path, spillLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("apply: create spill directory lock: %w", err)
	}
	if ok, err := tryLock(f); lockSupported && (err != nil || !ok) {
		_ = f.Close()
		_ = os.RemoveAll(path)
		if err == nil {
			err = errors.New("locked by another process")
		}
		return nil, fmt.Errorf("apply: lock spill directory %s: %w", path, err)
	}
	return &spillDir{path: path, lock: f}, nil
}

func (d *spillDir) remove() error {
	err := os.RemoveAll(d.path)
	// Closing the file releases the lock; after the removal, so that no other
	// process sees an unlocked directory that is still being removed.
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("apply: remove spill directory: %w", err)
	}
	return nil
}

// removeStaleSpillDirs removes the spill directories of slot left behind by
// processes that died (their lock is free). It returns how many it removed.
func removeStaleSpillDirs(parent, slot string) (int, error) {
	if !lockSupported {
		return 0, nil
	}
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("apply: list spill directory %s: %w", parent, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), slot+"-") {
			continue
		}
		path := filepath.Join(parent, e.Name())
		f, err := os.OpenFile(filepath.Join(path, spillLockName), os.O_RDWR, 0)
		if err == nil {
			ok, lerr := tryLock(f)
			if lerr != nil || !ok {
				_ = f.Close()
				continue // alive, or cannot tell: leave it
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			continue
		}
		// Unlocked or without a lock file (died while creating it): stale.
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
		if f != nil {
			_ = f.Close()
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("apply: remove stale spill files: %w", errors.Join(errs...))
	}
	return removed, nil
}

// CheckSpillDir tells whether dir (the default's when "") can hold spilled
// transactions: created if missing, written to. Checked at start, it names a
// bad PGRELAY_SPILL_DIR before the first large transaction, hours later.
func CheckSpillDir(dir string) error {
	if dir == "" {
		dir = DefaultSpillDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".pgrelay-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// DefaultSpillDir is where transactions spill without PGRELAY_SPILL_DIR.
func DefaultSpillDir() string { return filepath.Join(os.TempDir(), "pgrelay-spill") }
