package kubescheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type podOpt func(*corev1.Pod)

var podSeq int

func pod(cpu, mem string, opts ...podOpt) *corev1.Pod {
	podSeq++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", podSeq), Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func label(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func tolerate(key string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func affinity(a *corev1.Affinity) podOpt { return func(p *corev1.Pod) { p.Spec.Affinity = a } }

func spread(key string, maxSkew int32, opts ...func(*corev1.TopologySpreadConstraint)) podOpt {
	return func(p *corev1.Pod) {
		tsc := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}}
		for _, o := range opts {
			o(&tsc)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, tsc)
	}
}

func times(n int, f func() *corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, f())
	}
	return out
}
