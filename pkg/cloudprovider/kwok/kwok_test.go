package kwok

import (
	"context"
	"math/rand"
	goruntime "runtime"
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
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
)

// catalogTypes are the embedded catalog's instance types in us-east-1.
func catalogTypes(t *testing.T) []*cloudprovider.InstanceType {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	types, _, err := cat.InstanceTypes(catalog.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// fakeAPI is an API server's client for the provider's Nodes.
func fakeAPI(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).Build()
}

// newProvider is the kwok provider of one controller process over c.
func newProvider(t *testing.T, c client.Client) *Provider {
	t.Helper()
	p, err := New(c, catalogTypes(t), clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
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
	c := fakeAPI(t)
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

// TestSpotInterruptions: at SpotInterruptionsPerNodeHour a spot instance
// gets its notice when the simulator's draw says, and is reclaimed (its
// Node gone) two minutes later; an on-demand instance never is.
func TestSpotInterruptions(t *testing.T) {
	ctx := context.Background()
	c := fakeAPI(t)
	const seed, rate = 7, 2.0
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := NewWithOptions(c, catalogTypes(t), Options{Clock: clk, Rand: rand.New(rand.NewSource(seed)), SpotInterruptionsPerNodeHour: rate})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.xlarge"}},
		{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
	}
	if err := p.SetNodePools([]*v1.NodePool{np}); err != nil {
		t.Fatal(err)
	}
	launch := func(name, capacityType string) *v1.NodeClaim {
		nc := claim(name)
		nc.Spec.Requirements[1].Values = []string{capacityType}
		launched, err := p.Create(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		if got := launched.Labels[v1.LabelCapacityType]; got != capacityType {
			t.Fatalf("%s launched %s, want %s", name, got, capacityType)
		}
		return launched
	}
	spot := launch("general-spot", v1.CapacityTypeSpot)
	launch("general-od", v1.CapacityTypeOnDemand)
	wait := simcloud.SpotInterruption(rand.New(rand.NewSource(seed)), rate) // the first draw: the spot launch's

	nodes := func() int {
		var list corev1.NodeList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	// The timers' functions run on goroutines of their own: wait for what
	// they write, never for a time.
	notice := func() *cloudprovider.Interruption {
		select {
		case n := <-p.Interruptions():
			return &n
		default:
			return nil
		}
	}
	clk.Step(wait - time.Second)
	if n := notice(); n != nil {
		t.Fatalf("a notice for %s before its draw (%s)", n.ProviderID, wait)
	}
	clk.Step(time.Second)
	var got cloudprovider.Interruption
	select {
	case got = <-p.Interruptions():
	case <-time.After(10 * time.Second):
		t.Fatalf("no interruption notice %s after the spot launch", wait)
	}
	if got.ProviderID != spot.Status.ProviderID || got.Kind != cloudprovider.SpotInterruption {
		t.Errorf("notice %+v, want a SpotInterruption of %s", got, spot.Status.ProviderID)
	}
	if n := nodes(); n != 2 {
		t.Fatalf("%d Nodes at the notice, want both instances still there", n)
	}
	// The notice's timer is set by the goroutine that sent it.
	for !clk.HasWaiters() {
		goruntime.Gosched()
	}
	clk.Step(simcloud.InterruptionNotice)
	deadline := time.Now().Add(10 * time.Second)
	for nodes() != 1 && time.Now().Before(deadline) {
		goruntime.Gosched()
	}
	if _, err := p.Get(ctx, spot.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("the spot instance after its notice and %s: %v, want reclaimed", simcloud.InterruptionNotice, err)
	}
	if n := nodes(); n != 1 {
		t.Errorf("%d Nodes after the reclaim, want the on-demand one", n)
	}
	clk.Step(1000 * time.Hour)
	if n := notice(); n != nil {
		t.Errorf("a notice for %s: on-demand instances are not interrupted", n.ProviderID)
	}
}
