package relay

import (
	"log/slog"
	"runtime"
)

// streamProcs limits the Go runtime to one processor while a session
// streams, when the source and the target both run on this machine and
// GOMAXPROCS is not set (lookup reads the environment; shared says the
// servers share this machine's cores); it returns what
// undoes it. Applying the stream is one pipeline (receive, decode, apply,
// send), well under a core of work; with a second processor the runtime
// wakes and parks threads for each hand-over between its goroutines, and on
// cores the servers keep busy each wake-up is a context switch that costs
// more than the work it hands over: in the drain benchmark on a 2-core VM,
// pgrelay used 4.4-7.2 s of CPU with two processors and 2.1-2.7 s with one,
// and drained in 4.9-6.0 s instead of 6.9-9.5 s (alternating runs). A
// server elsewhere leaves pgrelay its cores, and this changes nothing there.
func streamProcs(shared bool, lookup func(string) (string, bool), log *slog.Logger) (restore func()) {
	if _, set := lookup("GOMAXPROCS"); set || !shared {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	if prev == 1 {
		return func() {}
	}
	log.Debug("source and target share this machine's cores: streaming on one Go processor", "was", prev)
	return func() { runtime.GOMAXPROCS(prev) }
}
