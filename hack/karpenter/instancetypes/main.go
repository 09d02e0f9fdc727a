// Command instancetypes writes Joiner's instance-type catalog in upstream
// Karpenter's kwok format (sigs.k8s.io/karpenter/kwok/cloudprovider:
// a JSON list of InstanceTypeOptions, read from INSTANCE_TYPES_FILE_PATH or
// --instance-types-file-path), so that upstream's kwok controller and
// Joiner's (--cloud-provider kwok) choose among the same instance types,
// zones and prices, and their Nodes have the same allocatable:
//
//	go run ./hack/karpenter/instancetypes --out /tmp/karpenter-instance-types.json
//
// The default selection is the benchmark NodePool's: categories c, m and r,
// generation above 4, on-demand, in the catalog's us-east-1 zones at its
// us-east-1 prices. The flags take the same region, zones and catalog as
// `joiner controller --cloud-provider kwok`.
//
// Allocatable. Upstream's kwok provider gives every type the same overhead,
// kube-reserved 100m CPU and 10Mi memory, and no eviction threshold or
// system-reserved, so a Node's allocatable is the file's resources less
// that. Joiner's catalog gives each type Karpenter AWS's AL2023 allocatable
// (capacity: vCPUs, memory less 7.5 % VM overhead, ENI-limited pods, 20Gi
// disk; less kube-reserved by vCPU count and pods, and a 100Mi eviction
// threshold). With --match allocatable (the default) the file's resources
// are Joiner's allocatable plus upstream's overhead, so both controllers
// see, and both kwok Nodes report, exactly Joiner's allocatable; the
// karpenter.kwok.sh/instance-cpu and instance-memory labels upstream derives
// from the resources are then that sum (e.g. 382970m+100m = "383070m"), not
// the vCPU count. With --match capacity the resources are Joiner's capacity
// and upstream's allocatable is larger than Joiner's.
//
// Labels. Upstream's kwok instance types carry only instance-type, arch, os,
// zone, capacity type and its four karpenter.kwok.sh labels. The labels of
// Joiner's type named by --offering-labels (by default the two the
// benchmark's NodePool selects on, karpenter.k8s.aws/instance-category and
// instance-generation; "all": every label Joiner's type pins, such as
// instance-family, instance-cpu, topology.kubernetes.io/region) are written
// into each offering's requirements: upstream makes offering requirement
// keys well-known, filters offerings by a NodePool's requirements on them
// and puts them on the Node, so the same NodePool requirements mean the
// same to both controllers. Each extra key is one more requirement on every
// offering upstream checks while it schedules, hence the short default.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// instanceType is upstream's kwok InstanceTypeOptions as JSON
// (kwok/cloudprovider/helpers.go).
type instanceType struct {
	Name             string              `json:"name"`
	Offerings        []offering          `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []string            `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

// offering is upstream's KWOKOffering as JSON: cloudprovider.Offering's
// exported fields (no json tags) with Requirements as node selector
// requirements. Upstream marks every offering available when it loads them.
type offering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// upstreamOverhead is what upstream's kwok provider reserves on every type
// (kwok/cloudprovider/helpers.go, newInstanceType: KubeReserved).
var upstreamOverhead = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("10Mi"),
}

// upstreamKeys are the requirements upstream builds for an instance type
// itself; the others Joiner's type pins go into the offerings.
var upstreamKeys = map[string]bool{
	v1.LabelInstanceType: true, v1.LabelArch: true, v1.LabelOS: true,
	v1.LabelZone: true, v1.LabelCapacityType: true,
}

type options struct {
	catalogFile, region, out, match  string
	zones, categories, capacityTypes []string
	arches                           []string
	minGeneration                    int
	// offeringLabels: label keys copied into offerings; all of them with allLabels.
	offeringLabels []string
	allLabels      bool
}

