package sim

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// The simulated cluster's Dynamic Resource Allocation, under
// --ignore-dra-requests=false: the scenario's DeviceClasses, claim
// templates, claims and slices are the API server's; kube-controller-
// manager makes each pod's claims from its templates (<pod>-<claim>) and
// deletes them with the pod; a node's DRA driver publishes its type's
// devices once the node is ready; kube-scheduler allocates a pod's claims
// where it binds it and reserves them for the pod. Without it the objects
// are named as left out, and a pod that asks for devices never runs.

// startDRA hands the scenario's DRA objects to the Store, or names them
// as left out.
func (e *simulation) startDRA() {
	if !e.modelDRA() {
		return // the report names them (ignoredDocs)
	}
	for _, c := range e.in.DRA.Classes {
		c = c.DeepCopy()
		c.ResourceVersion = e.nextRV()
		e.st.SetDeviceClass(c)
	}
	for _, t := range e.in.DRA.Templates {
		t = t.DeepCopy()
		t.ResourceVersion = e.nextRV()
		e.st.SetResourceClaimTemplate(t)
	}
	for _, c := range e.in.DRA.Claims {
		e.setResourceClaim(c.DeepCopy())
	}
	for _, s := range e.in.DRA.Slices {
		s = s.DeepCopy()
		s.ResourceVersion = e.nextRV()
		e.st.SetResourceSlice(s)
	}
}

// ignoredDocs are the input's documents the run left out: the DRA ones
// too, when DRA is not modelled.
func (e *simulation) ignoredDocs() []manifest.Ignored {
	if e.modelDRA() || len(e.in.DRADocs) == 0 {
		return e.in.Ignored
	}
	return append(append([]manifest.Ignored(nil), e.in.Ignored...), e.in.DRADocs...)
}

func (e *simulation) modelDRA() bool { return e.decider.Policy().ModelDRA }

func (e *simulation) setResourceClaim(c *resourceapi.ResourceClaim) {
	c.ResourceVersion = e.nextRV()
	e.st.SetResourceClaim(c)
}

// makeClaims makes the pod's claims from their templates, as
// kube-controller-manager's resourceclaim controller does, and records
// them in the pod's status; claims there already are kept.
func (e *simulation) makeClaims(pod *corev1.Pod) []corev1.PodResourceClaimStatus {
	var statuses []corev1.PodResourceClaimStatus
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName == nil {
			continue
		}
		name := pod.Name + "-" + rc.Name
		statuses = append(statuses, corev1.PodResourceClaimStatus{Name: rc.Name, ResourceClaimName: &name})
		if e.st.ResourceClaim(pod.Namespace, name) != nil {
			continue
		}
		t := e.st.ResourceClaimTemplate(pod.Namespace, *rc.ResourceClaimTemplateName)
		if t == nil {
			continue // provisioning says the template is missing
		}
		e.setResourceClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace,
			Labels: t.Spec.Labels, Annotations: t.Spec.Annotations, CreationTimestamp: metav1.NewTime(e.clk.now)}, Spec: *t.Spec.Spec.DeepCopy()})
	}
	return statuses
}

// allocateClaims writes what kube-scheduler allocated for the pod it bound:
// each claim's allocation, reserved for the pod.
func (e *simulation) allocateClaims(pod *corev1.Pod, allocs []provisioning.ClaimAllocation) {
	for _, a := range allocs {
		c := e.st.ResourceClaim(a.Namespace, a.Name)
		if c == nil {
			continue
		}
		c = c.DeepCopy()
		result := a.Result
		c.Status.Allocation = &result
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
		e.setResourceClaim(c)
	}
	for _, rc := range pod.Spec.ResourceClaims { // a shared claim allocated before: the pod joins it
		if rc.ResourceClaimName == nil {
			continue
		}
		c := e.st.ResourceClaim(pod.Namespace, *rc.ResourceClaimName)
		if c == nil || c.Status.Allocation == nil || reserves(c, pod) {
			continue
		}
		c = c.DeepCopy()
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
		e.setResourceClaim(c)
	}
}

func reserves(c *resourceapi.ResourceClaim, pod *corev1.Pod) bool {
	for _, r := range c.Status.ReservedFor {
		if r.Name == pod.Name {
			return true
		}
	}
	return false
}

// releaseClaims is a pod's end: its own claims are deleted with it, and a
// shared claim no pod holds any more gives its devices back.
func (e *simulation) releaseClaims(pod *corev1.Pod) {
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName != nil {
			e.st.DeleteResourceClaim(pod.Namespace, pod.Name+"-"+rc.Name)
			continue
		}
		if rc.ResourceClaimName == nil {
			continue
		}
		c := e.st.ResourceClaim(pod.Namespace, *rc.ResourceClaimName)
		if c == nil || !reserves(c, pod) {
			continue
		}
		c = c.DeepCopy()
		kept := c.Status.ReservedFor[:0]
		for _, r := range c.Status.ReservedFor {
			if r.Name != pod.Name {
				kept = append(kept, r)
			}
		}
		c.Status.ReservedFor = kept
		if len(kept) == 0 {
			c.Status.Allocation, c.Status.ReservedFor = nil, nil
		}
		e.setResourceClaim(c)
	}
}

// publishDevices is the node's DRA drivers starting: its type's devices
// as ResourceSlices of the node's own.
func (e *simulation) publishDevices(n *simNode) {
	if !e.modelDRA() {
		return
	}
	for _, s := range provisioning.TemplateSlices(n.it, n.name) {
		s.ResourceVersion = e.nextRV()
		e.st.SetResourceSlice(s)
	}
}

// unpublishDevices is the node gone: its slices go with it.
func (e *simulation) unpublishDevices(n *simNode) {
	if !e.modelDRA() {
		return
	}
	for _, s := range provisioning.TemplateSlices(n.it, n.name) {
		e.st.DeleteResourceSlice(s.Name)
	}
}
