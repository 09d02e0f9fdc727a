//go:build integration

package integration

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
)

// TestControllerAllocatesDeviceClaims: with --ignore-dra-requests=false the
// controller watches resource.k8s.io on the real API server and plans a
// pod that claims two L4 GPUs (through a template, before any
// kube-controller-manager made its claim) onto a NodeClaim whose instance
// types all have two L4s or more: of a pool that admits every g-type and
// some CPU types, none with fewer or other GPUs.
func TestControllerAllocatesDeviceClaims(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, stop := runController(t, scheme, kwokProvider(t), func(o *controller.Options) { o.Policy.ModelDRA = true })
	defer stop()
	const pool = "devices"
	np := createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"g", "m"}},
		}
	})
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}}}}
	tpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "two-l4", Namespace: "default"}, Spec: resourceapi.ResourceClaimTemplateSpec{
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2,
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "l4"`}}}}}}}}}}
	if err := kc.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(ctx, class) }()
	if err := kc.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(ctx, tpl) }()
	pod := pendingPodWith(t, kc, "two-l4", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"pool": pool}
		name := tpl.Name
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &name}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	})
	defer func() { _ = kc.Delete(ctx, pod) }()
	nc := claimOfPool(t, kc, pool)
	defer removePool(t, kc, pool, np)

	types := map[string]int{} // L4s by type
	its := catalogTypes(t, catalog.Options{Region: "us-east-1"})
	for _, it := range its {
		for _, ds := range it.Devices {
			for _, d := range ds.Devices {
				if a, ok := d.Attributes["productName"]; ok && a.StringValue != nil && *a.StringValue == "l4" {
					types[it.Name]++
				}
			}
		}
	}
	var allowed []string
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType {
			allowed = r.Values
		}
	}
	if len(allowed) == 0 {
		t.Fatalf("the NodeClaim names no instance types: %v", nc.Spec.Requirements)
	}
	for _, name := range allowed {
		if types[name] < 2 {
			t.Errorf("the NodeClaim may launch %s, which has %d L4s: want only types with two or more", name, types[name])
		}
	}
	if !slices.ContainsFunc(allowed, func(n string) bool { return types[n] >= 2 }) {
		t.Errorf("instance types %v", allowed)
	}

	// The claim names the driver, and is not Initialized — its Node Ready
	// or not — until that driver has published a complete pool for it.
	if got := nc.Annotations[v1.AnnotationDRADrivers]; got != "gpu.nvidia.com" {
		t.Errorf("annotation %s = %q, want gpu.nvidia.com", v1.AnnotationDRADrivers, got)
	}
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)
	eventually(t, "Initialized Unknown: DRADriverPoolsNotPublished", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil {
			return false, err
		}
		c := conditionOf(&nc, v1.ConditionInitialized)
		return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == "DRADriverPoolsNotPublished", nil
	})
	name := node.Name
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node.Name + "-gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", NodeName: &name, Pool: resourceapi.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	if err := kc.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(ctx, slice) }()
	eventually(t, "Initialized once the driver published", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil {
			return false, err
		}
		return claimCondition(&nc, v1.ConditionInitialized), nil
	})
}

// conditionOf is the claim's condition of type t, nil when it has none.
func conditionOf(nc *v1.NodeClaim, t string) *v1.Condition {
	for i := range nc.Status.Conditions {
		if nc.Status.Conditions[i].Type == t {
			return &nc.Status.Conditions[i]
		}
	}
	return nil
}
