//go:build unix

package apply

import (
	"errors"
	"os"
	"syscall"
)

const lockSupported = true

// tryLock takes an exclusive advisory lock on f without waiting. The kernel
// drops it when the process dies, which is what makes a spill directory stale.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
