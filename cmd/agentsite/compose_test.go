package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// composeFile is what TestComposePlanet reads of docker/compose.yml.
type composeFile struct {
	Services map[string]struct {
		Image string `yaml:"image"`
		Build struct {
			Args map[string]string `yaml:"args"`
		} `yaml:"build"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
	} `yaml:"services"`
}

// TestComposePlanet holds docker/compose.yml to the planet the README
// promises, where no Docker engine runs: every AGENTSITE_* variable is a
// flag's twin (a typo would be ignored by the node), the demo agents are
// hosted by one node only (mirrors fill from the network), the image is
// given its version at build, and no two services publish one host port.
// Where an engine exists, `docker compose config` checks the file too.
func TestComposePlanet(t *testing.T) {
	raw, err := os.ReadFile("../../docker/compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker/compose.yml: %v", err)
	}
	envs := map[string]bool{}
	var c Config
	c.newFlagSet(io.Discard).VisitAll(func(fl *flag.Flag) { envs[EnvName(fl.Name)] = true })

	var nodes, demoHosts []string
	ports := map[string]string{}
	for name, s := range f.Services {
		for _, p := range s.Ports {
			host := p[:strings.LastIndex(p, ":")]
			proto := "tcp"
			if i := strings.Index(p, "/"); i >= 0 {
				proto = p[i+1:]
			}
			if other, dup := ports[host+"/"+proto]; dup {
				t.Errorf("%s and %s both publish %s/%s", other, name, host, proto)
			}
			ports[host+"/"+proto] = name
		}
		if s.Image != "agentsite:local" || len(s.Entrypoint) > 0 {
			continue // postgres, and the one-shot keygen
		}
		nodes = append(nodes, name)
		if s.Build.Args["VERSION"] == "" {
			t.Errorf("%s: the image is built without a VERSION argument: every node would say it is %q", name, "dev")
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, "AGENTSITE_") && !envs[k] {
				t.Errorf("%s: %s is no flag's environment twin (agentsite serve --help lists them)", name, k)
			}
		}
		if demo, set := s.Environment["AGENTSITE_DEMO_AGENTS"]; !set || demo == "true" {
			demoHosts = append(demoHosts, name)
		}
	}
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Errorf("node services %v, want three", nodes)
	}
	if len(demoHosts) != 1 {
		t.Errorf("demo agents hosted by %v: the hub would list each demo agent %d times; host them on one node", demoHosts, len(demoHosts))
	}

	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Log("no docker compose here: docker compose config not run")
		return
	}
	cmd := exec.Command("docker", "compose", "-f", "../../docker/compose.yml", "config", "-q")
	cmd.Env = append(os.Environ(), "NODE_A_PEER_ID=12D3KooWtest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("docker compose config: %v\n%s", err, out)
	}
}

// TestVersionOfABuild: a binary built in a checkout without -X names its
// commit, so two nodes of a planet built apart can be told apart.
func TestVersionOfABuild(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}}}, "dev-0123456789ab"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, "dev-0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, c := range cases {
		if got := versionOf(&c.bi); got != c.want {
			t.Errorf("versionOf(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}
