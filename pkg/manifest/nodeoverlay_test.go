package manifest

import (
	"strings"
	"testing"
)

// TestNodeOverlayAnswers: each mistake in a NodeOverlay is named at its
// field with a fix that says what to write; a correct one decodes.
func TestNodeOverlayAnswers(t *testing.T) {
	v := mustValidator(t)
	const head = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o}\nspec:\n  requirements: [{key: team, operator: In, values: [ml]}]\n"
	for _, tc := range []struct {
		body, field, fix string
	}{
		{"  price: \"0.5\"\n  priceAdjustment: \"+1\"\n", "spec", "keep one"},
		{"  priceAdjustment: \"10%\"\n", "spec.priceAdjustment", "+10% or -15%"},
		{"  price: \"-1\"\n", "spec.price", "unsigned"},
		{"  capacity: {memory: 1Gi}\n", "spec.capacity", "extended resources only"},
		{"  weight: 0\n", "spec.weight", ""},
	} {
		ps := v.Validate(parseOne(t, head+tc.body))
		found := false
		for _, p := range ps {
			found = found || p.Field == tc.field && strings.Contains(p.Fix, tc.fix)
		}
		if !found {
			t.Errorf("%q: want a problem at %s with fix %q, got %v", tc.body, tc.field, tc.fix, ps)
		}
	}
	obj, ps := v.Decode(parseOne(t, head+"  weight: 5\n  priceAdjustment: \"-20%\"\n"))
	if len(ps) > 0 || obj == nil {
		t.Fatalf("a valid overlay: %v %v", obj, ps)
	}
}
