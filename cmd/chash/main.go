// Command chash answers the questions to ask before changing a fleet that
// places keys with consistent hashing: how evenly each algorithm spreads
// keys, how many keys move when a node joins or leaves, where they go, and
// what a rollout does to a cache's hit rate and the origin behind it.
//
// Usage:
//
//	chash [compare] [flags]     balance, movement, speed and memory of every algorithm
//	chash plan [flags]          a rollout plan: origin load step by step
//	chash diff [flags] OLD NEW  what moves between two memberships
//	chash members [flags]       the live members at an etcd prefix
//	chash shardmap COMMAND      build, rebalance, plan, show and import explicit shard maps
//	chash report KIND [flags]   diff, plan or shardmap plan as one HTML page
//
// Run "chash COMMAND -h" for a command's flags and examples; each numeric
// flag's help gives its range. Every command accepts -json for
// machine-readable output: one object with lower-case snake_case keys and
// numbers as JSON numbers (diff -h documents diff's). The exit status is 0
// on success, 2 on bad flags or input, and 1 if the work itself fails.
// Input is checked before any work: a flag out of range, a membership
// file's bad line (reported as file:line) or a size the library would
// reject exits with 2 at once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// A command is one subcommand. To add one, write its run function (and
// its help, flags and tests) in a file of its own and add a line to
// commands: dispatch, "chash -h" and the unknown-command message all read
// the table.
type command struct {
	name    string
	args    string // after the name in the usage line, such as "[flags] OLD NEW"
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order "chash -h" shows them; the
// first runs when no command is named.
var commands = []command{
	{"compare", "[flags]", "balance, movement, speed and memory of every algorithm", runCompare},
	{"plan", "[flags]", "a rollout plan: keys moved, hit rate and origin load per step", runPlan},
	{"diff", "[flags] OLD NEW", "what moves, and where, between two memberships", runDiff},
	{"members", "-prefix P [flags]", "live members in etcd and their fingerprint; -watch: what each change moves", runMembers},
	{"shardmap", "build|rebalance|plan|show|import [flags]", "an explicit shard map: build, rebalance, plan the moves in batches, import a Kafka topic", runShardMap},
	{"report", "diff|plan|shardmap [flags]", "diff, plan or shardmap plan as one self-contained HTML page", runReport},
}

const mainExamples = `examples:
  chash                                   compare every algorithm at 10 nodes, 1,000,000 keys
  chash compare -nodes 100 -keys 200k
  chash plan -from 20 -to 30 -step 2 -rate 200k -hit 94% -origin 25k
  chash diff -algo ring old.txt new.txt

Run "chash COMMAND -h" for a command's flags. Exit status: 0 success,
2 bad flags or input, 1 failure.
`

// mainHelp is "chash -h": the table of commands, then the examples.
func mainHelp() string {
	var b strings.Builder
	b.WriteString("chash shows what consistent placement does to keys before a fleet changes.\n\nusage:\n")
	uses := make([]string, len(commands))
	width := 0
	for i, c := range commands {
		uses[i] = "chash " + c.name + " " + c.args
		if i == 0 {
			uses[i] = "chash [" + c.name + "] " + c.args
		}
		width = max(width, len(uses[i]))
	}
	for i, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, uses[i], c.summary)
	}
	b.WriteString("\n" + mainExamples)
	return b.String()
}

// run is the whole command, apart from the process: it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		return commands[0].run(args, stdout, stderr)
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprint(stdout, mainHelp())
		return exitOK
	}
	var names []string
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "chash: unknown command %q (want %s; chash -h for help)\n", args[0], strings.Join(names, ", "))
	return exitUsage
}

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// newFlags returns a flag set whose -h prints help to stdout and whose
// errors print one line of usage to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("chash "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parse prints help or a hint itself
	return fs
}

// parse parses args, flags and positional arguments in any order, and
// reports the exit status if the command should stop here: after -h (its
// help on stdout) or on a bad flag. The positional arguments are left in
// *rest.
func parse(fs *flag.FlagSet, args []string, help string, stdout io.Writer, rest *[]string) (int, bool) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK, true
		}
		if err != nil {
			fmt.Fprintf(fs.Output(), "run \"%s -h\" for help\n", fs.Name())
			return exitUsage, true
		}
		left := fs.Args()
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			*rest = append(*rest, left...) // everything after -- is positional
			return 0, false
		}
		if len(left) == 0 {
			return 0, false
		}
		*rest = append(*rest, left[0])
		args = left[1:]
	}
}

// usageError prints a message about bad input and returns exitUsage.
func usageError(stderr io.Writer, name, format string, a ...any) int {
	fmt.Fprintf(stderr, "chash %s: %s\n", name, fmt.Sprintf(format, a...))
	return exitUsage
}
