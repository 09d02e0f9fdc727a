package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// IgnoreAnnotation on a resource silences the rules it lists for that
// resource: joiner.sh/lint-ignore: JNR004,JNR005.
const IgnoreAnnotation = "joiner.sh/lint-ignore"

// DefaultConfigFile is read from the working directory when no --config
// is given.
const DefaultConfigFile = ".joiner-lint.yaml"

// Config is the .joiner-lint.yaml file:
//
//	rules:
//	  JNR006: off        # globally; or error, warning, note to change the severity
//	ignore:
//	  - rules: [JNR007]
//	    kind: NodePool   # all three optional: kind, name, and a file glob
//	    name: spot
//	    files: clusters/staging/*
type Config struct {
	Rules  map[string]string `yaml:"rules,omitempty"`
	Ignore []Ignore          `yaml:"ignore,omitempty"`
}

// Ignore silences rules for the resources it matches.
type Ignore struct {
	Rules []string `yaml:"rules"`
	Kind  string   `yaml:"kind,omitempty"`
	Name  string   `yaml:"name,omitempty"`
	Files string   `yaml:"files,omitempty"`
}

// LoadConfig reads a config file; a missing file is an error.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading lint config: %w", err)
	}
	return parseConfig(path, b)
}

// LoadConfigIfPresent is LoadConfig of a file that may be missing (the
// default config file): then it is no config, not an error.
func LoadConfigIfPresent(path string) (*Config, error) {
	c, err := LoadConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	return c, err
}

// parseConfig is LoadConfig of the file path's contents b.
func parseConfig(path string, b []byte) (*Config, error) {
	// YAML 1.2, so that off is the word and not false.
	var c Config
	dec := yamlv3.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w (fix: the file has rules: {JNR006: off} and ignore: [{rules: [...], kind, name, files}])", path, err)
	}
	for id, v := range c.Rules {
		if _, ok := RuleByID(id); !ok {
			return nil, fmt.Errorf("%s: rules.%s: no such rule (fix: name one of %s)", path, id, ruleIDs())
		}
		if _, ok := ParseSeverity(v); !ok && v != "off" {
			return nil, fmt.Errorf("%s: rules.%s: %q is not off, error, warning or note", path, id, v)
		}
	}
	for i, ig := range c.Ignore {
		if len(ig.Rules) == 0 {
			return nil, fmt.Errorf("%s: ignore[%d].rules: empty (fix: list the rule IDs to silence, e.g. rules: [JNR006])", path, i)
		}
		for _, id := range ig.Rules {
			if _, ok := RuleByID(id); !ok {
				return nil, fmt.Errorf("%s: ignore[%d].rules: %q: no such rule (fix: name one of %s)", path, i, id, ruleIDs())
			}
		}
		if _, err := filepath.Match(ig.Files, ""); err != nil {
			return nil, fmt.Errorf("%s: ignore[%d].files: %q: %w", path, i, ig.Files, err)
		}
	}
	return &c, nil
}

func ruleIDs() string {
	ids := make([]string, len(Rules))
	for i, r := range Rules {
		ids[i] = r.ID
	}
	return strings.Join(ids, ", ")
}

// apply sets a finding's severity from the config and says whether it is
// silenced; annotated are the rules the resource's annotation silences.
func (c *Config) apply(f *Finding, annotated []string) (silenced bool) {
	if slices.Contains(annotated, f.Rule) {
		return true
	}
	if c == nil {
		return false
	}
	if v, ok := c.Rules[f.Rule]; ok {
		if v == "off" {
			return true
		}
		f.Severity, _ = ParseSeverity(v)
	}
	for _, ig := range c.Ignore {
		if !slices.Contains(ig.Rules, f.Rule) ||
			(ig.Kind != "" && ig.Kind != f.Kind) || (ig.Name != "" && ig.Name != f.Name) {
			continue
		}
		if ig.Files != "" {
			if ok, _ := filepath.Match(ig.Files, filepath.ToSlash(f.File)); !ok {
				continue
			}
		}
		return true
	}
	return false
}

// annotatedIgnores reads the IgnoreAnnotation of a raw object.
func annotatedIgnores(obj map[string]any) []string {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	s, _ := ann[IgnoreAnnotation].(string)
	var ids []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}
