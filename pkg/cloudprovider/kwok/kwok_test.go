package kwok

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// newProvider is the kwok provider of one controller process over c.
func newProvider(t *testing.T, c client.Client) *Provider {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	types, _, err := cat.InstanceTypes(catalog.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(c, types, clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.xlarge"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
	}
	if err := p.SetNodePools([]*v1.NodePool{np}); err != nil {
		t.Fatal(err)
	}
	return p
}

func claim(name string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "general"}}}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.xlarge"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
	}
	return nc
}

// TestProviderIDsSurviveARestart: a controller restarted (a new Provider
// over the same API server) gives its instances provider IDs no instance
// launched before it has — the simulated EC2 underneath counts from 1 in
// every process, and two Nodes with one provider ID made a restarted
// controller register a new claim to an old claim's Node, leaving the new
// Node unregistered for good. A launch the killed controller made but did
// not record on its claim is found again, not made twice.
func TestProviderIDsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	first, restarted := newProvider(t, c), newProvider(t, c)

	a, err := first.Create(ctx, claim("general-a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := restarted.Create(ctx, claim("general-b"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Status.ProviderID == b.Status.ProviderID || !strings.HasPrefix(a.Status.ProviderID, ProviderIDPrefix) {
		t.Fatalf("provider IDs %q and %q: want two, each %s and the claim's name", a.Status.ProviderID, b.Status.ProviderID, ProviderIDPrefix)
	}

	// The restarted controller launches general-a again: its Node is there.
	again, err := restarted.Create(ctx, claim("general-a"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != a.Status.ProviderID || again.Labels[v1.LabelInstanceType] != "m6i.xlarge" ||
		again.Labels[v1.LabelZone] != a.Labels[v1.LabelZone] || !again.Status.Allocatable.Cpu().Equal(*a.Status.Allocatable.Cpu()) {
		t.Errorf("relaunched: %q %v %v, want the first launch's %q %v %v", again.Status.ProviderID, again.Labels, again.Status.Allocatable,
			a.Status.ProviderID, a.Labels, a.Status.Allocatable)
	}
	instances, err := restarted.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(instances) != 2 {
		t.Fatalf("%d instances after two launches and a repeated one, want 2", len(instances))
	}

	// The restarted process terminates both.
	for _, nc := range []*v1.NodeClaim{a, b} {
		if err := restarted.Delete(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := first.Get(ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("after Delete, Get %s: %v, want not found", a.Status.ProviderID, err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil || len(nodes.Items) != 0 {
		t.Errorf("%d Nodes left (%v)", len(nodes.Items), err)
	}
	if len(restarted.simIDs) != 0 {
		t.Errorf("simulated instances kept after their Nodes went: %v", restarted.simIDs)
	}
}
