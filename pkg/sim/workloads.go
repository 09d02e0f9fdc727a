package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
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
	hpa *hpaModel
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

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }

// kedaModel is a ScaledObject with a queue-length trigger.
type kedaModel struct {
	so         *scenario.ScaledObject
	target     *workload
	load       *loadFn
	perReplica float64
	activation float64
	minR, maxR int
	cooldown   time.Duration
	lastActive time.Time
}

func (k *kedaModel) evaluate(now, start time.Time) int {
	q := k.load.at(now.Sub(start))
	if q > k.activation {
		k.lastActive = now
		return clamp(int(math.Ceil(q/k.perReplica)), max(k.minR, 1), k.maxR)
	}
	if !k.lastActive.IsZero() && now.Sub(k.lastActive) < k.cooldown {
		return k.target.replicas
	}
	return k.minR
}

func newKeda(so *scenario.ScaledObject, target *workload, load *loadFn) (*kedaModel, error) {
	k := &kedaModel{so: so, target: target, load: load, minR: 0, maxR: 100, cooldown: 300 * time.Second, perReplica: 5}
	if so.Spec.MinReplicaCount != nil {
		k.minR = int(*so.Spec.MinReplicaCount)
	}
	if so.Spec.MaxReplicaCount != nil {
		k.maxR = int(*so.Spec.MaxReplicaCount)
	}
	if so.Spec.CooldownPeriod != nil {
		k.cooldown = time.Duration(*so.Spec.CooldownPeriod) * time.Second
	}
	for _, t := range so.Spec.Triggers {
		for key, field := range map[string]*float64{"queueLength": &k.perReplica, "activationQueueLength": &k.activation} {
			if s, ok := t.Metadata[key]; ok {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || v < 0 {
					return nil, fmt.Errorf("ScaledObject %s: triggers metadata %s %q is not a non-negative number", so.Name, key, s)
				}
				*field = v
			}
		}
	}
	if k.perReplica <= 0 {
		return nil, fmt.Errorf("ScaledObject %s: queueLength must be positive", so.Name)
	}
	return k, nil
}

// cronModel fires a CronJob's Jobs.
type cronModel struct {
	name, namespace string
	schedule        cron.Schedule
	template        corev1.PodTemplateSpec
}
