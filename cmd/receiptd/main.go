// Command receiptd is the offline-first tax receipt daemon and its command
// line: it runs the daemon (in the foreground, as a system service, or as a
// demo beside the built-in tax service simulator) and talks to a running
// daemon for operators.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/receiptd/receiptd/internal/daemon"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, as docs/contract.md ("Command line") fixes them.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error caused by the command line or the
// configuration; it makes receiptd exit with code 2 instead of 1.
type usageError struct {
	err      error
	reported bool // the flag package has already printed it
	// misused: the command line itself is wrong (not the file it names),
	// so runMain prints the command's usage line under the error.
	misused bool
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...), misused: true}
}

// command is one subcommand. Run parses its own flags from args.
type command struct {
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) error
}

// cmdEnv is what every command writes to, so tests can capture it.
type cmdEnv struct {
	stdout, stderr io.Writer
}

// commands is filled by the files that define each subcommand.
var commands = map[string]command{}

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, parentGone := daemon.WithParent(ctx) // Windows: a child stops as its standard input ends
	code := runMain(ctx, os.Args[1:], &cmdEnv{stdout: os.Stdout, stderr: os.Stderr})
	parentGone()
	stop()
	os.Exit(code)
}

// runMain dispatches to a subcommand and maps its error to an exit code.
func runMain(ctx context.Context, args []string, env *cmdEnv) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	name, rest := args[0], args[1:]
	if name == "config" {
		if len(rest) == 0 || rest[0] != "check" {
			fmt.Fprintln(env.stderr, "usage: receiptd config check [-config FILE | FILE]")
			return exitUsage
		}
		name, rest = "config check", rest[1:]
	}
	if name == "update" {
		if len(rest) == 0 || (rest[0] != "apply" && rest[0] != "status") {
			fmt.Fprintln(env.stderr, "usage: receiptd update apply [flags] RELEASE | receiptd update status [flags]")
			return exitUsage
		}
		name, rest = "update "+rest[0], rest[1:]
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.stderr, "receiptd: unknown command %q\n\n", name)
		printUsage(env.stderr)
		return exitUsage
	}
	err := cmd.run(ctx, env, rest)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	default:
		var ce *daemon.ChildExitError
		if errors.As(err, &ce) { // the version an update installed ended: its code is ours
			fmt.Fprintf(env.stderr, "receiptd %s: %v\n", name, err)
			return ce.Code
		}
		var ue usageError
		if !errors.As(err, &ue) || !ue.reported {
			fmt.Fprintf(env.stderr, "receiptd %s: %v\n", name, err)
		}
		if errors.As(err, &ue) {
			if syn, ok := synopses.Load(name); ok && ue.misused {
				fmt.Fprintf(env.stderr, "usage: receiptd %s\n", syn)
			}
			return exitUsage
		}
		return exitFailure
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: receiptd <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'receiptd <command> -h' for a command's flags.")
}

// newFlagSet returns a FlagSet that reports errors instead of exiting and
// prints its usage to env.stderr.
func newFlagSet(env *cmdEnv, name, synopsis string) *flag.FlagSet {
	synopses.Store(name, synopsis)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "usage: receiptd %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// synopses is each command's usage line, by name, as its newFlagSet gave
// it: runMain prints it under every usage error the flag package did not
// report itself ("unexpected arguments", a missing FILE).
var synopses sync.Map

// parseFlags parses args and refuses positional arguments beyond maxArgs.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err: err, reported: true}
	}
	if fs.NArg() > maxArgs {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args()[maxArgs:], " "))
	}
	return nil
}
