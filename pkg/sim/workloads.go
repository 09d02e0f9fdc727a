package sim

import (
	"fmt"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/autoscale"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
)

// workload is a controller that keeps pods: a Deployment, StatefulSet or
// Job (a CronJob makes Jobs; a DaemonSet is handled per node).
type workload struct {
	kind, namespace, name string
	template              corev1.PodTemplateSpec
	replicas              int
	// spread is the selector kube-scheduler spreads the workload's pods by
	// when they have no spread constraints of their own (see
	// defaultSpreadSelector).
	spread k8slabels.Selector
	pods   []*simPod // live pods
	seq    int
	// Jobs: how many must succeed, how many at once, how long each runs.
	job         bool
	completions int
	succeeded   int
	runtime     time.Duration
	// cron names the CronJob a Job was made by.
	cron string
	// metrics for HPA: the load feeding it.
	hpa *autoscale.HPA
	// claimTemplates are a StatefulSet's volumeClaimTemplates: its pods
	// are then named by ordinal, the lowest free first, as the
	// StatefulSet controller names them, so a replacement finds its
	// claims. (A StatefulSet without them keeps the simulator's older
	// naming by sequence, which its reports were made with.)
	claimTemplates []corev1.PersistentVolumeClaim
}

func (w *workload) key() string { return w.namespace + "/" + w.name }

// forget drops a pod from the workload's live pods.
func (w *workload) forget(p *simPod) {
	for i, q := range w.pods {
		if q == p {
			w.pods = append(w.pods[:i], w.pods[i+1:]...)
			return
		}
	}
}

func (w *workload) newPod(now time.Time) *simPod {
	w.seq++
	p := &corev1.Pod{
		ObjectMeta: *w.template.ObjectMeta.DeepCopy(),
		Spec:       *w.template.Spec.DeepCopy(),
	}
	p.Namespace = w.namespace
	p.Name = fmt.Sprintf("%s-%d", w.name, w.seq)
	if w.claimTemplates != nil {
		p.Name = fmt.Sprintf("%s-%d", w.name, w.freeOrdinal())
	}
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Kind: w.kind, Name: w.name, Controller: &yes}}
	return &simPod{pod: p, owner: w, created: now}
}

// freeOrdinal is the lowest ordinal no live pod has.
func (w *workload) freeOrdinal() int {
	taken := map[string]bool{}
	for _, p := range w.pods {
		taken[p.pod.Name] = true
	}
	for i := 0; ; i++ {
		if !taken[fmt.Sprintf("%s-%d", w.name, i)] {
			return i
		}
	}
}

// wanted is how many pods the workload should have now.
func (w *workload) wanted() int {
	if w.job {
		return max(0, min(w.replicas, w.completions-w.succeeded))
	}
	return w.replicas
}

// cronModel fires a CronJob's Jobs.
type cronModel struct {
	name, namespace string
	schedule        cron.Schedule
	template        corev1.PodTemplateSpec
}
