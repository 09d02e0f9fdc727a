package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// FieldManager is the field manager of the controller's writes that the
// controller must recognise later as its own: the pods' nominations.
const FieldManager = "joiner"

// nominateWorkers is how many of one Node's pods are nominated at once.
const nominateWorkers = 8

// nominator nominates the pods a claim was launched for to its Node
// (provisioning.Policy.NominatesPods) before kube-scheduler may use it.
type nominator struct {
	client client.Client
	// nominees are the pods to nominate to the claim's Node, once
	// (state.Store.Nominees).
	nominees func(claim string) []*corev1.Pod
}

// nominate sets each of the claim's nominees' status.nominatedNodeName to
// node, as KEP-5278 has an autoscaler say where it planned a pod:
// kube-scheduler then tries the pod on that node first, and keeps its room
// from other pods of its priority. Only pods whose place the plan pinned
// are nominated (see pinned): the others fit wherever room is left, and
// each nomination is a write. A pod whose status changed since the Store
// read it (its resourceVersion) is left as it is — kube-scheduler may have
// nominated it for a preemption, which is kube-scheduler's to change — as
// is one gone. It returns how many were nominated.
func (n *nominator) nominate(ctx context.Context, claim, node string) int {
	if n == nil {
		return 0
	}
	var pods []*corev1.Pod
	for _, p := range n.nominees(claim) {
		if pinned(p) {
			pods = append(pods, p)
		}
	}
	var done atomic.Int32
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(pods), func(i int) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pods[i].Namespace, Name: pods[i].Name}}
		err := n.client.Status().Patch(ctx, pod,
			client.RawPatch(types.MergePatchType, nominationPatch(pods[i].ResourceVersion, node)), client.FieldOwner(FieldManager))
		switch {
		case err == nil:
			done.Add(1)
		case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
			log.FromContext(ctx).Error(err, "nominating a pod to the Node launched for it", "pod", pods[i].Namespace+"/"+pods[i].Name, "node", node)
		}
	})
	return int(done.Load())
}

// nominationPatch is the merge patch of a pod's status that nominates it
// to node if its resourceVersion is still rv.
func nominationPatch(rv, node string) []byte {
	b, _ := json.Marshal(map[string]any{
		"metadata": map[string]string{"resourceVersion": rv},
		"status":   map[string]string{"nominatedNodeName": node},
	})
	return b
}

// pinned: the plan put the pod where it did for a reason kube-scheduler
// enforces — a topology spread that may not be broken, or required pod
// (anti-)affinity — so elsewhere it may find no room, or break the plan
// of others like it.
func pinned(p *corev1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	a := p.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0)
}

// nominatedByJoiner: the pod's nomination is one the controller wrote
// (FieldManager owns status.nominatedNodeName), read off managedFields
// before the cache drops them (TrimPod).
func nominatedByJoiner(p *corev1.Pod) bool {
	if p.Status.NominatedNodeName == "" {
		return false
	}
	for _, m := range p.ManagedFields {
		if m.Manager == FieldManager && m.Subresource == "status" && m.FieldsV1 != nil &&
			bytes.Contains(m.FieldsV1.Raw, []byte(`"f:nominatedNodeName"`)) {
			return true
		}
	}
	return false
}
