package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestColourKeepsAlignment: on a terminal the verdicts are coloured — a
// refusal red, an answer that acts or can run green — and, the colour
// codes taken out, the lines are those printed to a pipe: columns stay
// aligned. A pipe gets no escape code at all.
func TestColourKeepsAlignment(t *testing.T) {
	node := &plan.NodeExplanation{Node: "n1", Methods: []plan.Method{{Method: "expiration", Why: "not yet"},
		{Method: "single-node consolidation", Acts: true, Why: "replaced"}}}
	pod := &plan.PodExplanation{Pod: "a/b", Requests: map[string]string{"cpu": "1"}, Result: "stays pending",
		Pools: []plan.PoolVerdict{{NodePool: "gpu", Weight: 10, Why: "taint"},
			{NodePool: "general", Weight: 1, CanRun: true, NodeClaim: &plan.NodeClaim{InstanceTypes: []string{"m6i.large"}, PriceUSDPerHour: 0.096}}}}
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, palette)
		red   string
		green string
	}{
		{"node", func(b *bytes.Buffer, p palette) { writeNodeExplanation(b, node, p) }, "\x1b[31mno\x1b[0m", "\x1b[32mACTS\x1b[0m"},
		{"pod", func(b *bytes.Buffer, p palette) { _ = writePodExplanation(b, pod, p) }, "\x1b[31mno\x1b[0m", "\x1b[32myes\x1b[0m"},
	} {
		var plain, coloured bytes.Buffer
		tc.write(&plain, palette{})
		tc.write(&coloured, palette{on: true})
		if ansi.MatchString(plain.String()) {
			t.Errorf("%s: escape codes without a terminal:\n%q", tc.name, plain.String())
		}
		for _, want := range []string{tc.red, tc.green} {
			if !strings.Contains(coloured.String(), want) {
				t.Errorf("%s: coloured output lacks %q:\n%q", tc.name, want, coloured.String())
			}
		}
		if got := ansi.ReplaceAllString(coloured.String(), ""); got != plain.String() {
			t.Errorf("%s: coloured, the codes taken out:\n%s\nplain:\n%s", tc.name, got, plain.String())
		}
	}
}
