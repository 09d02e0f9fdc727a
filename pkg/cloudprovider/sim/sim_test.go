package sim

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

var start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func instanceType(name string, cpu int64, onDemand float64) *cloudprovider.InstanceType {
	var offerings cloudprovider.Offerings
	for _, z := range []string{"a", "b"} {
		offerings = append(offerings,
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: onDemand, Available: true},
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: onDemand / 3, Available: true})
	}
	return &cloudprovider.InstanceType{Name: name, Offerings: offerings,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "a", "b"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)),
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)}}
}

type fixture struct {
	now    time.Time
	errors []string
	cloud  *Provider
}

func newFixture(t *testing.T, opts Options) *fixture {
	f := &fixture{now: start}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	opts.Now = func() time.Time { return f.now }
	opts.OnError = func(op, code string) { f.errors = append(f.errors, op+"/"+code) }
	c, err := New([]*v1.NodePool{pool}, []*cloudprovider.InstanceType{instanceType("small", 2, 0.1), instanceType("large", 8, 0.4)},
		map[string]string{"default": "al2023@v1"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.cloud = c
	return f
}

func claim(reqs ...*scheduling.Requirement) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-1", Labels: map[string]string{v1.LabelNodePool: "general"}}}
	nc.Spec.Requirements = scheduling.NewRequirements(reqs...).NodeSelectorRequirements()
	return nc
}

func onDemandIn(zone string) []*scheduling.Requirement {
	return []*scheduling.Requirement{
		scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand),
		scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zone),
	}
}

func TestCreateLaunchesTheCheapestAllowedOffering(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	got, err := f.cloud.Create(ctx, claim())
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != "small" || got.Labels[v1.LabelCapacityType] != v1.CapacityTypeSpot {
		t.Errorf("unconstrained claim got %v, want the cheapest: small spot", got.Labels)
	}
	got, err = f.cloud.Create(ctx, claim(onDemandIn("b")...))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelZone] != "b" || got.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || got.Status.ProviderID == "" || got.Status.ImageID != "al2023@v1" {
		t.Errorf("on-demand in b got labels %v, status %+v", got.Labels, got.Status)
	}
	if list, _ := f.cloud.List(ctx); len(list) != 2 {
		t.Errorf("List: %d instances, want 2", len(list))
	}
}

func TestInsufficientCapacityFallsBackAndIsCachedForThreeMinutes(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.cloud.SetCapacity("small", "a", v1.CapacityTypeOnDemand, false)
	v := f.cloud.Version()
	got, err := f.cloud.Create(ctx, claim(onDemandIn("a")...))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != "large" {
		t.Errorf("fell back to %s, want large", got.Labels[v1.LabelInstanceType])
	}
	if strings.Join(f.errors, ",") != "CreateFleet/InsufficientInstanceCapacity" {
		t.Errorf("errors %v", f.errors)
	}
	if f.cloud.Version() == v || offering(f.cloud, "small", "a", v1.CapacityTypeOnDemand).Available {
		t.Error("the failed offering should show unavailable, with a new version")
	}
	// The cache hides it even though capacity is back, until it expires.
	f.cloud.SetCapacity("small", "a", v1.CapacityTypeOnDemand, true)
	f.now = start.Add(UnavailableFor - time.Second)
	if offering(f.cloud, "small", "a", v1.CapacityTypeOnDemand).Available {
		t.Error("available again before the cache expired")
	}
	f.now = start.Add(UnavailableFor)
	if !offering(f.cloud, "small", "a", v1.CapacityTypeOnDemand).Available {
		t.Error("still unavailable after the cache expired")
	}

	f.cloud.SetCapacity("small", "", "", false)
	f.cloud.SetCapacity("large", "", "", false)
	_, err = f.cloud.Create(ctx, claim())
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("no capacity anywhere: %v, want an insufficient capacity error", err)
	}
}

func offering(c *Provider, name, zone, ct string) *cloudprovider.Offering {
	for _, it := range c.InstanceTypes()["general"] {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o
			}
		}
	}
	return nil
}

func TestAPIErrorsAndUnknownPools(t *testing.T) {
	f := newFixture(t, Options{Rand: rand.New(rand.NewSource(1)), APIErrorRate: 1})
	if _, err := f.cloud.Create(context.Background(), claim()); err == nil || !strings.Contains(err.Error(), "InternalError") {
		t.Errorf("API error rate 1: %v", err)
	}
	if strings.Join(f.errors, ",") != "CreateFleet/InternalError" {
		t.Errorf("errors %v", f.errors)
	}
	f = newFixture(t, Options{})
	nc := claim()
	nc.Labels[v1.LabelNodePool] = "gpu"
	if _, err := f.cloud.Create(context.Background(), nc); err == nil || !strings.Contains(err.Error(), `NodePool "gpu"`) {
		t.Errorf("unknown pool: %v", err)
	}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "arm"}}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7g.large"}}}
	if _, err := New([]*v1.NodePool{pool}, []*cloudprovider.InstanceType{instanceType("small", 2, 0.1)}, nil, Options{Now: time.Now}); err == nil || !strings.Contains(err.Error(), "NodePool arm") {
		t.Errorf("pool without types: %v", err)
	}
}

