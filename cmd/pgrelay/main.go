// Command pgrelay replicates a PostgreSQL database into PostgreSQL or
// MySQL/MariaDB through the pgoutput logical replication stream. It is
// configured through PGRELAY_* environment variables (see the README); this
// package owns the command line, the configuration, signals and exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/redact"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line or configuration: nothing was done
)

// env is what a command runs with.
type env struct {
	cfg    *Config
	log    *slog.Logger
	stdout io.Writer
	stderr io.Writer
	relay  *relay.Relay // the product: cmd configures it and renders its results
	// red hides the secrets of the configuration in what pgrelay prints or
	// sends anywhere (errors and log lines pass through it already).
	red *redact.Redactor
}

// command is one pgrelay subcommand.
type command struct {
	summary string
	needs   need
	options []string // the arguments it takes; anything else is exit 2
	run     func(ctx context.Context, e *env, args []string) error
	// failExit is the exit code of an error (exitFailure when 0); an error
	// with an ExitCode method chooses its own.
	failExit int
}

// commandTimeouts bound the connections of the commands that must end by
// themselves (a frozen server must not hang them), where the URLs do not set
// their own: status and teardown wait for neither a connection nor a
// statement for ever; verify (whose chunk checksums may take long) and tail
// (which streams) only for a connection.
var commandTimeouts = map[string]pgconnstr.Timeouts{
	"status":   {Connect: pgconnstr.DefaultConnectTimeout, Statement: pgconnstr.DefaultStatementTimeout},
	"teardown": {Connect: pgconnstr.DefaultConnectTimeout, Statement: pgconnstr.DefaultStatementTimeout},
	"verify":   {Connect: pgconnstr.DefaultConnectTimeout},
	"tail":     {Connect: pgconnstr.DefaultConnectTimeout},
	// sequences waits for a connection, not for the locks it takes.
	"sequences": {Connect: pgconnstr.DefaultConnectTimeout},
}

// commands lists the implemented subcommands.
var commands = map[string]command{
	"replicate": {
		summary: "copy the tables when the target is not seeded, then stream changes until SIGTERM/SIGINT",
		needs:   needSource | needTarget,
		run:     withEvents(runReplicate),
	},
	"migrate": {
		summary: "copy the tables when the target is not seeded, catch up with the source, exit",
		needs:   needSource | needTarget,
		run:     withEvents(runMigrate),
	},
	"status": {
		summary: "show the slot, the lag, the last applied LSN, each table's copy state and whether the target is ready to switch to (--json)",
		needs:   needSource | needTarget,
		options: []string{"--json"},
		run:     runStatus,
	},
	"teardown": {
		summary: "drop the slot, the publication pgrelay created and the target metadata",
		needs:   needSource | needTarget,
		run:     runTeardown,
	},
	"verify": {
		summary:  "compare every published table, source vs target, by row count and checksum in key-range chunks (--json)",
		needs:    needSource | needTarget,
		options:  []string{"--json"},
		run:      runVerify,
		failExit: exitUsage, // could not run: 2; differences: 1
	},
	"sequences": {
		summary: "set the target's sequences to the source's current values: the step before an application switches over",
		needs:   needSource | needTarget,
		run:     runSequences,
	},
	"tail": {
		summary: "print the decoded change stream as JSON lines, one object per pgoutput message",
		needs:   needSource,
		run:     runTail,
	},
}

// defaultMemoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// says otherwise. pgrelay's own buffers are bounded (received frames 16 MiB,
// transactions in hand 32 MiB before they spill to disk); the limit makes the
// garbage collector work harder before the process grows past it, so the
// peak RSS stays near the live data instead of twice it.
const defaultMemoryLimit = 160 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		// The live heap is small and the allocation rate high (a copy of
		// every message): collecting at 4× the live heap instead of 2× took
		// a third off pgrelay's CPU in the drain benchmark, and the memory
		// limit above still bounds the total.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, a second one kills the process as usual.
		<-ctx.Done()
		stop()
	}()
	for _, name := range conf.Unknown(os.Environ()) {
		fmt.Fprintf(os.Stderr, "pgrelay: warning: %s is not a pgrelay setting and is ignored (a typo? the settings are PGRELAY_ plus one of %s)\n", name, conf.Known())
	}
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. Errors are
// printed to stderr as one line.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "version", "--version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "pgrelay: version takes no arguments, got %q\n", redact.ConnString(args[1]))
			return exitUsage
		}
		fmt.Fprintf(stdout, "pgrelay %s\n", buildVersion())
		return exitOK
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "pgrelay: unknown command %q\n", redact.ConnString(name))
		usage(stderr)
		return exitUsage
	}
	if slices.ContainsFunc(args[1:], func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fmt.Fprintf(stdout, "usage: pgrelay %s\n\n%s.\nSettings come from PGRELAY_* environment variables; see the README.\n", name, cmd.summary)
		return exitOK
	}
	for _, a := range args[1:] {
		if !slices.Contains(cmd.options, a) {
			takes := "takes no arguments"
			if len(cmd.options) > 0 {
				takes = "takes only " + strings.Join(cmd.options, ", ")
			}
			fmt.Fprintf(stderr, "pgrelay: %s %s, got %q: settings come from PGRELAY_* environment variables\n", name, takes, redact.ConnString(a))
			return exitUsage
		}
	}

	cfg, err := loadConfig(lookupEnv)
	if err == nil {
		err = cfg.Validate(cmd.needs)
	}
	red := newRedactor(lookupEnv, cfg)
	var target relay.Target
	e := &env{cfg: cfg, red: red, stdout: stdout, stderr: stderr}
	if err == nil {
		e.log = newLogger(stderr, cfg.LogFormat, cfg.LogLevel, red)
		cfg.SourceURL = pgconnstr.WithTimeouts(cfg.SourceURL, commandTimeouts[name])
		cfg.TargetURL = pgconnstr.WithTimeouts(cfg.TargetURL, commandTimeouts[name])
		if cmd.needs&needTarget != 0 {
			target, err = targetFor(cfg, e.log)
		}
	}
	if err == nil {
		e.relay, err = relay.New(cfg.Config, target, e.log)
	}
	if err != nil {
		printError(stderr, err, red)
		return exitUsage
	}
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		e.relay.Progress = f
	}
	err = cmd.run(ctx, e, args[1:])
	if err == nil {
		return exitOK
	}
	printError(stderr, err, red)
	var se *relay.SettingsError
	if errors.As(err, &se) {
		return exitUsage
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	if cmd.failExit != 0 {
		return cmd.failExit
	}
	return exitFailure
}

// printError writes err as the single line "pgrelay: <error>", its secrets
// hidden by red.
func printError(w io.Writer, err error, red *redact.Redactor) {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	fmt.Fprintf(w, "pgrelay: %s\n", red.String(msg))
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: pgrelay <command>\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(&b, "  %-10s %s\n", "help", "show this help")
	fmt.Fprintf(&b, "  %-10s %s\n", "version", "print the version")
	b.WriteString("\nSettings come from PGRELAY_* environment variables (PGRELAY_SOURCE_URL, ...)\nand an optional config file named by PGRELAY_CONFIG; see the README.\n")
	io.WriteString(w, b.String())
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
