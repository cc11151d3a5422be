package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pgrelay/pgrelay/apply/schemacopy"
)

func runReplicate(ctx context.Context, e *env, _ []string) error {
	stop, err := e.serveMetrics(ctx)
	if err != nil {
		return err
	}
	defer stop()
	return e.relay.Replicate(ctx)
}

func runMigrate(ctx context.Context, e *env, _ []string) error {
	stop, err := e.serveMetrics(ctx)
	if err != nil {
		return err
	}
	defer stop()
	m, err := e.relay.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "caught up: the target holds every source transaction committed before %s\n", m.CaughtUp)
	if m.Report != nil {
		return schemacopy.Render(e.stdout, m.Report)
	}
	return nil
}

// runSequences is `pgrelay sequences`, the step before an application
// switches over: stop its writes on the source, let replicate catch up, run
// this, switch.
func runSequences(ctx context.Context, e *env, _ []string) error {
	set, unset, err := e.relay.Sequences(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "sequences: %d set to the source's values\n", set)
	for _, r := range unset {
		fmt.Fprintf(e.stdout, "  not set: %s: %s\n", r.Name, r.Reason)
	}
	if len(unset) > 0 {
		return fmt.Errorf("%d sequences could not be set (listed above)", len(unset))
	}
	return nil
}

// runTail implements `pgrelay tail`: the relay streams the source through a
// temporary slot of its own and prints each pgoutput message as one JSON
// line on stdout (source.AppendJSON), until a signal.
func runTail(ctx context.Context, e *env, _ []string) error {
	return e.relay.Tail(ctx, e.stdout)
}

func runTeardown(ctx context.Context, e *env, _ []string) error {
	if err := e.relay.Teardown(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "teardown done: slot %q, its publication (if pgrelay created it) and the target metadata are gone; replicated tables are kept\n", e.cfg.Slot)
	return nil
}

// isTerminal reports whether f is a terminal (for progress display).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
