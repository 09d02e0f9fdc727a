package provisioning

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// withClaim makes the pod ask for a device through a ResourceClaim made
// from template tpl, as a pod of a Deployment does.
func withClaim(tpl string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tpl}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
}

// TestDRAIgnoredByDefault: under the default Policy (upstream's
// --ignore-dra-requests=true) a pod that asks for devices gets no
// NodeClaim and no place on a node with room, with the typed reason for
// every NodePool — while its twin without the claim, alike in every other
// way, is placed: the claim is part of what makes pods alike.
func TestDRAIgnoredByDefault(t *testing.T) {
	room := &Node{Name: "n1", NodePool: "p", Labels: map[string]string{v1.LabelZone: "zone-a", v1.LabelHostname: "n1"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	plain, asking := pod("1", "1Gi"), pod("1", "1Gi", withClaim("one-gpu"))
	lone := pod("1", "1Gi", withClaim("one-gpu"))
	for _, tc := range []struct {
		name  string
		nodes []*Node
	}{{"new node", nil}, {"existing node with room", []*Node{room}}} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{pool("p"), pool("q")}, standardTypes(), []*corev1.Pod{plain, asking, lone}, func(s *Snapshot) { s.Nodes = tc.nodes })
			if len(res.Unschedulable) != 2 {
				t.Fatalf("%d pods unschedulable, want the two that ask for devices: %v", len(res.Unschedulable), res.Unschedulable)
			}
			for _, pe := range res.Unschedulable {
				if pe.Pod == plain {
					t.Fatal("the pod without a claim was not placed")
				}
				if len(pe.CodeByNodePool) != 2 || pe.CodeByNodePool["p"] != ReasonDRA || pe.CodeByNodePool["q"] != ReasonDRA || pe.Deferred() {
					t.Errorf("pod %s: codes %v, want %s for both NodePools, not deferred", pe.Pod.Name, pe.CodeByNodePool, ReasonDRA)
				}
			}
			placed := 0
			for _, nc := range res.NewNodeClaims {
				placed += len(nc.Pods)
			}
			for _, e := range res.ExistingNodes {
				placed += len(e.Pods)
			}
			if placed != 1 {
				t.Errorf("%d pods placed, want the one without a claim", placed)
			}
		})
	}
}

const gpuDriver = "gpu.nvidia.com"

// devices gives a type n GPUs of product through the DRA driver.
func devices(n int, product string) func(*cloudprovider.InstanceType) {
	return func(t *cloudprovider.InstanceType) {
		ds := cloudprovider.DeviceSlice{Driver: gpuDriver}
		for i := range n {
			ds.Devices = append(ds.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": {StringValue: ptrTo("gpu")}, "productName": {StringValue: ptrTo(product)}}})
		}
		t.Devices = []cloudprovider.DeviceSlice{ds}
	}
}

// gpuClass selects the driver's GPUs.
var gpuClass = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
	Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}}}}

// gpuTemplate asks for count GPUs (of product, if set), or, with
// fallback, for count and failing that for one.
func gpuTemplate(name string, count int64, product string, fallback bool) *resourceapi.ResourceClaimTemplate {
	exact := resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	if product != "" {
		exact.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(`device.attributes["gpu.nvidia.com"].productName == %q`, product)}}}
	}
	req := resourceapi.DeviceRequest{Name: "gpus", Exactly: &exact}
	if fallback {
		one := exact
		one.Count = 1
		req = resourceapi.DeviceRequest{Name: "gpus", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "many", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count, Selectors: exact.Selectors},
			{Name: "one", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: exact.Selectors}}}
	}
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}}}
}

func modelDRA(objs *DRAObjects, nodes ...*Node) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.ModelDRA, s.DRA, s.Nodes = true, objs, nodes
	}
}

