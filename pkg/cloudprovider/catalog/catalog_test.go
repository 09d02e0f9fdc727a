package catalog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func byName(t *testing.T) map[string]*cloudprovider.InstanceType {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	its, assumptions, err := c.InstanceTypes(Options{})
	if err != nil || len(assumptions) != 0 {
		t.Fatalf("default options: err %v, assumptions %q", err, assumptions)
	}
	if len(its) != 1382 {
		t.Fatalf("loaded %d instance types, want all 1382", len(its))
	}
	out := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

func label(it *cloudprovider.InstanceType, key string) string {
	v, _ := it.Requirements.Get(key).Any()
	return v
}

func TestKnownFacts(t *testing.T) {
	its := byName(t)
	m6i := its["m6i.xlarge"]
	if m6i == nil {
		t.Fatal("m6i.xlarge missing")
	}
	if got := label(m6i, awsv1.LabelInstanceCPU); got != "4" {
		t.Errorf("m6i.xlarge vCPU label = %s, want 4", got)
	}
	if got := label(m6i, awsv1.LabelInstanceMemory); got != "16384" {
		t.Errorf("m6i.xlarge memory label = %s MiB, want 16384 (16 GiB)", got)
	}
	if q := m6i.Capacity[corev1.ResourceCPU]; q.Value() != 4 {
		t.Errorf("m6i.xlarge cpu capacity = %s", q.String())
	}
	od := m6i.Offerings.Compatible(scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)))
	if len(od) != 3 || od.Cheapest().Price != 0.192 {
		t.Errorf("m6i.xlarge on-demand offerings = %d, cheapest %v; want 3 zones at 0.192", len(od), od.Cheapest())
	}
	// Allocatable is Karpenter's: 3920m CPU, 14162Mi memory, 58 pods.
	alloc := m6i.Allocatable()
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "3920m", corev1.ResourceMemory: "14162Mi", corev1.ResourcePods: "58", corev1.ResourceEphemeralStorage: "17Gi"} {
		if q := alloc[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m6i.xlarge allocatable %s = %s, want %s", name, q.String(), want)
		}
	}

	g5 := its["g5.xlarge"]
	if got := label(g5, awsv1.LabelInstanceGPUCount); got != "1" {
		t.Errorf("g5.xlarge gpu count = %s", got)
	}
	if got := label(g5, awsv1.LabelInstanceGPUName); got != "a10g" {
		t.Errorf("g5.xlarge gpu name = %s, want a10g", got)
	}
	if got := label(g5, awsv1.LabelInstanceGPUManufacturer); got != "nvidia" {
		t.Errorf("g5.xlarge gpu manufacturer = %s, want nvidia", got)
	}
	if q := g5.Allocatable()[awsv1.ResourceNVIDIAGPU]; q.Value() != 1 {
		t.Errorf("g5.xlarge nvidia.com/gpu = %s, want 1", q.String())
	}
	if got := label(g5, awsv1.LabelInstanceFamily) + "/" + label(g5, awsv1.LabelInstanceCategory) + "/" + label(g5, awsv1.LabelInstanceGeneration); got != "g5/g/5" {
		t.Errorf("g5.xlarge family/category/generation = %s", got)
	}
	if got := label(its["a1.medium"], v1.LabelArch); got != "arm64" {
		t.Errorf("a1.medium arch = %s", got)
	}
	if got := label(its["inf2.xlarge"], awsv1.LabelInstanceAccelName); got != "inferentia2" {
		t.Errorf("inf2.xlarge accelerator = %s", got)
	}
}

func TestOfferings(t *testing.T) {
	its := byName(t)
	m6i := its["m6i.xlarge"]
	if got := m6i.Requirements.Get(v1.LabelZone).Values(); strings.Join(got, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Errorf("zones = %v", got)
	}
	spot := scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
	cheapest := m6i.Offerings.Available().Compatible(spot).Cheapest()
	if cheapest == nil || cheapest.Zone != "us-east-1c" || cheapest.Price != 0.071073 {
		t.Errorf("cheapest spot = %+v, want us-east-1c at 0.071073 (synthetic)", cheapest)
	}
	cheapest.Available = false // insufficient capacity seen
	if next := m6i.Offerings.Available().Compatible(spot).Cheapest(); next.Zone != "us-east-1a" {
		t.Errorf("after marking 1c unavailable, cheapest spot = %+v, want us-east-1a", next)
	}
	// Types without an on-demand price have no on-demand offering.
	noPrice := 0
	c, _ := Default()
	for _, e := range c.Entries {
		if e.OnDemandPrice == nil {
			noPrice++
			for _, o := range its[e.Name].Offerings {
				if o.CapacityType == v1.CapacityTypeOnDemand {
					t.Errorf("%s has no price but an on-demand offering", e.Name)
				}
			}
		}
	}
	if noPrice != 18 {
		t.Errorf("%d types without an on-demand price, the catalog says 18", noPrice)
	}
	list := []*cloudprovider.InstanceType{its["m6i.2xlarge"], its["m6i.xlarge"], its["m6i.4xlarge"]}
	cloudprovider.SortByPrice(list, scheduling.Requirements{})
	if list[0].Name != "m6i.xlarge" || list[2].Name != "m6i.4xlarge" {
		t.Errorf("SortByPrice: %s %s %s", list[0].Name, list[1].Name, list[2].Name)
	}
}

func TestParseRejectsIncompleteEntries(t *testing.T) {
	_, err := Parse([]byte(`{"instanceTypes":[{"name":"x.large","vcpu":0,"memoryMiB":1}]}`), "bad.json")
	if err == nil || !strings.Contains(err.Error(), "bad.json: instanceTypes[0] (x.large): vcpu and memoryMiB must be positive") {
		t.Errorf("got %v", err)
	}
	if _, err := Parse([]byte(`{`), "broken.json"); err == nil || !strings.HasPrefix(err.Error(), "broken.json:") {
		t.Errorf("got %v", err)
	}
}

// TestEntriesRoundTrip: Catalog holds every field of the embedded file, so
// a file written from it (hack/gen-catalog) has the same fields.
func TestEntriesRoundTrip(t *testing.T) {
	c, err := Parse(embedded, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	written, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(embedded, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(written, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got["metadata"], want["metadata"]) {
		t.Errorf("metadata written back differs:\ngot  %v\nwant %v", got["metadata"], want["metadata"])
	}
	ge, we := got["instanceTypes"].([]any), want["instanceTypes"].([]any)
	if len(ge) != len(we) {
		t.Fatalf("%d entries written back, want %d", len(ge), len(we))
	}
	for i := range we {
		// Hypervisor is a string: the file's null (bare metal) comes back
		// ""; eni null comes back absent.
		w := we[i].(map[string]any)
		if w["hypervisor"] == nil {
			w["hypervisor"] = ""
		}
		if w["eni"] == nil {
			delete(w, "eni")
		}
		if !reflect.DeepEqual(ge[i], we[i]) {
			t.Errorf("entry %d written back differs:\ngot  %v\nwant %v", i, ge[i], we[i])
		}
	}
}
