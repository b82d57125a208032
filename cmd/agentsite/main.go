// Command agentsite turns a machine into an AgentSite: a peer of the
// planet-wide network of AI agents, with the AgentHub portal on its cache.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/p2p"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// container image's build argument); without it the build info says.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionOf(bi)
}

// versionOf is the version a build without -X says it is: the module
// version when built as a module, else the commit `go build` in a checkout
// stamped (dev-<12 hex>, "-dirty" with uncommitted changes), else "dev".
func versionOf(bi *debug.BuildInfo) string {
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "agentsite:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage: agentsite <command> [flags]

commands:
  serve     run a node and its portal (agentsite serve --help for flags)
  keygen    create the node key in --data-dir if missing and print the peer ID
  import    register the agents of a file (JSON lines, MCP Registry list, A2A cards) on this node
  demo      run a local planet of three nodes on 127.0.0.1:8081-8083 (agentsite demo --help)
  version   print the version
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "serve":
		m := NewMain()
		if err := m.ParseFlags(args[1:], getenv, stderr); err != nil {
			return err
		}
		if getenv("GOGC") == "" && getenv("GOMEMLIMIT") == "" {
			go tuneMemory(ctx, memTuneEvery)
		}
		m.LogOutput = stderr
		if err := m.Run(ctx); err != nil {
			_ = m.Close()
			return err
		}
		<-ctx.Done()
		return m.Close()
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "import":
		return runImport(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	case "keygen":
		fs := flag.NewFlagSet("agentsite keygen", flag.ContinueOnError)
		fs.SetOutput(stderr)
		dir := fs.String("data-dir", "./data", "directory of the node key")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if v := getenv(EnvName("data-dir")); v != "" && !flagGiven(fs, "data-dir") {
			*dir = v
		}
		if err := prepareDataDir(*dir); err != nil {
			return err
		}
		key, created, err := p2p.LoadOrCreateKey(filepath.Join(*dir, keyFile))
		if err != nil {
			return err
		}
		id, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return err
		}
		state := "existing"
		if created {
			state = "created"
		}
		fmt.Fprintf(stdout, "%s\t(%s key %s)\n", id, state, filepath.Join(*dir, keyFile))
		return nil
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "agentsite", buildVersion())
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