// gpuTypes: cheap types without GPUs, a 2-GPU and a 4-GPU type of one
// product, and a 4-GPU type of another.
func gpuTypes() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{it("m", 4), it("m", 16), it("g", 8, devices(2, "a10g")), it("g", 16, devices(4, "a10g")), it("p", 16, devices(4, "h100"))}
}

func typeNames(nc *NodeClaimPlan) []string {
	var out []string
	for _, t := range nc.InstanceTypes {
		out = append(out, t.Name)
	}
	return out
}

// TestDRADevicesCountedPerType: with DRA modelled, pods that each claim a
// GPU land only on types with GPUs, and a NodeClaim never holds more such
// pods than the smallest type left to it has GPUs; a pod without a claim
// still goes to the cheapest type.
func TestDRADevicesCountedPerType(t *testing.T) {
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("one-gpu", 1, "", false)}}
	pods := times(5, func() *corev1.Pod { return pod("1", "1Gi", withClaim("one-gpu")) })
	res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), pods, modelDRA(objs))
	requireAllPlaced(t, res)
	placed := 0
	for _, nc := range res.NewNodeClaims {
		placed += len(nc.Pods)
		for _, it := range nc.InstanceTypes {
			if got := len(it.Devices); got == 0 || len(it.Devices[0].Devices) < len(nc.Pods) {
				t.Errorf("a NodeClaim of %d GPU pods may launch %s: %v", len(nc.Pods), it.Name, typeNames(nc))
			}
		}
	}
	if placed != 5 {
		t.Fatalf("%d pods placed, want 5", placed)
	}
}

// TestDRASelectorsAndCounts: a claim's count and its selector on the
// product rule types out; a prioritized alternative lets a smaller one in.
func TestDRASelectorsAndCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		tpl  *resourceapi.ResourceClaimTemplate
		want []string // the types the one pod's NodeClaim may launch
	}{
		{"four of any", gpuTemplate("t", 4, "", false), []string{"g.16x", "p.16x"}},
		{"two h100", gpuTemplate("t", 2, "h100", false), []string{"p.16x"}},
		{"three, else one", gpuTemplate("t", 3, "", true), []string{"g.8x", "g.16x", "p.16x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{tc.tpl}}
			res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{pod("1", "1Gi", withClaim("t"))}, modelDRA(objs))
			requireAllPlaced(t, res)
			if len(res.NewNodeClaims) != 1 {
				t.Fatalf("%d NodeClaims, want 1", len(res.NewNodeClaims))
			}
			got := typeNames(res.NewNodeClaims[0])
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("types %v, want %v", got, want)
			}
		})
	}
}

