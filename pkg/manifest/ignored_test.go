package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// TestIgnoredLines: one line per reason, in the order first met; a line
// names at most perLine objects and counts the rest.
func TestIgnoredLines(t *testing.T) {
	var ig []Ignored
	for i := 1; i <= 12; i++ {
		ig = append(ig, NewIgnored(&Document{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("cm%d", i), Namespace: "a", File: "cm.yaml", Line: i}, ""))
	}
	ig = append(ig, NewIgnored(&Document{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass", Name: "gpu", File: "b.yaml", Line: 3}, ""),
		NewIgnored(&Document{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", File: "w.yaml"}, ""))
	got := IgnoredLines(ig, 10)
	want := []string{
		"ConfigMap a/cm1 (cm.yaml:1), ConfigMap a/cm2 (cm.yaml:2), ConfigMap a/cm3 (cm.yaml:3), ConfigMap a/cm4 (cm.yaml:4), ConfigMap a/cm5 (cm.yaml:5), " +
			"ConfigMap a/cm6 (cm.yaml:6), ConfigMap a/cm7 (cm.yaml:7), ConfigMap a/cm8 (cm.yaml:8), ConfigMap a/cm9 (cm.yaml:9), ConfigMap a/cm10 (cm.yaml:10), and 2 more: no bearing on scheduling or cost",
		"DeviceClass gpu (b.yaml:3): Dynamic Resource Allocation is not modelled: the devices it selects are left out",
		"Widget w (w.yaml): example.com/v1 Widget is not modelled",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if all := IgnoredLines(ig, 0); !strings.Contains(all[0], "cm12") {
		t.Errorf("perLine 0 names every object: %s", all[0])
	}
}

// TestOldDRAVersionsSaySo: a DRA object of a version Joiner does not read
// says which one it does, not that DRA is ignored.
func TestOldDRAVersionsSaySo(t *testing.T) {
	for _, v := range []string{"resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"} {
		if why := WhyIgnored(v, "ResourceClaimTemplate"); !strings.Contains(why, v+" is not read") || !strings.Contains(why, "resource.k8s.io/v1 ") {
			t.Errorf("%s: %q", v, why)
		}
	}
	if why := WhyIgnored("resource.k8s.io/v1", "ResourceSlice"); strings.Contains(why, "is not read") {
		t.Errorf("v1: %q", why)
	}
}
