package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func instance(id string, age time.Duration) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: id, CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Status: v1.NodeClaimStatus{ProviderID: id}}
}

func claim(name, providerID string, launched, deleting bool) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeClaimStatus{ProviderID: providerID}}
	if launched {
		nc.Status.Conditions = []v1.Condition{{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue}}
	}
	if deleting {
		now := metav1.NewTime(t0)
		nc.DeletionTimestamp = &now
	}
	return nc
}

func names(ncs []*v1.NodeClaim) string {
	var out []string
	for _, nc := range ncs {
		out = append(out, nc.Name)
	}
	return strings.Join(out, ",")
}

// What garbage collection removes: instances no claim claims, once old
// enough for their claim to be in the cache; launched claims whose
// instance the cloud no longer runs, unless already going.
func TestGarbage(t *testing.T) {
	for _, tc := range []struct {
		name                string
		instances, claims   []*v1.NodeClaim
		wantUnclaimed, gone string
	}{
		{name: "all claimed", instances: []*v1.NodeClaim{instance("i-1", time.Hour)},
			claims: []*v1.NodeClaim{claim("a", "i-1", true, false)}},
		{name: "an old instance no claim claims", instances: []*v1.NodeClaim{instance("i-1", time.Hour), instance("i-2", time.Hour)},
			claims: []*v1.NodeClaim{claim("a", "i-1", true, false)}, wantUnclaimed: "i-2"},
		{name: "a young one is left: its claim may not be cached yet", instances: []*v1.NodeClaim{instance("i-2", gcInstanceAge-time.Second)}},
		{name: "exactly gcInstanceAge old", instances: []*v1.NodeClaim{instance("i-2", gcInstanceAge)}, wantUnclaimed: "i-2"},
		{name: "a launched claim whose instance is gone", claims: []*v1.NodeClaim{claim("a", "i-1", true, false)}, gone: "a"},
		{name: "not launched yet, or no provider ID", claims: []*v1.NodeClaim{claim("a", "i-1", false, false), claim("b", "", true, false)}},
		{name: "already being deleted", claims: []*v1.NodeClaim{claim("a", "i-1", true, true)}},
	} {
		unclaimed, gone := garbage(tc.instances, tc.claims, t0)
		if names(unclaimed) != tc.wantUnclaimed || names(gone) != tc.gone {
			t.Errorf("%s: terminate %q and delete claims %q, want %q and %q", tc.name, names(unclaimed), names(gone), tc.wantUnclaimed, tc.gone)
		}
	}
}
