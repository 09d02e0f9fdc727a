package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// resolver resolves every NodeClass to one subnet, or fails with err.
type resolver struct{ err error }

func (r *resolver) ResolveNodeClass(context.Context, *awsv1.EC2NodeClass) (awsv1.EC2NodeClassStatus, error) {
	if r.err != nil {
		return awsv1.EC2NodeClassStatus{}, r.err
	}
	return awsv1.EC2NodeClassStatus{Subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "zone-a"}}}, nil
}

// A NodeClass resolved is Ready with what it resolved to, and its pools'
// instance types are asked for again; one that fails to resolve is Ready
// False with the error, keeps what it last resolved to (running nodes are
// not taken for drifted), and is tried again in a minute.
func TestNodeClassStatus(t *testing.T) {
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(nc).WithStatusSubresource(nc).Build()
	changed := 0
	res := &resolver{}
	r := &nodeClassStatus{client: kube, events: recorder{r: events.NewFakeRecorder(10)}, resolver: res, changed: func() { changed++ }}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}
	get := func() *awsv1.EC2NodeClass {
		t.Helper()
		got := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	result, err := r.reconcile(ctx, req)
	if err != nil || result.RequeueAfter != nodeClassResync {
		t.Fatalf("resolved: %v, %+v", err, result)
	}
	got := get()
	if !meta.IsStatusConditionTrue(got.Status.Conditions, ConditionReady) || len(got.Status.Subnets) != 1 || changed != 1 {
		t.Fatalf("resolved: conditions %v, subnets %v, instance types asked again %d times; want Ready, one subnet, once",
			got.Status.Conditions, got.Status.Subnets, changed)
	}
	if _, err := r.reconcile(ctx, req); err != nil || changed != 1 {
		t.Fatalf("resolved the same again: %v; instance types asked again %d times, want still once", err, changed)
	}

	res.err = errors.New("no subnet matches subnetSelectorTerms")
	result, err = r.reconcile(ctx, req)
	if err != nil || result.RequeueAfter.Minutes() != 1 {
		t.Fatalf("failed: %v, %+v", err, result)
	}
	got = get()
	ready := meta.FindStatusCondition(got.Status.Conditions, ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Message != res.err.Error() || len(got.Status.Subnets) != 1 || changed != 1 {
		t.Fatalf("failed: Ready %+v, subnets %v, instance types asked again %d times; want Ready False with the error, the subnet kept, still once",
			ready, got.Status.Subnets, changed)
	}
}

func TestReservationsReadyCondition(t *testing.T) {
	nc := &awsv1.EC2NodeClass{}
	nc.Generation = 3
	if c := reservationsReady(nc, nil, 2); c.Status != metav1.ConditionTrue || c.Message != "2 capacity reservation(s) selected" || c.ObservedGeneration != 3 {
		t.Errorf("resolved: %+v", c)
	}
	failed := cloudprovider.NewCapacityReservationsError(errors.New("describing capacity reservations: UnauthorizedOperation"))
	if c := reservationsReady(nc, fmt.Errorf("resolving: %w", failed), 0); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "UnauthorizedOperation") {
		t.Errorf("a describe that failed: %+v", c)
	}
	if c := reservationsReady(nc, errors.New("no subnet"), 0); c.Status != metav1.ConditionTrue {
		t.Errorf("another part failed: %+v, want the reservations' condition True", c)
	}
}
