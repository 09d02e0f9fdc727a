package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// A notice that the instance goes deletes its claim at once; a rebalance
// recommendation is an Event only; a notice for an instance no claim has
// is done.
func TestInterruption(t *testing.T) {
	for _, tc := range []struct {
		kind       cloudprovider.InterruptionKind
		providerID string
		deleted    bool
		event      string
	}{
		{cloudprovider.SpotInterruption, "p:///zone-a/i-1", true, "Warning SpotInterruption"},
		{cloudprovider.InstanceTerminating, "p:///zone-a/i-1", true, "Warning InstanceTerminating"},
		{cloudprovider.RebalanceRecommendation, "p:///zone-a/i-1", false, "Normal RebalanceRecommendation"},
		{cloudprovider.SpotInterruption, "p:///zone-a/i-9", false, ""},
	} {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a", Labels: map[string]string{v1.LabelNodePool: "general"}},
			Status: v1.NodeClaimStatus{ProviderID: "p:///zone-a/i-1", NodeName: "node-1"}}
		kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(nc.DeepCopy()).Build()
		s := state.NewStore(state.WaitForScheduler)
		s.SetNodeClaim(nc)
		s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: "p:///zone-a/i-1"}})
		rec := events.NewFakeRecorder(10)
		i := &interruption{client: kube, store: s, events: recorder{r: rec}}

		if err := i.handle(context.Background(), cloudprovider.Interruption{ProviderID: tc.providerID, Kind: tc.kind}); err != nil {
			t.Fatalf("%s of %s: %v", tc.kind, tc.providerID, err)
		}
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(nc), &v1.NodeClaim{})
		if deleted := apierrors.IsNotFound(err); deleted != tc.deleted {
			t.Errorf("%s of %s: claim deleted %v, want %v (%v)", tc.kind, tc.providerID, deleted, tc.deleted, err)
		}
		var got string
		select {
		case got = <-rec.Events:
		default:
		}
		if !strings.HasPrefix(got, tc.event) || (tc.event == "") != (got == "") {
			t.Errorf("%s of %s: event %q, want one starting %q", tc.kind, tc.providerID, got, tc.event)
		}
	}
}
