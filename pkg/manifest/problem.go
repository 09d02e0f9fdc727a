package manifest

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with one document of one file, said so a person
// can fix it: where (file, line, document, object, field), what, and how.
type Problem struct {
	File    string
	Line    int // 1-based; 0 when unknown
	Doc     int // 1-based index of the YAML document in the file
	Kind    string
	Name    string
	Field   string // JSON path such as spec.disruption.consolidateAfter
	Message string
	Fix     string
	// Deprecated marks input from an older API version that has a v1 replacement.
	Deprecated bool
	// Replacement is the whole document(s) to use instead, as YAML, when the
	// input's kind was replaced (Provisioner → NodePool, …).
	Replacement string
	// Warning marks something Joiner cannot check or model that upstream
	// Karpenter accepts: said, but not a reason to fail.
	Warning bool
	// Rule is the CRD validation rule that failed, when code needs to
	// know which (empty otherwise).
	Rule SchemaRule
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	switch {
	case p.Kind != "" && p.Name != "":
		fmt.Fprintf(&b, "%s %q (document %d): ", p.Kind, p.Name, p.Doc)
	case p.Kind != "":
		fmt.Fprintf(&b, "%s (document %d): ", p.Kind, p.Doc)
	case p.Doc > 0:
		fmt.Fprintf(&b, "document %d: ", p.Doc)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	if p.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString("\n    fix: ")
		b.WriteString(strings.ReplaceAll(p.Fix, "\n", "\n         "))
	}
	if p.Replacement != "" {
		b.WriteString("\n    replacement:\n        ")
		b.WriteString(strings.ReplaceAll(p.Replacement, "\n", "\n        "))
	}
	return b.String()
}

// Errors returns the problems that are not warnings.
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Warning {
			out = append(out, p)
		}
	}
	return out
}

// Problems is a list of problems that is itself an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}
