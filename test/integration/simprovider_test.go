//go:build integration

package integration

import (
	"context"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// TestSimProviderBootsOnItsClock: the sim provider's instance has no Node
// until its launch and registration latencies have passed on the injected
// clock; then its Node registers as a kubelet's would (not Ready, the
// claim's taints and the unregistered one, annotated for kwok); after the
// initialization latency it is Ready, the not-ready taint lifted. A booting
// instance is listed (garbage collection must not take its claim), and
// deleting it ends its boot. One whose Node never registers stays listed
// for the registration TTL to find.
func TestSimProviderBootsOnItsClock(t *testing.T) {
	ctx := context.Background()
	_, kc := controllerClient(t)
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	types := catalogTypes(t, catalog.Options{Region: "us-east-1"})
	boot := simcloud.BootModel{Launch: simcloud.Latency{Mean: 10 * time.Second}, Registration: simcloud.Latency{Mean: 20 * time.Second},
		Initialization: simcloud.Latency{Mean: 5 * time.Second}}
	provider, err := kwok.NewWithOptions(kc, types, kwok.Options{Name: "sim", Clock: clk, Boot: &boot, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "simboot"}}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large"}}}
	if err := provider.SetNodePools([]*v1.NodePool{np}); err != nil {
		t.Fatal(err)
	}
	claim := func(name string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: np.Name}}}
		nc.Spec.Requirements = scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m6i.large"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)).NodeSelectorRequirements()
		nc.Spec.Taints = []corev1.Taint{{Key: "simboot", Effect: corev1.TaintEffectNoSchedule}}
		return nc
	}
	launched, err := provider.Create(ctx, claim("simboot-1"))
	if err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		all, err := provider.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range all {
			if in.Status.ProviderID == launched.Status.ProviderID {
				return true
			}
		}
		return false
	}
	node := &corev1.Node{}
	noNode := func(when string) {
		t.Helper()
		if err := kc.Get(ctx, client.ObjectKey{Name: "simboot-1"}, node); client.IgnoreNotFound(err) != nil || err == nil {
			t.Fatalf("%s: the Node exists (or %v)", when, err)
		}
	}
	noNode("at launch")
	if !listed() {
		t.Fatal("a booting instance is not listed")
	}
	clk.Step(29 * time.Second)
	noNode("29 s after launch, before launch + registration (30 s)")
	clk.Step(time.Second)
	eventually(t, "the Node registered at 30 s", func(ctx context.Context) (bool, error) {
		return kc.Get(ctx, client.ObjectKey{Name: "simboot-1"}, node) == nil, nil
	})
	if node.Spec.ProviderID != launched.Status.ProviderID || node.Annotations[kwok.AnnotationNode] != "fake" || nodeReady(node) ||
		!hasTaint(node, "simboot") || !hasTaint(node, v1.UnregisteredTaint.Key) || !listed() {
		t.Errorf("registered Node: providerID %q (want %q), annotations %v, Ready %v, taints %v, listed %v",
			node.Spec.ProviderID, launched.Status.ProviderID, node.Annotations, nodeReady(node), node.Spec.Taints, listed())
	}
	clk.Step(5 * time.Second)
	eventually(t, "the Node Ready at 35 s, not-ready taint lifted", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Name: "simboot-1"}, node); err != nil {
			return false, err
		}
		return nodeReady(node) && !hasTaint(node, corev1.TaintNodeNotReady), nil
	})
	if at := node.Status.Conditions[0].LastTransitionTime.Time; !at.Equal(start.Add(35 * time.Second)) {
		t.Errorf("Ready at %s, want launch + 35 s", at)
	}
	if err := provider.Delete(ctx, launched); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Node gone with its instance", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKey{Name: "simboot-1"}, &corev1.Node{})
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if listed() {
		t.Error("a deleted instance is listed")
	}

	// Deleted while it boots: its Node never comes.
	launched, err = provider.Create(ctx, claim("simboot-2"))
	if err != nil {
		t.Fatal(err)
	}
	if !clk.HasWaiters() {
		t.Fatal("a booting instance has nothing on the clock")
	}
	if err := provider.Delete(ctx, launched); err != nil {
		t.Fatal(err)
	}
	if clk.HasWaiters() {
		t.Error("deleting a booting instance left its boot on the clock")
	}
	if listed() {
		t.Error("an instance deleted while it booted is listed")
	}

	// Never registers: listed, no Node, however long.
	never := simcloud.BootModel{NeverRegisterRate: 1}
	provider, err = kwok.NewWithOptions(kc, types, kwok.Options{Name: "sim", Clock: clk, Boot: &never, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	if err := provider.SetNodePools([]*v1.NodePool{np}); err != nil {
		t.Fatal(err)
	}
	if launched, err = provider.Create(ctx, claim("simboot-3")); err != nil {
		t.Fatal(err)
	}
	if clk.HasWaiters() {
		t.Error("an instance that never registers has a boot on the clock")
	}
	if !listed() {
		t.Error("an instance whose Node never registers is not listed")
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
