package manifest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

func TestLocateFindsTheBadValue(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}}},
		map[string]any{"name": "b", "resources": map[string]any{"requests": map[string]any{"cpu": "500mb", "memory": "1Gi"}}},
	}}}
	decode := func(o map[string]any) error {
		b, _ := json.Marshal(o)
		return json.Unmarshal(b, &corev1.Pod{})
	}
	err := decode(obj)
	if err == nil {
		t.Fatal("want the bad quantity to fail")
	}
	if got := Locate(obj, decode); got != "spec.containers[1].resources.requests.cpu" {
		t.Errorf("Locate = %q", got)
	}
	if fix := ValueFix(err); fix == "" || fix[:5] != "write" {
		t.Errorf("fix for %q: %q", err, fix)
	}
	if got := Locate(map[string]any{"spec": map[string]any{}}, decode); got != "" {
		t.Errorf("nothing to find, got %q", got)
	}
}

// TestValueFixForShapes: a map where a list belongs, and a list where one
// value belongs, say which to write.
func TestValueFixForShapes(t *testing.T) {
	for msg, want := range map[string]string{
		"json: cannot unmarshal object into Go struct field SpaceSpec.spec.nodePools of type []tune.PoolKnobs":         "write a list here",
		"json: cannot unmarshal array into Go struct field Disruption.spec.disruption.consolidateAfter of type string": "write a single value or a map here",
		"json: cannot unmarshal number into Go struct field X of type string":                                          "check the field's type",
	} {
		if got := ValueFix(errors.New(msg)); !strings.HasPrefix(got, want) {
			t.Errorf("ValueFix(%q) = %q, want it to begin %q", msg, got, want)
		}
	}
}

// TestValueFixByKind: a decoder's quantity and time errors are known by
// their kind, not their words.
func TestValueFixByKind(t *testing.T) {
	var q struct {
		Q resource.Quantity `json:"q"`
	}
	var tm struct {
		T metav1.Time `json:"t"`
	}
	for _, tc := range []struct {
		json string
		into any
		want string
	}{
		{`{"q":"500mb"}`, &q, "write a Kubernetes quantity"},
		{`{"t":"yesterday"}`, &tm, "write an RFC 3339 time"},
	} {
		_, err := sigsjson.UnmarshalStrict([]byte(tc.json), tc.into)
		if err == nil {
			t.Fatalf("%s decoded", tc.json)
		}
		if got := ValueFix(err); !strings.HasPrefix(got, tc.want) {
			t.Errorf("ValueFix(%v) = %q, want %q…", err, got, tc.want)
		}
	}
}
