// Package buffer turns CapacityBuffers (autoscaling.x-k8s.io/v1beta1) into
// the virtual pods provisioning and consolidation place, as upstream
// Karpenter does behind its CapacityBuffer feature gate: a buffer resolves
// to a pod template and a number of chunks; each chunk is a pod that takes
// part in every scheduling simulation and never binds. Existing free
// capacity counts as buffer; only chunks that fit nowhere make new nodes.
//
// It holds no client and no clock: a host resolves its buffers with a
// Lookup over what it knows (the API server's cache, or the simulator's
// workloads) and hands the virtual pods to its state.Store.
package buffer

import (
	"errors"
	"fmt"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// ErrNotFound is what a Lookup returns for a PodTemplate or workload that
// does not exist.
var ErrNotFound = errors.New("not found")

// Target is what a buffer's reference resolves to: the pod template of a
// chunk, the referenced workload's spec.replicas (nil for a PodTemplate)
// and the PodTemplate's generation.
type Target struct {
	Template   corev1.PodTemplateSpec
	Replicas   *int32
	Generation *int64
}

// TargetOf is what a buffer that names obj resolves to, for the kinds a
// buffer may name: a PodTemplate (its template and generation), or an apps
// Deployment, StatefulSet or ReplicaSet (its template and spec.replicas);
// ok is false for any other object.
func TargetOf(obj any) (t *Target, ok bool) {
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		g := o.Generation
		return &Target{Template: o.Template, Generation: &g}, true
	case *appsv1.Deployment:
		return &Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}, true
	case *appsv1.StatefulSet:
		return &Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}, true
	case *appsv1.ReplicaSet:
		return &Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}, true
	}
	return nil, false
}

// Lookup finds what a buffer in namespace refers to: kind is "PodTemplate"
// or a scalableRef's kind (Deployment, StatefulSet, ReplicaSet). It returns
// an error wrapping ErrNotFound when there is none.
type Lookup func(kind, namespace, name string) (*Target, error)

// Resolved is a buffer as provisioning sees it.
type Resolved struct {
	Buffer *v1beta1.CapacityBuffer
	// Template is the chunk's pod template (nil when not Ready).
	Template *corev1.PodTemplateSpec
	// Replicas is the number of chunks (status.replicas).
	Replicas int32
	// Generation is the PodTemplate's (podTemplateRef buffers only).
	Generation *int64
	// Ready is the ReadyForProvisioning condition.
	Ready metav1.Condition
}

// Resolve resolves cb with lookup, as upstream's buffer controller does:
// the chunk's template from the PodTemplate or the workload, and the
// number of chunks — the larger of replicas and percentage (of the
// workload's spec.replicas, rounded up, at least 1), capped by limits
// (each limited resource over a chunk's request, rounded down).
func Resolve(cb *v1beta1.CapacityBuffer, lookup Lookup) Resolved {
	r := Resolved{Buffer: cb}
	var target *Target
	var err error
	var notFound string
	switch {
	case cb.Spec.PodTemplateRef != nil:
		target, err = lookup("PodTemplate", cb.Namespace, cb.Spec.PodTemplateRef.Name)
		notFound = v1beta1.ReasonPodTemplateNotFound
	case cb.Spec.ScalableRef != nil:
		ref := cb.Spec.ScalableRef
		if g := ref.APIGroup; g != "" && g != "apps" {
			err = fmt.Errorf("unsupported scalableRef API group %q", g)
			break
		}
		switch ref.Kind {
		case "Deployment", "StatefulSet", "ReplicaSet":
			target, err = lookup(ref.Kind, cb.Namespace, ref.Name)
		default:
			err = fmt.Errorf("unsupported kind %q", ref.Kind)
		}
		notFound = v1beta1.ReasonScalableRefNotFound
	default:
		r.Ready = condition(cb, v1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, v1beta1.ReasonResolutionFailed,
			"Neither podTemplateRef nor scalableRef is set")
		return r
	}
	switch {
	case errors.Is(err, ErrNotFound):
		r.Ready = condition(cb, v1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, notFound, err.Error())
		return r
	case err != nil:
		r.Ready = condition(cb, v1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, v1beta1.ReasonResolutionFailed, err.Error())
		return r
	}
	r.Template = &target.Template
	r.Generation = target.Generation
	r.Replicas = replicas(cb, target)
	r.Ready = condition(cb, v1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, v1beta1.ReasonResolved, "Pod template resolved successfully")
	return r
}