func main() {
	var o options
	var zones, cats, cts, arches, labels string
	flag.StringVar(&o.catalogFile, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one")
	flag.StringVar(&o.region, "region", "", "the region (default us-east-1)")
	flag.StringVar(&zones, "zones", "", "comma-separated zones (default: the catalog's for the region)")
	flag.StringVar(&cats, "categories", "c,m,r", "karpenter.k8s.aws/instance-category values to keep; empty: all")
	flag.IntVar(&o.minGeneration, "min-generation", 5, "lowest karpenter.k8s.aws/instance-generation to keep (5: Gt 4); 0: all")
	flag.StringVar(&cts, "capacity-types", v1.CapacityTypeOnDemand, "capacity types to offer: on-demand, spot (comma-separated)")
	flag.StringVar(&arches, "arch", "", "architectures to keep (amd64, arm64); empty: all")
	flag.StringVar(&o.match, "match", "allocatable", "allocatable: upstream's allocatable = Joiner's; capacity: upstream's resources = Joiner's capacity")
	flag.StringVar(&labels, "offering-labels", awsv1.LabelInstanceCategory+","+awsv1.LabelInstanceGeneration,
		"label keys of Joiner's types to put in each offering's requirements (all: every label they pin but upstream's own; empty: none)")
	flag.StringVar(&o.out, "out", "", "write here instead of standard output")
	flag.Parse()
	o.zones, o.categories, o.capacityTypes, o.arches = split(zones), split(cats), split(cts), split(arches)
	if labels == "all" {
		o.allLabels = true
	} else {
		o.offeringLabels = split(labels)
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "instancetypes:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(o options, stdout, stderr io.Writer) error {
	types, err := build(o)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(types, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	offerings := 0
	for _, t := range types {
		offerings += len(t.Offerings)
	}
	fmt.Fprintf(stderr, "instancetypes: %d instance types, %d offerings (match %s)\n", len(types), offerings, o.match)
	if o.out == "" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(o.out, b, 0o644)
}

// build selects the catalog's types and converts them.
func build(o options) ([]instanceType, error) {
	if o.match != "allocatable" && o.match != "capacity" {
		return nil, fmt.Errorf("--match %q: allocatable or capacity", o.match)
	}
	for _, ct := range o.capacityTypes {
		if ct != v1.CapacityTypeOnDemand && ct != v1.CapacityTypeSpot {
			return nil, fmt.Errorf("--capacity-types %q: on-demand or spot", ct)
		}
	}
	if len(o.capacityTypes) == 0 {
		return nil, fmt.Errorf("--capacity-types: name at least one")
	}
	cat, err := catalog.Default()
	if o.catalogFile != "" {
		cat, err = catalog.LoadFile(o.catalogFile)
	}
	if err != nil {
		return nil, err
	}
	its, assumptions, err := cat.InstanceTypes(catalog.Options{Region: o.region, Zones: o.zones})
	if err != nil {
		return nil, err
	}
	for _, a := range assumptions {
		fmt.Fprintln(os.Stderr, "instancetypes: assumed:", a)
	}
	var out []instanceType
	for _, it := range its {
		labels := it.Requirements.Labels()
		if !keep(o, labels) {
			continue
		}
		t, ok := convert(o, it, labels)
		if ok {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no instance type of the catalog is selected")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func keep(o options, labels map[string]string) bool {
	if len(o.categories) > 0 && !contains(o.categories, labels[awsv1.LabelInstanceCategory]) {
		return false
	}
	if o.minGeneration > 0 {
		g, err := strconv.Atoi(labels[awsv1.LabelInstanceGeneration])
		if err != nil || g < o.minGeneration {
			return false
		}
	}
	return len(o.arches) == 0 || contains(o.arches, labels[v1.LabelArch])
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// convert is one type in upstream's format; false when it has no offering
// of the capacity types asked for.
func convert(o options, it *cloudprovider.InstanceType, labels map[string]string) (instanceType, bool) {
	var extra []corev1.NodeSelectorRequirement
	for _, k := range sortedKeys(labels) {
		if !upstreamKeys[k] && (o.allLabels || contains(o.offeringLabels, k)) {
			extra = append(extra, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{labels[k]}})
		}
	}
	t := instanceType{
		Name:             it.Name,
		Architecture:     labels[v1.LabelArch],
		OperatingSystems: []string{labels[v1.LabelOS]},
		Resources:        Resources(it, o.match),
	}
	if t.OperatingSystems[0] == "" {
		t.OperatingSystems = []string{string(corev1.Linux)}
	}
	for _, off := range it.Offerings {
		if !off.Available || !contains(o.capacityTypes, off.CapacityType) {
			continue
		}
		reqs := []corev1.NodeSelectorRequirement{
			{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{off.CapacityType}},
			{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{off.Zone}},
		}
		t.Offerings = append(t.Offerings, offering{Price: off.Price, Available: true, Requirements: append(reqs, extra...)})
	}
	return t, len(t.Offerings) > 0
}

// Resources is what the file gives upstream for it: Joiner's allocatable
// plus upstream's overhead (match "allocatable"), or Joiner's capacity.
func Resources(it *cloudprovider.InstanceType, match string) corev1.ResourceList {
	if match == "capacity" {
		return it.Capacity.DeepCopy()
	}
	out := it.Allocatable().DeepCopy()
	for name, q := range upstreamOverhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// UpstreamAllocatable is what upstream's kwok provider makes of resources:
// resources less its overhead, pods 110 when not given.
func UpstreamAllocatable(resources corev1.ResourceList) corev1.ResourceList {
	out := resources.DeepCopy()
	if _, ok := out[corev1.ResourcePods]; !ok {
		out[corev1.ResourcePods] = resource.MustParse("110")
	}
	for name, q := range upstreamOverhead {
		v := out[name]
		v.Sub(q)
		out[name] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