// TestDRAReasons: a claim no type can hold, a missing template and a
// missing class each say so with their code.
func TestDRAReasons(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs *DRAObjects
		tpl  string
		code ReasonCode
		word string
	}{
		{"eight GPUs", &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("t", 8, "", false)}}, "t", ReasonDRADevices, "no devices left"},
		{"no template", &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}}, "t", ReasonDRAClaim, "ResourceClaimTemplate default/t not found"},
		{"no class", &DRAObjects{Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("t", 1, "", false)}}, "t", ReasonDRAClaim, `"gpu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{pod("1", "1Gi", withClaim(tc.tpl))}, modelDRA(tc.objs))
			if len(res.Unschedulable) != 1 {
				t.Fatalf("%d unschedulable, want 1", len(res.Unschedulable))
			}
			pe := res.Unschedulable[0]
			if pe.CodeByNodePool["p"] != tc.code || !strings.Contains(pe.ByNodePool["p"], tc.word) {
				t.Errorf("code %q (%s), want %s saying %q", pe.CodeByNodePool["p"], pe.ByNodePool["p"], tc.code, tc.word)
			}
		})
	}
}

// TestDRAExistingNodeAndSharedClaim: an initialized node's published GPUs
// take a pod's claim where a claim of the cluster does not hold them
// already; a claim two pods share takes them both to one node.
func TestDRAExistingNodeAndSharedClaim(t *testing.T) {
	node := readyNode("gpu-node", "zone-a", 16)
	node.Labels[v1.LabelNodeInitialized] = "true"
	nodeName := node.Name
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-gpus"}, Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &nodeName,
		Pool: resourceapi.ResourcePool{Name: "gpu-node", Generation: 1, ResourceSliceCount: 1}, Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	held := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default"}, Status: resourceapi.ResourceClaimStatus{
		Allocation:  &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: gpuDriver, Pool: "gpu-node", Device: "gpu-0"}}}},
		ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "running", UID: "running-uid"}}}}
	shared := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default"}, Spec: gpuTemplate("x", 1, "", false).Spec.Spec}
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("one-gpu", 1, "", false)},
		Claims: []*resourceapi.ResourceClaim{held, shared}, Slices: []*resourceapi.ResourceSlice{slice}}
	first, second := pod("1", "1Gi", withClaim("one-gpu")), pod("1", "1Gi", withClaim("one-gpu"))
	res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{first, second}, modelDRA(objs, node))
	requireAllPlaced(t, res)
	if len(res.ExistingNodes) != 1 || len(res.ExistingNodes[0].Pods) != 1 || len(res.NewNodeClaims) != 1 {
		t.Fatalf("want one pod on the node's free GPU and one on a new NodeClaim; got %d existing, %d new", len(res.ExistingNodes), len(res.NewNodeClaims))
	}

	sharing := func() *corev1.Pod {
		name := "shared"
		return pod("1", "1Gi", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		})
	}
	// Each pod needs most of a 16-core node, so without the shared claim
	// they would go to two NodeClaims; with it, the second cannot follow.
	a, b := sharing(), sharing()
	for _, p := range []*corev1.Pod{a, b} {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10")
	}
	res = solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{a, b}, modelDRA(&DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Claims: []*resourceapi.ResourceClaim{shared}}))
	if len(res.NewNodeClaims) != 1 || len(res.Unschedulable) != 1 || res.Unschedulable[0].CodeByNodePool["p"] != ReasonDRADevices {
		t.Fatalf("want the shared claim's first pod on a NodeClaim and the second held to it (no room: Devices); got %d NodeClaims, %v", len(res.NewNodeClaims), res.Unschedulable)
	}
}

// TestDRAMovingFreesOnlyItsClaims: a consolidation's moving pod gives back
// the devices of its own claim, and no other: pods are told apart by name
// when they have no UID, as a simulator's have none.
func TestDRAMovingFreesOnlyItsClaims(t *testing.T) {
	node := readyNode("gpu-node", "zone-a", 16)
	node.Labels[v1.LabelNodeInitialized] = "true"
	name := node.Name
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &name,
		Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}, Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	held := func(claim, pod, device string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default"}, Status: resourceapi.ResourceClaimStatus{
			Allocation:  &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: gpuDriver, Pool: name, Device: device}}}},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod}}}}
	}
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("one-gpu", 1, "", false)},
		Claims: []*resourceapi.ResourceClaim{held("a-gpu", "a", "gpu-0"), held("b-gpu", "b", "gpu-1")}, Slices: []*resourceapi.ResourceSlice{slice}}
	moving := pod("1", "1Gi")
	moving.Name = "c" // holds no claim of the node's
	for _, tc := range []struct {
		name   string
		moving *corev1.Pod
		onNode int
	}{{"another pod moves", moving, 0}, {"a holder moves", func() *corev1.Pod { p := pod("1", "1Gi"); p.Name = "a"; return p }(), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{pod("1", "1Gi", withClaim("one-gpu"))}, modelDRA(objs, node), func(s *Snapshot) {
				s.Moving = map[*corev1.Pod]bool{tc.moving: true}
			})
			requireAllPlaced(t, res)
			got := 0
			for _, e := range res.ExistingNodes {
				got += len(e.Pods)
			}
			if got != tc.onNode {
				t.Errorf("%d pods on the node whose GPUs a and b hold, want %d", got, tc.onNode)
			}
		})
	}
}

// existingWith is an initialized node publishing the slices.
func existingWith(slices ...*resourceapi.ResourceSlice) (*Node, []*resourceapi.ResourceSlice) {
	node := readyNode("dev-node", "zone-a", 64)
	node.Labels[v1.LabelNodeInitialized] = "true"
	for _, s := range slices {
		name := node.Name
		if s.Spec.NodeSelector == nil {
			s.Spec.NodeName = &name
		}
		s.Spec.Driver, s.Spec.Pool = gpuDriver, resourceapi.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: int64(len(slices))}
	}
	return node, slices
}

// placedOn counts the pods a plan puts on existing nodes.
func placedOn(res *Results) int {
	n := 0
	for _, e := range res.ExistingNodes {
		n += len(e.Pods)
	}
	return n
}

// TestDRAPartitionableDevices: a GPU offered whole or as two halves that
// draw on one counter set: two pods take the two halves, and then neither
// the whole GPU nor a third half is left — the counters say so.
func TestDRAPartitionableDevices(t *testing.T) {
	mem := func(q string) map[string]resourceapi.Counter {
		return map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(q)}}
	}
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "counters"}, Spec: resourceapi.ResourceSliceSpec{
		SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: mem("40Gi")}}}}
	part := func(name, q string) resourceapi.Device {
		profile := strings.TrimSuffix(strings.TrimSuffix(name, "-a"), "-b")
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": {StringValue: ptrTo(profile)}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: mem(q)}}}
	}
	devices := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "devices"}, Spec: resourceapi.ResourceSliceSpec{
		Devices: []resourceapi.Device{part("whole", "40Gi"), part("half-a", "20Gi"), part("half-b", "20Gi")}}}
	node, slices := existingWith(counters, devices)
	half := gpuTemplate("half", 1, "", false)
	half.Spec.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "half"`}}}
	whole := gpuTemplate("whole", 1, "", false)
	whole.Spec.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "whole"`}}}
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{half, whole}, Slices: slices}
	// Only the node can take them: no GPU type in the pool.
	noGPU := []*cloudprovider.InstanceType{it("m", 4)}
	res := solve(t, []*v1.NodePool{pool("p")}, noGPU, []*corev1.Pod{pod("1", "1Gi", withClaim("half")), pod("1", "1Gi", withClaim("half")),
		pod("1", "1Gi", withClaim("half")), pod("1", "1Gi", withClaim("whole"))}, modelDRA(objs, node))
	if got := placedOn(res); got != 2 || len(res.Unschedulable) != 2 {
		t.Fatalf("%d pods on the node, %d unschedulable: want the two halves placed, and a third half and the whole GPU not (%v)", got, len(res.Unschedulable), res.Unschedulable[0].Reason)
	}
	res = solve(t, []*v1.NodePool{pool("p")}, noGPU, []*corev1.Pod{pod("1", "1Gi", withClaim("whole")), pod("1", "1Gi", withClaim("half"))}, modelDRA(objs, node))
	if got := placedOn(res); got != 1 {
		t.Errorf("%d pods on the node: the whole GPU first leaves no half", got)
	}
}

// TestDRAConsumableCapacity: a device several claims may share, each
// taking 10Gi of its 40Gi: four fit, the fifth does not.
func TestDRAConsumableCapacity(t *testing.T) {
	multi := true
	shared := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: resourceapi.ResourceSliceSpec{
		Devices: []resourceapi.Device{{Name: "gpu-0", AllowMultipleAllocations: &multi,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}}}}}}
	node, slices := existingWith(shared)
	tpl := gpuTemplate("slice", 1, "", false)
	tpl.Spec.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("10Gi")}}
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{tpl}, Slices: slices}
	pods := times(5, func() *corev1.Pod { return pod("1", "1Gi", withClaim("slice")) })
	res := solve(t, []*v1.NodePool{pool("p")}, []*cloudprovider.InstanceType{it("m", 4)}, pods, modelDRA(objs, node))
	if got := placedOn(res); got != 4 || len(res.Unschedulable) != 1 {
		t.Fatalf("%d pods share the device, %d unschedulable: want four of 10Gi in 40Gi, and the fifth not", got, len(res.Unschedulable))
	}
}

// TestPublishedDrivers: a driver counts once a pool of the node's own is
// complete at its highest generation; another node's, an incomplete pool
// and a superseded generation do not.
func TestPublishedDrivers(t *testing.T) {
	slice := func(driver, node string, gen, count int64) *resourceapi.ResourceSlice {
		n := node
		return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &n,
			Pool: resourceapi.ResourcePool{Name: node + "/" + driver, Generation: gen, ResourceSliceCount: count}}}
	}
	owned := slice("nic.example.com", "", 1, 1)
	owned.Spec.NodeName = nil
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "n1"}}
	objs := &DRAObjects{Slices: []*resourceapi.ResourceSlice{
		slice("gpu.nvidia.com", "n1", 1, 1),
		slice("gpu.amd.com", "n1", 1, 2),                                             // one of two
		slice("fpga.example.com", "n1", 1, 1), slice("fpga.example.com", "n1", 2, 2), // generation 2 is one of two
		slice("tpu.example.com", "n2", 1, 1),
		owned,
	}}
	got := PublishedDrivers(objs, "n1")
	if len(got) != 2 || !got["gpu.nvidia.com"] || !got["nic.example.com"] {
		t.Errorf("published drivers %v, want gpu.nvidia.com and nic.example.com", got)
	}
}

// TestDRADriversOfPlan: a NodeClaim planned onto GPU devices names their
// driver, and one without device claims names none.
func TestDRADriversOfPlan(t *testing.T) {
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("one-gpu", 1, "", false)}}
	plain := pod("1", "1Gi", nodeSelector("family", "m"))
	res := solve(t, []*v1.NodePool{pool("p")}, gpuTypes(), []*corev1.Pod{pod("1", "1Gi", withClaim("one-gpu")), plain}, modelDRA(objs))
	requireAllPlaced(t, res)
	for _, nc := range res.NewNodeClaims {
		want := []string{gpuDriver}
		if nc.Pods[0] == plain {
			want = nil
		}
		if fmt.Sprint(nc.DRADrivers) != fmt.Sprint(want) {
			t.Errorf("NodeClaim of %s: drivers %v, want %v", nc.Pods[0].Name, nc.DRADrivers, want)
		}
	}
}

// TestDaemonSetDeviceClaimsOverhead: as upstream's, a DaemonSet pod that
// asks for devices is left out of a new node's overhead while DRA is not
// modelled (it could not run there), and counted when it is.
func TestDaemonSetDeviceClaimsOverhead(t *testing.T) {
	ds := pod("2", "1Gi", withClaim("one-gpu"))
	objs := &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass}, Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("one-gpu", 1, "", false)}}
	types := []*cloudprovider.InstanceType{it("m", 4), it("m", 8)}
	for _, tc := range []struct {
		name     string
		model    bool
		cheapest string
	}{{"ignored", false, "m.4x"}, {"modelled", true, "m.8x"}} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{pool("p")}, types, []*corev1.Pod{pod("3", "1Gi")}, func(s *Snapshot) {
				s.DaemonSets, s.Policy.ModelDRA, s.DRA = []*corev1.Pod{ds}, tc.model, objs
			})
			requireAllPlaced(t, res)
			if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].InstanceTypes[0].Name != tc.cheapest {
				t.Errorf("NodeClaims %v: want %s first (3 cores of pod, and the DaemonSet's 2 only when counted)", res.NewNodeClaims, tc.cheapest)
			}
		})
	}
}