// replicas is the number of chunks (upstream's computeReplicas).
func replicas(cb *v1beta1.CapacityBuffer, target *Target) int32 {
	var candidates []int32
	if p := cb.Spec.Percentage; p != nil && cb.Spec.ScalableRef != nil {
		scalable := int32(1)
		if target.Replicas != nil {
			scalable = *target.Replicas
		}
		if scalable > 0 {
			n := int32(math.Ceil(float64(scalable) * float64(*p) / 100))
			if n < 1 && *p > 0 {
				n = 1
			}
			candidates = append(candidates, n)
		}
	}
	if cb.Spec.Replicas != nil {
		candidates = append(candidates, *cb.Spec.Replicas)
	}
	desired := int32(0)
	for _, c := range candidates {
		desired = max(desired, c)
	}
	if len(cb.Spec.Limits) > 0 {
		if byLimits, ok := limitReplicas(corev1.ResourceList(cb.Spec.Limits), &target.Template.Spec); ok {
			if len(candidates) > 0 {
				return min(desired, byLimits)
			}
			return byLimits
		}
	}
	return desired
}

// limitReplicas is how many chunks fit the limits: per resource both limit
// and request, the limit over the request rounded down, the least of them;
// ok is false when no limited resource is requested.
func limitReplicas(limits corev1.ResourceList, spec *corev1.PodSpec) (int32, bool) {
	requests := scheduling.PodRequests(&corev1.Pod{Spec: *spec})
	names := make([]string, 0, len(limits))
	for name := range limits {
		names = append(names, string(name))
	}
	sort.Strings(names)
	least, ok := int64(math.MaxInt32), false
	for _, name := range names {
		limit := limits[corev1.ResourceName(name)]
		req, found := requests[corev1.ResourceName(name)]
		if !found || req.MilliValue() == 0 {
			continue
		}
		least, ok = min(least, limit.MilliValue()/req.MilliValue()), true
	}
	return int32(least), ok
}

func condition(cb *v1beta1.CapacityBuffer, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: cb.Generation}
}

// VirtualPods are r's chunks as pods (none unless Ready): named
// capacity-buffer-<buffer>-<i> in the buffer's namespace, with the
// template's labels (so spread and affinity selectors see them), marked
// by upstream's annotations, at the lowest priority, created when the
// buffer was, and unschedulable so provisioning takes them. Volumes of
// claims are left out: a chunk holds room, not storage.
func VirtualPods(r Resolved) []*corev1.Pod {
	if r.Template == nil || r.Ready.Status != metav1.ConditionTrue || r.Replicas <= 0 {
		return nil
	}
	cb := r.Buffer
	spec := sanitize(&r.Template.Spec)
	out := make([]*corev1.Pod, 0, r.Replicas)
	for i := int32(1); i <= r.Replicas; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("capacity-buffer-%s-%d", cb.Name, i), Namespace: cb.Namespace,
				UID:               types.UID(fmt.Sprintf("%s-%d", cb.UID, i)),
				Labels:            r.Template.Labels,
				CreationTimestamp: cb.CreationTimestamp,
				Annotations: map[string]string{v1beta1.AnnotationVirtualPod: "true", v1beta1.AnnotationBufferName: cb.Name,
					v1beta1.AnnotationBufferNamespace: cb.Namespace},
			},
			Spec: *spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
		}
		out = append(out, pod)
	}
	return out
}

// VirtualPriority is a chunk's priority: the lowest there is.
const VirtualPriority = math.MinInt32

// sanitize is the template's spec without a node, without volumes of
// claims (and their mounts), at VirtualPriority.
func sanitize(in *corev1.PodSpec) *corev1.PodSpec {
	spec := in.DeepCopy()
	spec.NodeName = ""
	dropped := map[string]bool{}
	kept := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			dropped[v.Name] = true
			continue
		}
		kept = append(kept, v)
	}
	spec.Volumes = kept
	unmount := func(cs []corev1.Container) {
		for i := range cs {
			ms := cs[i].VolumeMounts[:0]
			for _, m := range cs[i].VolumeMounts {
				if !dropped[m.Name] {
					ms = append(ms, m)
				}
			}
			cs[i].VolumeMounts = ms
		}
	}
	unmount(spec.Containers)
	unmount(spec.InitContainers)
	p := int32(VirtualPriority)
	spec.Priority = &p
	return spec
}

