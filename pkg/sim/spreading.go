package sim

import (
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// defaultSpreadSelector is kube-scheduler's DefaultSelector for pods with
// these labels in a namespace: the selectors of the Services that select
// them, merged, and the owning ReplicaSet's or StatefulSet's selector
// (owner, nil for none) added. An empty result: no default spreading.
func defaultSpreadSelector(namespace string, podLabels map[string]string, services []*corev1.Service, owner k8slabels.Selector) k8slabels.Selector {
	set := k8slabels.Set{}
	for _, svc := range services {
		if podutil.Namespace(svc.ObjectMeta) != namespace || svc.Spec.Selector == nil {
			continue
		}
		if k8slabels.SelectorFromSet(svc.Spec.Selector).Matches(k8slabels.Set(podLabels)) {
			set = k8slabels.Merge(set, svc.Spec.Selector)
		}
	}
	sel := set.AsSelector()
	if owner != nil {
		if reqs, ok := owner.Requirements(); ok {
			sel = sel.Add(reqs...)
		}
	}
	return sel
}
