package tune

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// UnifiedDiff is a unified diff of two texts by line (three lines of
// context), empty when they are equal: go-difflib's, as `diff -u` prints
// it.
func UnifiedDiff(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: splitLines(a), B: splitLines(b), FromFile: fromName, ToFile: toName, Context: 3})
	if err != nil { // it writes to a strings.Builder, which does not fail
		panic(err)
	}
	return d
}

// splitLines are the text's lines, each with its newline (difflib's
// input).
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] += "\n"
	}
	return lines
}
