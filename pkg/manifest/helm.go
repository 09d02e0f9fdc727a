package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// fileKind is where a file was found, for helmActionLine.
type fileKind int

const (
	// plainFile: anywhere but a chart's templates/ directory.
	plainFile fileKind = iota
	// chartTemplate: in a chart's templates/ directory.
	chartTemplate
)

// helmActionLine returns the 1-based line of the first Helm template action
// ({{ … }}) in data, a file of kind kind, or 0. Outside a chart's
// templates/ directory only an action outside quoted strings and comments
// counts: "{{ x }}" in a quoted value can be a plain string (an
// annotation, a message template).
func helmActionLine(data []byte, kind fileKind) int {
	inChart := kind == chartTemplate
	if !bytes.Contains(data, []byte("{{")) {
		return 0 // the common case, at memory speed: a large dump is slow line by line
	}
	block := -1 // indentation of the key that opened a block scalar, or -1
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := string(raw)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if block >= 0 && (strings.TrimSpace(line) == "" || indent > block) {
			if inChart && strings.Contains(line, "{{") {
				return i + 1
			}
			continue // text of a block scalar (|, >): a string whatever it holds
		}
		block = -1
		if strings.ContainsAny(line, "|>") && blockScalarStart.MatchString(line) {
			block = indent
		}
		if strings.Contains(line, "{{") && (inChart || unquotedAction(line)) {
			return i + 1
		}
	}
	return 0
}

var blockScalarStart = regexp.MustCompile(`^\s*(- )?[^#'"]*:\s+[|>][-+0-9]*\s*(#.*)?$|^\s*- [|>][-+0-9]*\s*$`)

// unquotedAction: does "{{" appear in line outside '…', "…" and a # comment?
func unquotedAction(line string) bool {
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t' || i == 0):
			return false
		case r == '{' && strings.HasPrefix(line[i:], "{{"):
			return true
		}
		prev = r
	}
	return false
}

// inChartTemplates reports whether path is below the templates/ directory of
// a Helm chart (a directory with Chart.yaml).
func inChartTemplates(path string) bool {
	dir := filepath.Dir(path)
	for {
		if filepath.Base(dir) == "templates" {
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "Chart.yaml")); err == nil {
				return true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

func helmProblem(file string, line int) Problem {
	return Problem{File: file, Line: line, Message: "this is a Helm template ({{ … }}), not a manifest: render it first",
		Fix: "helm template RELEASE CHART_DIR > rendered.yaml, then validate rendered.yaml (or pipe: helm template RELEASE CHART_DIR | joiner validate -)"}
}
