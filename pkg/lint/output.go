package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// WriteText writes one finding a line, file:line:column: severity ID
// message, its fix indented below, and a summary.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s:%d:%d: %s %s %s\n", f.File, f.Line, f.Column, f.Severity, f.Rule, f.subject()+f.Message)
		if f.Fix != "" {
			fmt.Fprintf(&b, "    fix: %s\n", strings.ReplaceAll(f.Fix, "\n", "\n         "))
		}
		if f.Replacement != "" {
			fmt.Fprintf(&b, "    replacement:\n        %s\n", strings.ReplaceAll(strings.TrimRight(f.Replacement, "\n"), "\n", "\n        "))
		}
	}
	fmt.Fprintf(&b, "%s, %s, %s in %s and %s", plural(r.count(Error), "error"), plural(r.count(Warning), "warning"),
		plural(r.count(Note), "note"), plural(r.Files, "file"), plural(r.Objects, "object"))
	if r.Silenced > 0 {
		fmt.Fprintf(&b, " (%d silenced)", r.Silenced)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// subject names the object and field a finding is on.
func (f Finding) subject() string {
	s := ""
	if f.Kind != "" && f.Name != "" {
		s = fmt.Sprintf("%s %q: ", f.Kind, f.Name)
	}
	if f.Field != "" {
		s += f.Field + ": "
	}
	return s
}

func (r *Result) count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// jsonFinding is a finding with its severity by name.
type jsonFinding struct {
	Severity string `json:"severity"`
	Finding
}

// WriteJSON writes the findings and the counts as one JSON object.
func WriteJSON(w io.Writer, r *Result) error {
	out := struct {
		Findings []jsonFinding  `json:"findings"`
		Summary  map[string]int `json:"summary"`
	}{Findings: []jsonFinding{}, Summary: map[string]int{
		"errors": r.count(Error), "warnings": r.count(Warning), "notes": r.count(Note),
		"files": r.Files, "objects": r.Objects, "silenced": r.Silenced}}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, jsonFinding{f.Severity.String(), f})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// SARIF 2.1.0, the parts code-scanning services read.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string        `json:"id"`
	Name                 string        `json:"name"`
	ShortDescription     sarifMessage  `json:"shortDescription"`
	DefaultConfiguration sarifRuleConf `json:"defaultConfiguration"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

// WriteSARIF writes the findings as a SARIF 2.1.0 log, every rule in the
// driver and each result pointing at its rule; file paths as relative URIs.
func WriteSARIF(w io.Writer, r *Result, version string) error {
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "joiner lint", Version: version,
		InformationURI: "https://github.com/joiner-autoscaler/joiner"}}, Results: []sarifResult{}}
	index := map[string]int{}
	for i, rule := range Rules {
		index[rule.ID] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: rule.ID, Name: rule.Name,
			ShortDescription: sarifMessage{rule.Summary}, DefaultConfiguration: sarifRuleConf{rule.Severity.String()}})
	}
	for _, f := range r.Findings {
		msg := f.subject() + f.Message
		if f.Fix != "" {
			msg += "\nfix: " + f.Fix
		}
		run.Results = append(run.Results, sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: f.Severity.String(),
			Message:   sarifMessage{msg},
			Locations: []sarifLocation{{sarifPhysical{sarifArtifact{artifactURI(f.File)}, sarifRegion{f.Line, f.Column}}}}})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

// artifactURI is a file as SARIF names it: a relative path as a relative
// URI reference (to the repository root code scanning resolves it from),
// an absolute one as a file:// URI.
func artifactURI(file string) string {
	p := filepath.ToSlash(file)
	if filepath.IsAbs(file) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}

// WriteDiffTable writes a cluster diff as aligned columns: resources in
// one cluster only, names that are not uniform, then field differences.
func WriteDiffTable(w io.Writer, d *ClusterDiff) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "KIND\tNAME\tFIELD\t%s\t%s\n", d.A, d.B)
	for _, r := range d.OnlyInA {
		fmt.Fprintf(tw, "%s\t%s\t(only in %s, %s:%d)\tpresent\t-\n", r.Kind, r.Name, d.A, r.File, r.Line)
	}
	for _, r := range d.OnlyInB {
		fmt.Fprintf(tw, "%s\t%s\t(only in %s, %s:%d)\t-\tpresent\n", r.Kind, r.Name, d.B, r.File, r.Line)
	}
	for _, p := range d.NonUniformNames {
		fmt.Fprintf(tw, "%s\t%s / %s\t(non-uniform names: %s)\t%s\t%s\n", p.Kind, p.A, p.B, p.Why, p.A, p.B)
	}
	for _, f := range d.Fields {
		name := f.Name
		if f.NameB != "" {
			name += " / " + f.NameB
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Kind, name, f.Field, Value(f.A), Value(f.B))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s only in %s, %s only in %s, %s, %s\n",
		plural(len(d.OnlyInA), "resource"), d.A, plural(len(d.OnlyInB), "resource"), d.B,
		plural(len(d.NonUniformNames), "non-uniform name"), plural(len(d.Fields), "field difference"))
	return err
}

// WriteDiffJSON writes a cluster diff as one JSON object.
func WriteDiffJSON(w io.Writer, d *ClusterDiff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
