package harness

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAwait(t *testing.T) {
	// Done at the third look.
	looks := 0
	if err := Await(time.Minute, time.Millisecond, "three looks", func() error {
		looks++
		if looks < 3 {
			return fmt.Errorf("look %d", looks)
		}
		return nil
	}); err != nil || looks != 3 {
		t.Fatalf("Await = %v after %d looks, want nil after 3", err, looks)
	}

	// Never done: the error says what, for how long, and the last
	// observation, and wraps it.
	seen := errors.New("slot at 0/10, want past 0/20")
	start := time.Now()
	err := Await(30*time.Millisecond, 5*time.Millisecond, "the slot to move", func() error { return seen })
	var we *WaitError
	if !errors.As(err, &we) || we.Aborted || we.Looks < 2 || !errors.Is(err, seen) || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("Await of a check never done = %#v after %v", err, time.Since(start))
	}
	for _, want := range []string{"waited 3", "the slot to move", "slot at 0/10, want past 0/20", "looks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}

	// A timeout of 0 is one look.
	looks = 0
	if err := Await(0, time.Hour, "one look", func() error { looks++; return errors.New("no") }); err == nil || looks != 1 {
		t.Errorf("Await with no time = %v after %d looks, want an error after 1", err, looks)
	}

	// Abort ends the wait at once.
	gone := errors.New("process exited 1")
	start = time.Now()
	err = Await(time.Minute, time.Millisecond, "a log line", func() error { return Abort(gone) })
	if !errors.As(err, &we) || !we.Aborted || we.Looks != 1 || !errors.Is(err, gone) || time.Since(start) > 10*time.Second {
		t.Fatalf("Await of an aborting check = %#v", err)
	}
	if !strings.Contains(err.Error(), "gave up waiting for a log line") || !strings.Contains(err.Error(), "process exited 1") {
		t.Errorf("aborted wait says %q", err)
	}
}

// fatalTB records what Fatal would report; Fatal ends its goroutine, as
// testing's does.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestEventually(t *testing.T) {
	run := func(check func() error) string {
		tb := &fatalTB{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Eventually(tb, 20*time.Millisecond, "the thing", check)
		}()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		return tb.msg
	}
	if msg := run(func() error { return nil }); msg != "" {
		t.Errorf("Eventually of a check done at once failed: %s", msg)
	}
	if msg := run(func() error { return errors.New("still 3 rows") }); !strings.Contains(msg, "the thing") || !strings.Contains(msg, "still 3 rows") {
		t.Errorf("Eventually of a check never done reported %q", msg)
	}
}
