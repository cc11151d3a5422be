//go:build !unix

package apply

import "os"

// Advisory locks are not available here: start-up leaves every spill directory
// alone (stale ones stay behind) rather than risk removing a live one.
const lockSupported = false

func tryLock(*os.File) (bool, error) { return false, nil }