func TestDeleteGetAndDrift(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	nc, err := f.cloud.Create(ctx, claim())
	if err != nil {
		t.Fatal(err)
	}
	if why, _ := f.cloud.IsDrifted(ctx, nc); why != "" {
		t.Errorf("fresh instance drifted: %s", why)
	}
	f.cloud.SetImage("default", "al2023@v2")
	if why, _ := f.cloud.IsDrifted(ctx, nc); why != "AMIDrift" {
		t.Errorf("after an image change: %q, want AMIDrift", why)
	}
	if got, err := f.cloud.Get(ctx, nc.Status.ProviderID); err != nil || got.Name != nc.Name {
		t.Errorf("Get: %v %v", got, err)
	}
	if err := f.cloud.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := f.cloud.Delete(ctx, nc); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second delete: %v, want not found", err)
	}
	if _, err := f.cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after delete: %v, want not found", err)
	}
}

// TestEqualPricesSpreadOverZones: where zones offer a type at one price,
// launches do not all go to the first zone (as EC2 Fleet's do not); each
// claim's zone is fixed by its name, so runs repeat. A cheaper zone always
// wins.
func TestEqualPricesSpreadOverZones(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	onDemand := scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)
	zones := map[string]int{}
	for i := 0; i < 40; i++ {
		nc := claim(onDemand)
		nc.Name = fmt.Sprintf("general-%05d", i)
		got, err := f.cloud.Create(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		zones[got.Labels[v1.LabelZone]]++
		again, _ := f.cloud.Create(ctx, nc)
		if again.Labels[v1.LabelZone] != got.Labels[v1.LabelZone] {
			t.Fatalf("%s: zone %s, then %s", nc.Name, got.Labels[v1.LabelZone], again.Labels[v1.LabelZone])
		}
	}
	if zones["a"] < 10 || zones["b"] < 10 {
		t.Errorf("40 on-demand launches at one price by zone: %v, want both zones used", zones)
	}
	// Spot prices differ by zone in the catalog; here make b cheaper.
	offering(f.cloud, "small", "b", v1.CapacityTypeOnDemand).Price = 0.09
	for i := 0; i < 5; i++ {
		nc := claim(onDemand)
		nc.Name = fmt.Sprintf("general-cheap-%d", i)
		if got, _ := f.cloud.Create(ctx, nc); got.Labels[v1.LabelZone] != "b" {
			t.Errorf("%s went to %s, not the cheaper zone b", nc.Name, got.Labels[v1.LabelZone])
		}
	}
}

// TestCapacityTypePriority: a claim allowing spot and on-demand is
// launched as spot while any allowed spot offering has capacity, and as
// on-demand only when none has — the provider's choice, as upstream's AWS
// provider asks EC2 Fleet; a spot-only claim then fails.
func TestCapacityTypePriority(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	both := scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)
	// small spot is short in both zones: large spot (0.133) is still spot,
	// though small on-demand (0.1) is cheaper.
	f.cloud.SetCapacity("small", "a", v1.CapacityTypeSpot, false)
	f.cloud.SetCapacity("small", "b", v1.CapacityTypeSpot, false)
	got, err := f.cloud.Create(ctx, claim(both))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelCapacityType] != v1.CapacityTypeSpot || got.Labels[v1.LabelInstanceType] != "large" {
		t.Errorf("got %s %s, want large spot", got.Labels[v1.LabelInstanceType], got.Labels[v1.LabelCapacityType])
	}
	for _, z := range []string{"a", "b"} {
		f.cloud.SetCapacity("large", z, v1.CapacityTypeSpot, false)
	}
	got, err = f.cloud.Create(ctx, claim(both))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || got.Labels[v1.LabelInstanceType] != "small" {
		t.Errorf("no spot left: got %s %s, want small on-demand", got.Labels[v1.LabelInstanceType], got.Labels[v1.LabelCapacityType])
	}
	spotOnly := scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot)
	if _, err := f.cloud.Create(ctx, claim(spotOnly)); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a spot-only claim with no spot capacity: %v", err)
	}
}

// TestCapacityIsTheCloudsBeforeAnyNodePool: a shortage set before the
// cloud knows a NodePool (as the controller's provider is, before its
// first NodePool sync) still fails that pool's launches.
func TestCapacityIsTheCloudsBeforeAnyNodePool(t *testing.T) {
	c, err := New(nil, []*cloudprovider.InstanceType{instanceType("small", 2, 0.1)}, nil, Options{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	c.SetCapacity("small", "", "", false)
	if err := c.SetNodePools([]*v1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "general"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), claim()); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("launch during a shortage set before the pool: %v, want an insufficient capacity error", err)
	}
}