// IsVirtual says whether the pod is a buffer's chunk.
func IsVirtual(p *corev1.Pod) bool { return p.Annotations[v1beta1.AnnotationVirtualPod] == "true" }

// Of names the buffer (namespace/name) a virtual pod is a chunk of.
func Of(p *corev1.Pod) string {
	return p.Annotations[v1beta1.AnnotationBufferNamespace] + "/" + p.Annotations[v1beta1.AnnotationBufferName]
}

// Placement is where one pass put a buffer's chunks.
type Placement struct {
	Existing, New, Failed int
}

// Place counts, per buffer (namespace/name), where the pass res put its
// chunks, and per existing node how many chunks it holds (what keeps
// emptiness off it, as upstream's buffer pod counts do).
func Place(res *provisioning.Results) (byBuffer map[string]Placement, onNodes map[string]int) {
	byBuffer, onNodes = map[string]Placement{}, map[string]int{}
	count := func(pod *corev1.Pod, field func(*Placement) *int) bool {
		if !IsVirtual(pod) {
			return false
		}
		p := byBuffer[Of(pod)]
		*field(&p)++
		byBuffer[Of(pod)] = p
		return true
	}
	for _, plan := range res.ExistingNodes {
		for _, pod := range plan.Pods {
			if count(pod, func(p *Placement) *int { return &p.Existing }) {
				onNodes[plan.Node.Name]++
			}
		}
	}
	for _, plan := range res.NewNodeClaims {
		for _, pod := range plan.Pods {
			count(pod, func(p *Placement) *int { return &p.New })
		}
	}
	for _, pe := range res.Unschedulable {
		count(pe.Pod, func(p *Placement) *int { return &p.Failed })
	}
	return byBuffer, onNodes
}

// ProvisioningCondition is the Provisioning condition after a pass that
// placed the buffer's chunks as p, as upstream words it; nil leaves the
// condition as it was (the pass saw only some of the chunks).
func ProvisioningCondition(r Resolved, p Placement) *metav1.Condition {
	cb := r.Buffer
	c := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		out := condition(cb, v1beta1.ConditionProvisioning, status, reason, msg)
		return &out
	}
	switch {
	case r.Ready.Status != metav1.ConditionTrue:
		return c(metav1.ConditionFalse, v1beta1.ReasonNotReady, "Buffer is not ReadyForProvisioning")
	case r.Replicas <= 0:
		return c(metav1.ConditionFalse, v1beta1.ReasonBufferEmpty, "Buffer has zero desired replicas")
	case p.New > 0 || p.Failed > 0:
		return c(metav1.ConditionFalse, v1beta1.ReasonRequiresNewCapacity,
			fmt.Sprintf("%d/%d virtual pods required new capacity, %d failed", p.New, r.Replicas, p.Failed))
	case p.Existing >= int(r.Replicas):
		return c(metav1.ConditionTrue, v1beta1.ReasonFitsExistingCapacity, fmt.Sprintf("All %d virtual pods fit on existing capacity", r.Replicas))
	}
	return nil
}

// Status is the buffer's status after resolving it as r, from old: the
// chunks, the PodTemplate observed (podTemplateRef buffers only), the
// strategy and the ReadyForProvisioning condition, as upstream's buffer
// controller writes them. A condition's transition time moves only when
// its status does.
func Status(r Resolved, old v1beta1.CapacityBufferStatus, now metav1.Time) v1beta1.CapacityBufferStatus {
	st := *old.DeepCopy()
	cb := r.Buffer
	st.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	if r.Ready.Status == metav1.ConditionTrue {
		n := r.Replicas
		st.Replicas = &n
		st.PodTemplateRef, st.PodTemplateGeneration = nil, nil
		if ref := cb.Spec.PodTemplateRef; ref != nil {
			st.PodTemplateRef = &v1beta1.LocalObjectRef{Name: ref.Name}
			st.PodTemplateGeneration = r.Generation
		}
	}
	c := r.Ready
	c.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}
