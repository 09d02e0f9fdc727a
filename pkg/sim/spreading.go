package sim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/state"
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

// setSpreadDefaults gives the Store the scenario's default topology
// spread (spec.schedulerConfig), if any: pods with no spread of their own
// are provisioned, consolidated and bound (the kube-scheduler model reads
// the Store's pods) under it, each with its workload's deduced selector.
func (e *simulation) setSpreadDefaults() {
	defaults := e.in.Scenario.Spec.SchedulerConfig.DefaultConstraints()
	if len(defaults) == 0 {
		return
	}
	known := map[string]*metav1.LabelSelector{}
	e.st.SetSpreadDefaults(state.SpreadDefaults{Constraints: defaults, Selector: func(p *corev1.Pod) *metav1.LabelSelector {
		key := p.Namespace + "\x00" + k8slabels.Set(p.Labels).String()
		if owner := metav1.GetControllerOfNoCopy(p); owner != nil {
			key = owner.Kind + "\x00" + p.Namespace + "\x00" + owner.Name
		}
		if sel, ok := known[key]; ok {
			return sel
		}
		spread := defaultSpreadSelector(p.Namespace, p.Labels, e.in.Services, nil)
		if owner := metav1.GetControllerOfNoCopy(p); owner != nil {
			for _, w := range e.workloads {
				if w.kind == owner.Kind && w.namespace == p.Namespace && w.name == owner.Name {
					spread = w.spread
					break
				}
			}
		}
		var sel *metav1.LabelSelector
		if spread != nil && !spread.Empty() {
			sel, _ = metav1.ParseToLabelSelector(spread.String()) // a selector's own String parses
		}
		known[key] = sel
		return sel
	}})
}
