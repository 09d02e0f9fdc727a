package controller

import (
	"context"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// spreadSelectors deduces the selector of a pod's default topology spread
// constraints (--scheduler-config) as kube-scheduler does, from the
// manager's cache of Services and of ReplicaSets, StatefulSets and
// ReplicationControllers. Its answers are kept by (namespace, controller,
// labels) — a workload's pods share them — until one of those kinds
// changes a selector (forget). It is safe for concurrent use.
type spreadSelectors struct {
	reader client.Reader
	// ready: the four kinds' handlers have had their informers' whole
	// lists. Before that no pod gets defaults; the sync gate's last step
	// makes it ready and applies them to every pod (storeFeed.complete).
	ready atomic.Bool

	mu    sync.Mutex
	known map[spreadKey]*metav1.LabelSelector
}

type spreadKey struct {
	namespace string
	owner     types.UID
	labels    string
}

// selector is state.SpreadDefaults.Selector.
func (s *spreadSelectors) selector(p *corev1.Pod) *metav1.LabelSelector {
	if !s.ready.Load() {
		return nil
	}
	key := spreadKey{namespace: p.Namespace, labels: labels.Set(p.Labels).String()}
	owner := metav1.GetControllerOfNoCopy(p)
	if owner != nil {
		key.owner = owner.UID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sel, ok := s.known[key]; ok {
		return sel
	}
	ctx := context.Background()
	var services corev1.ServiceList
	var svcs []*corev1.Service
	if err := s.reader.List(ctx, &services, client.InNamespace(p.Namespace)); err == nil {
		for i := range services.Items {
			svcs = append(svcs, &services.Items[i])
		}
	}
	sel := schedulerconfig.DefaultSelector(p, svcs, s.ownerOf(ctx, p.Namespace, owner))
	if s.known == nil {
		s.known = map[spreadKey]*metav1.LabelSelector{}
	}
	s.known[key] = sel
	return sel
}

// ownerOf is what the pod's controller contributes; nothing when it is
// not a ReplicationController, ReplicaSet or StatefulSet or is gone (as
// kube-scheduler, which goes on without it).
func (s *spreadSelectors) ownerOf(ctx context.Context, namespace string, ref *metav1.OwnerReference) schedulerconfig.Owner {
	if ref == nil {
		return schedulerconfig.Owner{}
	}
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	switch ref.APIVersion + "/" + ref.Kind {
	case "v1/ReplicationController":
		var rc corev1.ReplicationController
		if s.reader.Get(ctx, key, &rc) == nil && rc.UID == ref.UID {
			return schedulerconfig.Owner{Labels: rc.Spec.Selector}
		}
	case "apps/v1/ReplicaSet":
		var rs appsv1.ReplicaSet
		if s.reader.Get(ctx, key, &rs) == nil && rs.UID == ref.UID {
			return schedulerconfig.Owner{Selector: rs.Spec.Selector}
		}
	case "apps/v1/StatefulSet":
		var ss appsv1.StatefulSet
		if s.reader.Get(ctx, key, &ss) == nil && ss.UID == ref.UID {
			return schedulerconfig.Owner{Selector: ss.Spec.Selector}
		}
	}
	return schedulerconfig.Owner{}
}

// forget drops every answer kept.
func (s *spreadSelectors) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known = nil
}

// spreadHandlers are the informer handlers that re-deduce the selectors
// when one may have changed: a Service comes, goes or changes its
// selector; a ReplicaSet, StatefulSet or ReplicationController comes (its
// pods may have come first), or a ReplicationController changes its
// selector (the others' are immutable). Status updates, the most of their
// events, change nothing.
func spreadHandlers(sel *spreadSelectors, store *state.Store) []informerHandler {
	respread := func() {
		if !sel.ready.Load() {
			return // the gate's last step applies them once
		}
		sel.forget()
		store.Respread()
	}
	selectorChanged := func(selector func(any) any) toolscache.ResourceEventHandler {
		return toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { respread() },
			UpdateFunc: func(old, new any) {
				if !equality.Semantic.DeepEqual(selector(old), selector(new)) {
					respread()
				}
			},
			DeleteFunc: func(any) { respread() },
		}
	}
	added := toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { respread() }}
	return []informerHandler{
		{"Services", &corev1.Service{}, selectorChanged(func(o any) any { return o.(*corev1.Service).Spec.Selector })},
		{"ReplicationControllers", &corev1.ReplicationController{}, selectorChanged(func(o any) any { return o.(*corev1.ReplicationController).Spec.Selector })},
		{"ReplicaSets", &appsv1.ReplicaSet{}, added},
		{"StatefulSets", &appsv1.StatefulSet{}, added},
	}
}
