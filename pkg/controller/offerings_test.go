package controller

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// versionedCloud is a stub whose offerings have a version.
type versionedCloud struct {
	*stubCloud
	version int
}

func (v *versionedCloud) Version() int { return v.version }

// The cloud is asked for instance types only when they may have changed:
// marked stale (a NodePool, NodeOverlay or NodeClass changed) or a new
// offerings version; a pool whose NodeClass is not ready is left out; a
// refresh that failed is tried again by the next.
func TestOfferingsRefresh(t *testing.T) {
	ctx := context.Background()
	pools := []*v1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "general"}}, {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}}
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(pools[0], pools[1]).Build()
	cloud := &versionedCloud{stubCloud: &stubCloud{types: []*cloudprovider.InstanceType{instanceType("m.4x", 0.2)},
		errs: map[string]error{"gpu": cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets"))}}}
	caps := DiscoverCapabilities(cloud)
	s := state.NewStore(state.WaitForScheduler)
	o := &offerings{store: s, reader: kube, cloud: metered{cloud, clocktesting.NewFakeClock(t0)}, pools: caps.NodePools, version: caps.Offerings}

	refresh := func(what string, wantAsked int) {
		t.Helper()
		before := cloud.calls()
		if err := o.refresh(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := cloud.calls() - before; got != wantAsked {
			t.Errorf("%s: the cloud was asked %d times, want %d", what, got, wantAsked)
		}
	}
	refresh("nothing changed", 0)
	o.markStale()
	refresh("marked stale", 2)
	snap := s.ProvisioningSnapshot()
	if len(snap.NodePools) != 2 || len(snap.InstanceTypes["general"]) != 1 || snap.InstanceTypes["gpu"] != nil {
		t.Errorf("the Store has %d pools and instance types %v: want both pools, general's types, none for gpu (NodeClass not ready)",
			len(snap.NodePools), snap.InstanceTypes)
	}
	refresh("refreshed, nothing changed since", 0)
	cloud.version++
	refresh("the offerings' version moved", 2)

	cloud.errs["general"] = errors.New("throttled")
	o.markStale()
	if err := o.refresh(ctx); err == nil {
		t.Fatal("a failed refresh returns no error")
	}
	delete(cloud.errs, "general")
	refresh("after a failed refresh", 2)
}
