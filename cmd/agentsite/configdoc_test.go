package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// configDoc is the operators' reference for every flag (docs/configuration.md).
const configDoc = "../../docs/configuration.md"

// TestConfigurationPageListsEveryServeFlag holds the flag table of
// docs/configuration.md to the flags `agentsite serve` declares: every flag
// has a row with its AGENTSITE_* twin and its default, and no row names a
// flag that is gone.
func TestConfigurationPageListsEveryServeFlag(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatalf("read %s: %v", configDoc, err)
	}
	rows := serveFlagRows(t, string(data))
	var c Config
	fs := c.newFlagSet(io.Discard)
	declared := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		declared[f.Name] = true
		row, ok := rows[f.Name]
		if !ok {
			t.Errorf("--%s has no row in %s's table of `agentsite serve`: add `| `--%s` | `%s` | default | what |`", f.Name, configDoc, f.Name, EnvName(f.Name))
			return
		}
		if want := "`" + EnvName(f.Name) + "`"; row[1] != want {
			t.Errorf("--%s: the environment column says %s, want %s", f.Name, row[1], want)
		}
		if msg := defaultDiffers(f, row[2]); msg != "" {
			t.Errorf("--%s: %s", f.Name, msg)
		}
	})
	for name := range rows {
		if !declared[name] {
			t.Errorf("%s lists --%s, which `agentsite serve` does not declare: remove the row", configDoc, name)
		}
	}
}

// serveFlagRows reads the table under "## `agentsite serve`": flag name to
// its cells (flag, environment, default, what).
func serveFlagRows(t *testing.T, doc string) map[string][]string {
	t.Helper()
	const heading = "## `agentsite serve`"
	i := strings.Index(doc, heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", configDoc, heading)
	}
	section := doc[i+len(heading):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		if len(cells) < 4 {
			t.Fatalf("%s: row %q has %d cells, want 4 (flag | environment | default | what)", configDoc, l, len(cells))
		}
		name := strings.TrimSuffix(strings.TrimPrefix(cells[0], "`--"), "`")
		if _, dup := rows[name]; dup {
			t.Errorf("%s lists --%s twice", configDoc, name)
		}
		rows[name] = cells
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no flag rows under %q", configDoc, heading)
	}
	return rows
}

// defaultDiffers compares a flag's default with the first backticked value
// of its default cell (or all of them, for a repeatable flag), durations by
// value ("1h" is 1h0m0s). A cell without
// one ("none", "the host name, sanitised") describes a default that has no
// one spelling, and a flag whose default is empty needs no value.
func defaultDiffers(f *flag.Flag, cell string) string {
	parts := strings.Split(cell, "`")
	if len(parts) < 3 || f.DefValue == "" {
		return ""
	}
	doc := parts[1]
	if d, err := time.ParseDuration(f.DefValue); err == nil && strings.ContainsAny(f.DefValue, "hms") {
		if dd, err := time.ParseDuration(doc); err == nil && dd == d {
			return ""
		}
	}
	var all []string // a repeatable flag's defaults, one backticked value each
	for i := 1; i < len(parts); i += 2 {
		all = append(all, parts[i])
	}
	if doc == f.DefValue || strings.Join(all, ",") == f.DefValue {
		return ""
	}
	return "the default column says " + cell + ", but the flag's default is " + f.DefValue
}
