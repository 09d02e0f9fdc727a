package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

const overlayManifests = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge, m7i.xlarge]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: savings-plan}
spec:
  weight: 10
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m7i.xlarge]}
  priceAdjustment: "-30%"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: also-ten}
spec:
  weight: 10
  requirements:
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
  price: "0.01"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: fuse}
spec:
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [general]}
  capacity: {smarter-devices/fuse: "10"}
---
apiVersion: v1
kind: Pod
metadata: {name: builder, namespace: default}
spec:
  containers:
    - name: c
      image: x
      resources:
        requests: {cpu: "1"}
        limits: {smarter-devices/fuse: "1"}
`

// TestPlanAppliesNodeOverlays: m7i.xlarge lists dearer than m6i.xlarge,
// but the savings plan makes it the cheaper, so the claim lists it first at
// its adjusted price; the pod asks for a resource only an overlay gives; an
// equal-weight overlay pricing the same offering is refused, and says so.
func TestPlanAppliesNodeOverlays(t *testing.T) {
	objs, its := overlayInput(t)
	list := listPrices(t)
	if list["m7i.xlarge"] <= list["m6i.xlarge"] {
		t.Fatalf("test premise: m7i.xlarge ($%v) lists dearer than m6i.xlarge ($%v)", list["m7i.xlarge"], list["m6i.xlarge"])
	}
	for _, d := range []provisioning.Decisions{provisioning.DecisionsJoiner, provisioning.DecisionsKarpenter} {
		p := plan.Run(context.Background(), objs.State(its), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), plan.Options{Policy: provisioning.Policy{Decisions: d}})
		if len(p.Pending) != 0 || len(p.NodeClaims) != 1 {
			t.Fatalf("%s: want one claim and nothing pending, got %+v pending %+v", d, p.NodeClaims, p.Pending)
		}
		nc := p.NodeClaims[0]
		if nc.InstanceTypes[0] != "m7i.xlarge" {
			t.Errorf("%s: types %v, want m7i.xlarge first (the savings plan)", d, nc.InstanceTypes)
		}
		if want := list["m7i.xlarge"] * 0.7; nc.PriceUSDPerHour < want-0.0001 || nc.PriceUSDPerHour > want+0.0001 {
			t.Errorf("%s: price %v, want %v", d, nc.PriceUSDPerHour, want)
		}
		if !reflect.DeepEqual(nc.NodeOverlays, []string{"fuse", "savings-plan"}) {
			t.Errorf("%s: claim overlays %v", d, nc.NodeOverlays)
		}
		got := map[string]plan.NodeOverlay{}
		for _, o := range p.NodeOverlays {
			got[o.Name] = o
		}
		if o := got["also-ten"]; o.Applied || o.Reason != "Conflict" {
			t.Errorf("%s: also-ten %+v, want refused for a conflict with savings-plan", d, o)
		}
		if !got["savings-plan"].Applied || !got["fuse"].Applied {
			t.Errorf("%s: overlays %+v", d, p.NodeOverlays)
		}
	}
}

// TestExplainNamesNodeOverlays: explain pod names the overlays behind the
// claim's instance types, explain nodepool those that change the pool's
// types and the one refused.
func TestExplainNamesNodeOverlays(t *testing.T) {
	objs, its := overlayInput(t)
	c := objs.State(its)
	ex, err := plan.ExplainPod(context.Background(), c, "default", "builder", provisioning.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if ex.NodeClaim == nil || !reflect.DeepEqual(ex.NodeClaim.NodeOverlays, []string{"fuse", "savings-plan"}) {
		t.Fatalf("explain pod: %+v (claim %+v)", ex, ex.NodeClaim)
	}
	np, err := plan.ExplainNodePool(c, "general", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), provisioning.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]plan.NodeOverlay{}
	for _, o := range np.NodeOverlays {
		got[o.Name] = o
	}
	if o := got["savings-plan"]; !o.Applied || o.InstanceTypes != 1 {
		t.Errorf("savings-plan: %+v, want applied to m7i.xlarge only", o)
	}
	if o := got["fuse"]; !o.Applied || o.InstanceTypes < 2 {
		t.Errorf("fuse: %+v, want applied to every type", o)
	}
	if o := got["also-ten"]; o.Applied || o.Reason != "Conflict" {
		t.Errorf("also-ten: %+v, want refused", o)
	}
}

// TestPlanOfASimulationNamesItsOverlays: a simulated cluster's instance
// types carry the scenario's overlays already; a plan of it names them
// and does not apply them twice (the savings plan's price is -28 %, not
// -48 %).
func TestPlanOfASimulationNamesItsOverlays(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "scenarios", "node-overlays")
	in, err := scenario.Load(os.DirFS(dir), ".", "node-overlays")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.RunUntil(context.Background(), in, os.DirFS(dir), ".", in.Scenario.Spec.Start.Add(time.Hour), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Run(context.Background(), m.Cluster, m.At, plan.Options{})
	names := []string{}
	for _, o := range p.NodeOverlays {
		if o.Applied {
			names = append(names, o.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"fuse-devices", "savings-plan-gen7"}) {
		t.Errorf("plan overlays %+v", p.NodeOverlays)
	}
	list := listPrices(t)
	found := false
	for _, it := range m.Cluster.InstanceTypes["general"] {
		if it.Name != "m7i.large" {
			continue
		}
		found = true
		for _, o := range it.Offerings {
			if o.CapacityType == "on-demand" && (o.Price < list["m7i.large"]*0.72-1e-9 || o.Price > list["m7i.large"]*0.72+1e-9) {
				t.Errorf("m7i.large %s at %v, want %v", o.Zone, o.Price, list["m7i.large"]*0.72)
			}
		}
	}
	if !found {
		t.Error("m7i.large is not among the general pool's types")
	}
}

// overlayInput is overlayManifests loaded, with the catalog's us-east-1
// instance types.
func overlayInput(t *testing.T) (*plan.Objects, []*cloudprovider.InstanceType) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "all.yaml")
	if err := os.WriteFile(f, []byte(overlayManifests), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := plan.Load([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, _, err := cat.InstanceTypes(catalog.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return objs, its
}

// listPrices are the catalog's on-demand prices by instance type.
func listPrices(t *testing.T) map[string]float64 {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]float64{}
	for _, e := range cat.Entries {
		if e.OnDemandPrice != nil {
			list[e.Name] = *e.OnDemandPrice
		}
	}
	return list
}
