package podutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func TestMatchingPDBsSelectors(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", Labels: map[string]string{"app": "cart"}}}
	pdb := func(ns string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	for _, tc := range []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		want bool
	}{
		{"matching labels", pdb("shop", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}), true},
		{"other labels", pdb("shop", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}), false},
		{"empty selector: every pod of the namespace (policy/v1)", pdb("shop", &metav1.LabelSelector{}), true},
		{"null selector: none", pdb("shop", nil), false},
		{"another namespace", pdb("other", &metav1.LabelSelector{}), false},
	} {
		if got := len(MatchingPDBs(p, []*policyv1.PodDisruptionBudget{tc.pdb})) == 1; got != tc.want {
			t.Errorf("%s: matches %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPodFacts(t *testing.T) {
	yes := true
	owned := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &yes}}
		}
	}
	now := metav1.Now()
	seconds := int64(90)
	for _, tc := range []struct {
		name                                      string
		opt                                       func(*corev1.Pod)
		active, daemon, mirror, reschedule, stays bool
	}{
		{"a Deployment's pod", owned("ReplicaSet"), true, false, false, true, false},
		{"a DaemonSet's pod", owned("DaemonSet"), true, true, false, false, false},
		{"a mirror pod", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"} }, true, false, true, false, false},
		{"owned by its Node", owned("Node"), true, false, true, false, false},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, false, false, false, false, false},
		{"terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, false, false, false, false, false},
		{"a StatefulSet's pod, terminating: its replacement waits for it", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: &yes}}
			p.DeletionTimestamp = &now
		}, false, false, false, true, false},
		{"tolerates everything", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }, true, false, false, true, true},
		{"tolerates the disrupted taint", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedTaint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, true, false, false, true, true},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		tc.opt(p)
		if IsActive(p) != tc.active || IsDaemonSetPod(p) != tc.daemon || IsMirrorPod(p) != tc.mirror || IsReschedulable(p) != tc.reschedule || ToleratesDisrupted(p) != tc.stays {
			t.Errorf("%s: active %v daemon %v mirror %v reschedulable %v tolerates-disrupted %v", tc.name, IsActive(p), IsDaemonSetPod(p), IsMirrorPod(p), IsReschedulable(p), ToleratesDisrupted(p))
		}
	}
	p := &corev1.Pod{}
	if GracePeriod(p) != 30*time.Second {
		t.Errorf("default grace %s", GracePeriod(p))
	}
	p.Spec.TerminationGracePeriodSeconds = &seconds
	if GracePeriod(p) != 90*time.Second {
		t.Errorf("grace %s", GracePeriod(p))
	}
	if Namespace(metav1.ObjectMeta{}) != "default" || Namespace(metav1.ObjectMeta{Namespace: "shop"}) != "shop" {
		t.Error("namespace default")
	}
}
