package lint

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// deviceClaim is a ResourceClaimTemplate's or an unallocated
// ResourceClaim's spec, with the API server's defaults.
type deviceClaim struct {
	kind, namespace, name string
	spec                  resourceapi.ResourceClaimSpec
}

// deviceFindings: a device claim that no instance type any NodePool of the
// set admits can hold — more GPUs than the largest has, a product none
// has, a class that selects nothing there — leaves its pods pending once
// DRA is modelled (--ignore-dra-requests=false) (JNR019). Claims naming a
// DeviceClass not in the set are not judged: a driver's chart installs
// its classes.
func (l *Linter) deviceFindings(s *set) []Finding {
	var pools []*v1.NodePool
	classes := map[string]*resourceapi.DeviceClass{}
	var claims []*object
	for _, o := range s.objects {
		switch {
		case o.pool != nil:
			pools = append(pools, o.pool)
		case o.deviceClass != nil:
			classes[o.deviceClass.Name] = o.deviceClass
		case o.deviceClaim != nil:
			claims = append(claims, o)
		}
	}
	if len(pools) == 0 || len(claims) == 0 {
		return nil
	}
	types := map[string][]*cloudprovider.InstanceType{}
	var candidates []*cloudprovider.InstanceType
	for _, np := range pools {
		for _, t := range l.types.matching(scheduling.FromNodePool(np)) {
			if len(t.it.Devices) > 0 {
				types[np.Name] = append(types[np.Name], t.it)
				candidates = append(candidates, t.it)
			}
		}
	}
	objs := &provisioning.DRAObjects{}
	for _, c := range classes {
		objs.Classes = append(objs.Classes, c)
	}
	var fs []Finding
	for _, o := range claims {
		c := o.deviceClaim
		if !classesIn(c.spec, classes) {
			continue
		}
		tpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "lint", Namespace: "lint"}, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: c.spec}}
		objs.Templates = []*resourceapi.ResourceClaimTemplate{tpl}
		alloc := provisioning.NewDeviceAllocator(objs, types, nil)
		name := tpl.Name
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "lint"}, Spec: corev1.PodSpec{
			ResourceClaims: []corev1.PodResourceClaim{{Name: "c", ResourceClaimTemplateName: &name}}}}
		fits := false
		var why error
		for _, it := range candidates {
			n := &provisioning.Node{Name: "lint-" + it.Name, NodePool: "lint", InFlight: true, Labels: map[string]string{corev1.LabelInstanceTypeStable: it.Name}}
			if _, err := alloc.Fits(n, pod); err == nil {
				fits = true
				break
			} else {
				why = err
			}
		}
		if fits {
			continue
		}
		detail := "none of them has devices"
		if why != nil && len(candidates) > 0 {
			detail = why.Error()
		}
		fs = append(fs, finding(o.doc, RuleDeviceClaimUnsatisfiable, specField(c.kind),
			fmt.Sprintf("%s %s asks for devices no instance type the NodePools admit (%s) can give: %s; with --ignore-dra-requests=false its pods stay pending",
				c.kind, c.name, poolNames(pools), detail),
			"ask for fewer devices or fix the selector, or widen a NodePool's requirements to instance types that have them (GPU types: one device per GPU)"))
	}
	return fs
}

func specField(kind string) string {
	if kind == "ResourceClaimTemplate" {
		return "spec.spec.devices.requests"
	}
	return "spec.devices.requests"
}

func poolNames(pools []*v1.NodePool) string {
	names := make([]string, len(pools))
	for i, p := range pools {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// classesIn says every DeviceClass the claim names is in classes.
func classesIn(spec resourceapi.ResourceClaimSpec, classes map[string]*resourceapi.DeviceClass) bool {
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil && classes[r.Exactly.DeviceClassName] == nil {
			return false
		}
		for _, sub := range r.FirstAvailable {
			if classes[sub.DeviceClassName] == nil {
				return false
			}
		}
	}
	return true
}
