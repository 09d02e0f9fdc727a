package lint

import (
	"cmp"
	"slices"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// Finding is one rule's verdict on one place of one file.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"-"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Kind     string   `json:"kind,omitempty"`
	Name     string   `json:"name,omitempty"`
	Field    string   `json:"field,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
	// Replacement is the whole v1 document to use instead, for old-API
	// input whose kind was replaced.
	Replacement string `json:"replacement,omitempty"`
	// Fixable: `joiner lint --fix` rewrites it.
	Fixable bool `json:"fixable,omitempty"`
	// doc is the document the finding is on, for its annotation; nil for
	// a file that did not parse.
	doc *manifest.Document
	// schemaRule is the CRD rule an invalid finding reports, if any.
	schemaRule manifest.SchemaRule
}

// Result is one lint run.
type Result struct {
	Findings []Finding
	// Files and Objects read; Silenced findings that the config file or
	// an annotation turned off.
	Files, Objects, Silenced int
}

// Count returns how many findings are at or above s.
func (r *Result) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= s {
			n++
		}
	}
	return n
}

func sortFindings(fs []Finding, fileOrder map[string]int) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(fileOrder[a.File], fileOrder[b.File]),
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Message, b.Message),
		)
	})
}
