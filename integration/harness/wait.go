package harness

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often [Eventually] looks again.
const PollInterval = 50 * time.Millisecond

// Eventually waits until check returns nil, looking every [PollInterval] for
// at most timeout, and fails t at once (t.Fatal) when it does not: the message
// says what was awaited (what completes "waited … for"), for how long, and
// the last error check returned, which should say what it saw ("slot at
// 0/1A2B, want past 0/1A00"). A check returning [Abort] ends the wait at once.
// Call it from the test's goroutine, as t.Fatal requires; elsewhere, or to
// add to the message, use [Await].
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := Await(timeout, PollInterval, what, check); err != nil {
		t.Fatal(err)
	}
}

// Await is [Eventually] without a test: it calls check every interval until
// it returns nil (then Await returns nil) or timeout passes, and returns a
// *[WaitError] otherwise. check runs at least once, and once more at the
// deadline, so a timeout of 0 is a single look.
func Await(timeout, interval time.Duration, what string, check func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	for looks := 1; ; looks++ {
		err := check()
		if err == nil {
			return nil
		}
		var ab *abortError
		if errors.As(err, &ab) {
			return &WaitError{What: what, Waited: time.Since(start), Looks: looks, Last: ab.err, Aborted: true}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &WaitError{What: what, Waited: time.Since(start), Looks: looks, Last: err}
		}
		time.Sleep(min(interval, left))
	}
}

// Abort marks err as final for [Eventually] and [Await]: the wait ends at
// once, failing with err (a process the test waits on has exited, say).
func Abort(err error) error {
	if err == nil {
		err = errors.New("aborted")
	}
	return &abortError{err}
}

type abortError struct{ err error }

func (e *abortError) Error() string { return e.err.Error() }
func (e *abortError) Unwrap() error { return e.err }

// WaitError is a wait of [Await] that did not end in success.
type WaitError struct {
	What    string        // what was awaited
	Waited  time.Duration // how long
	Looks   int           // how many times the check ran
	Last    error         // the check's last error
	Aborted bool          // the check ended the wait with Abort
}

func (e *WaitError) Error() string {
	if e.Aborted {
		return fmt.Sprintf("gave up waiting for %s after %v: %v", e.What, e.Waited.Round(time.Millisecond), e.Last)
	}
	return fmt.Sprintf("waited %v for %s (%d looks); last: %v", e.Waited.Round(time.Millisecond), e.What, e.Looks, e.Last)
}

func (e *WaitError) Unwrap() error { return e.Last }

// waitFor polls check every interval until it reports done, returns an
// error, or the timeout passes (the servers' own waits, which stop at the
// first error).
func waitFor(timeout, interval time.Duration, check func() (bool, error)) error {
	var stop error
	err := Await(timeout, interval, "the condition", func() error {
		done, err := check()
		switch {
		case err != nil:
			stop = err
			return Abort(err)
		case !done:
			return errors.New("not yet")
		}
		return nil
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		return fmt.Errorf("timed out after %v", timeout)
	}
	return nil
}
