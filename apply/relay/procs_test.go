package relay

import (
	"io"
	"log/slog"
	"runtime"
	"testing"
)

func TestStreamProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	local := true
	unset := func(string) (string, bool) { return "", false }

	restore := streamProcs(local, unset, log)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("servers on this machine: GOMAXPROCS %d while streaming, want 1", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("after streaming: GOMAXPROCS %d, want 4 back", got)
	}

	remote := false
	streamProcs(remote, unset, log)()
	set := func(k string) (string, bool) { return "2", k == "GOMAXPROCS" }
	r := streamProcs(local, set, log)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS set by the user: %d while streaming, want 4 untouched", got)
	}
	r()
	r = streamProcs(remote, unset, log)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("a remote source: GOMAXPROCS %d while streaming, want 4 untouched", got)
	}
	r()
}
