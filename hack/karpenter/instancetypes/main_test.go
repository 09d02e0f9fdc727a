package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

func defaults() options {
	return options{match: "allocatable", categories: []string{"c", "m", "r"}, minGeneration: 5,
		capacityTypes:  []string{"on-demand"},
		offeringLabels: []string{"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation"}}
}

// Upstream's allocatable from the file is Joiner's, for every type chosen.
func TestAllocatableMatchesJoiner(t *testing.T) {
	types, err := build(defaults())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, _, err := cat.InstanceTypes(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	joiner := map[string]corev1.ResourceList{}
	for _, it := range its {
		joiner[it.Name] = it.Allocatable()
	}
	if len(types) < 100 {
		t.Fatalf("only %d types chosen", len(types))
	}
	for _, ty := range types {
		got, want := UpstreamAllocatable(ty.Resources), joiner[ty.Name]
		if len(got) != len(want) {
			t.Fatalf("%s: upstream allocatable %v, Joiner's %v", ty.Name, got, want)
		}
		for name, q := range want {
			if g := got[name]; g.Cmp(q) != 0 {
				t.Fatalf("%s %s: upstream allocatable %s, Joiner's %s", ty.Name, name, g.String(), q.String())
			}
		}
		for _, o := range ty.Offerings {
			if o.Requirements[0].Values[0] != "on-demand" {
				t.Fatalf("%s: offering %v", ty.Name, o)
			}
		}
	}
}

func TestSelectionAndFormat(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(defaults(), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var types []map[string]any
	if err := json.Unmarshal(out.Bytes(), &types); err != nil {
		t.Fatal(err)
	}
	var c8i map[string]any
	for _, ty := range types {
		name := ty["name"].(string)
		if !strings.HasPrefix(name, "c") && !strings.HasPrefix(name, "m") && !strings.HasPrefix(name, "r") {
			t.Errorf("%s chosen", name)
		}
		if strings.HasPrefix(name, "m4.") || strings.HasPrefix(name, "c4.") || strings.HasPrefix(name, "r4.") {
			t.Errorf("%s: generation 4 chosen", name)
		}
		if name == "c8i.96xlarge" {
			c8i = ty
		}
	}
	if c8i == nil {
		t.Fatal("c8i.96xlarge missing")
	}
	res := c8i["resources"].(map[string]any)
	// Catalog AL2023 allocatable 382970m CPU, 710440Mi memory, 1514 pods.
	if res["cpu"] != "383070m" || res["memory"] != "710450Mi" || res["pods"] != "1514" {
		t.Errorf("c8i.96xlarge resources %v", res)
	}
	offs := c8i["offerings"].([]any)
	if len(offs) != 3 {
		t.Fatalf("c8i.96xlarge: %d offerings, want 3 zones on demand", len(offs))
	}
	o := offs[0].(map[string]any)
	if o["Price"] != 17.99232 || o["Available"] != true {
		t.Errorf("offering %v", o)
	}
	keys := map[string]string{}
	for _, r := range o["Requirements"].([]any) {
		r := r.(map[string]any)
		keys[r["key"].(string)] = r["values"].([]any)[0].(string)
	}
	for k, v := range map[string]string{"topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "on-demand",
		"karpenter.k8s.aws/instance-category": "c", "karpenter.k8s.aws/instance-generation": "8"} {
		if keys[k] != v {
			t.Errorf("offering requirement %s = %q, want %q", k, keys[k], v)
		}
	}
	if len(keys) != 4 {
		t.Errorf("offering requirements %v: want zone, capacity type, category, generation", keys)
	}
}

func TestMatchCapacity(t *testing.T) {
	o := defaults()
	o.match = "capacity"
	types, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range types {
		if ty.Name == "c8i.96xlarge" {
			if q := ty.Resources[corev1.ResourceCPU]; q.String() != "384" {
				t.Errorf("cpu %s", q.String())
			}
			return
		}
	}
	t.Fatal("c8i.96xlarge missing")
}
