package sim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
)

func TestDefaultSpreadSelector(t *testing.T) {
	svc := func(ns string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	services := []*corev1.Service{
		svc("shop", map[string]string{"app": "checkout"}),
		svc("shop", map[string]string{"tier": "web"}),
		svc("other", map[string]string{"app": "checkout"}), // another namespace
		svc("shop", nil), // no selector: selects nothing
		svc("shop", map[string]string{"app": "cart"}), // does not select the pod
	}
	pod := map[string]string{"app": "checkout", "tier": "web", "version": "v2"}
	owner := k8slabels.SelectorFromSet(k8slabels.Set{"app": "checkout", "pod-template-hash": "abc"})
	all := k8slabels.Set{"app": "checkout", "tier": "web", "pod-template-hash": "abc"}
	drop := func(k string) k8slabels.Set {
		out := k8slabels.Set{}
		for kk, v := range all {
			if kk != k {
				out[kk] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		owner    k8slabels.Selector
		needs    []string // each label the selector requires
	}{
		{"services and owner", services, owner, []string{"app", "tier", "pod-template-hash"}},
		{"services only (a bare pod)", services, nil, []string{"app", "tier"}},
		{"owner only", nil, owner, []string{"app", "pod-template-hash"}},
		{"neither", nil, nil, nil},
	} {
		sel := defaultSpreadSelector("shop", pod, tc.services, tc.owner)
		if sel.Empty() != (len(tc.needs) == 0) || !sel.Matches(all) && len(tc.needs) > 0 {
			t.Errorf("%s: %q should select the pod's siblings", tc.name, sel)
		}
		for _, k := range []string{"app", "tier", "pod-template-hash"} {
			needed := false
			for _, n := range tc.needs {
				needed = needed || n == k
			}
			if needed == sel.Matches(drop(k)) {
				t.Errorf("%s: %q requires %s: %v, want %v", tc.name, sel, k, !sel.Matches(drop(k)), needed)
			}
		}
	}
}
