package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintExitCodes: 0 clean, 1 findings at or above --fail-on, 2 when the
// lint cannot run; -o json carries the same findings.
func TestLintExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// pool has no limits and consolidates at once: warnings (JNR006, JNR010), no error.
	poolFile := write("pool.yaml", pool)
	write("nodeclass.yaml", nodeClass)
	cfgDir := t.TempDir()
	badConfig := filepath.Join(cfgDir, "bad.yaml")
	offConfig := filepath.Join(cfgDir, "off.yaml")
	for p, body := range map[string]string{badConfig: "rules: {JNR999: off}\n", offConfig: "rules: {JNR006: off, JNR010: off}\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"warning below error", []string{dir}, 0, "JNR006"},
		{"fail on warning", []string{"--fail-on", "warning", dir}, 1, "warning JNR006"},
		{"silenced by config", []string{"--fail-on", "warning", "--config", offConfig, dir}, 0, "2 silenced"},
		{"missing path", []string{filepath.Join(dir, "nope")}, 2, ""},
		{"no Karpenter object", []string{cfgDir}, 2, ""},
		{"bad config", []string{"--config", badConfig, dir}, 2, ""},
		{"bad fail-on", []string{"--fail-on", "sometimes", dir}, 2, ""},
		{"json", []string{"-o", "json", poolFile}, 1, `"rule": "JNR006"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCommand(&out, &errOut)
			root.SetArgs(append([]string{"lint"}, c.args...))
			code := 0
			if err := root.Execute(); err != nil {
				code, _ = exitCode(err)
			}
			if code != c.code || !strings.Contains(out.String(), c.out) {
				t.Errorf("exit %d, want %d; output:\n%s", code, c.code, out.String())
			}
			if c.name == "json" {
				var v struct {
					Findings []map[string]any `json:"findings"`
				}
				if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Findings) == 0 || v.Findings[0]["severity"] != "warning" {
					t.Errorf("json: %v %s", err, out.String())
				}
			}
		})
	}
}

// TestDiffCommand: exit 1 on differences, 0 on a cluster against itself,
// 2 when a side cannot be read; -o json.
func TestDiffCommand(t *testing.T) {
	root := filepath.Join("..", "..", "examples", "clusters")
	staging, production := filepath.Join(root, "staging"), filepath.Join(root, "production")
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{staging, production}, 1, "NodePool      general  spec.limits.cpu"},
		{[]string{production, production}, 0, "0 field differences"},
		{[]string{"-o", "json", staging, production}, 1, `"field": "spec.template.spec.terminationGracePeriod"`},
		{[]string{staging, filepath.Join(root, "nope")}, 2, ""},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		cmd := newRootCommand(&out, &errOut)
		cmd.SetArgs(append([]string{"diff"}, c.args...))
		code := 0
		if err := cmd.Execute(); err != nil {
			code, _ = exitCode(err)
		}
		if code != c.code || !strings.Contains(out.String(), c.out) {
			t.Errorf("diff %v: exit %d, want %d; output:\n%s", c.args, code, c.code, out.String())
		}
	}
}

// TestDriftCommandCannotRun: without a cluster to compare, exit 2.
func TestDriftCommandCannotRun(t *testing.T) {
	for _, args := range [][]string{
		{"drift", "."},
		{"drift", ".", "--kubeconfig", filepath.Join(t.TempDir(), "none")},
		{"drift", ".", "--kubeconfig", "x", "-o", "yaml"},
	} {
		var out, errOut bytes.Buffer
		cmd := newRootCommand(&out, &errOut)
		cmd.SetArgs(args)
		err := cmd.Execute()
		if code, _ := exitCode(err); err == nil || code != 2 {
			t.Errorf("%v: exit %d (%v), want 2", args, code, err)
		}
	}
}
