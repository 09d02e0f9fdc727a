package sim

import (
	"fmt"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/autoscale"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// buildWorkloads turns the scenario's objects into the run's workloads and
// their autoscalers.
func (e *simulation) buildWorkloads() error {
	s := e.in.Scenario.Spec
	runtimes := map[string]time.Duration{}
	for _, j := range s.Jobs {
		runtimes[podutil.Namespace(metav1.ObjectMeta{Namespace: j.Namespace})+"/"+j.Name] = j.Duration.Duration
	}
	prio, err := newPriorities(e.in.PriorityClasses)
	if err != nil {
		return err
	}
	e.startVolumes()
	e.startDRA()
	if e.in.Replay != nil {
		if err := e.buildReplay(prio); err != nil {
			return err
		}
	}
	byName := map[string]*workload{}
	if err := e.buildControllers(prio, runtimes, byName); err != nil {
		return err
	}
	if err := e.buildPods(prio); err != nil {
		return err
	}
	loads := map[string]*scenario.LoadSpec{}
	for i := range s.Loads {
		l := &s.Loads[i]
		loads[l.Target.Kind+"/"+podutil.Namespace(metav1.ObjectMeta{Namespace: l.Target.Namespace})+"/"+l.Target.Name] = l
	}
	if err := e.buildHPAs(byName, loads); err != nil {
		return err
	}
	if err := e.buildScaledObjects(byName, loads); err != nil {
		return err
	}
	if err := e.buildResizes(byName); err != nil {
		return err
	}
	return e.buildCronJobs(prio, runtimes)
}

// buildControllers makes the Deployments', StatefulSets' and Jobs'
// workloads, by kind/namespace/name in byName.
func (e *simulation) buildControllers(prio *priorities, runtimes map[string]time.Duration, byName map[string]*workload) error {
	ns := podutil.Namespace
	replicated := func(kind string, meta metav1.ObjectMeta, replicas *int32, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec) error {
		if err := prio.resolve(&tmpl.Spec, kind+" "+meta.Name+": spec.template.spec"); err != nil {
			return err
		}
		r := 1
		if replicas != nil {
			r = int(*replicas)
		}
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return fmt.Errorf("%s %s: spec.selector: %w", kind, meta.Name, err)
		}
		w := &workload{kind: kind, namespace: ns(meta), name: meta.Name, template: tmpl, replicas: r,
			spread: defaultSpreadSelector(ns(meta), tmpl.Labels, e.in.Services, selector)}
		e.workloads = append(e.workloads, w)
		byName[kind+"/"+w.key()] = w
		return nil
	}
	for _, d := range e.in.Deployments {
		if err := replicated("Deployment", d.ObjectMeta, d.Spec.Replicas, d.Spec.Selector, d.Spec.Template); err != nil {
			return err
		}
	}
	for _, d := range e.in.StatefulSets {
		if err := replicated("StatefulSet", d.ObjectMeta, d.Spec.Replicas, d.Spec.Selector, d.Spec.Template); err != nil {
			return err
		}
		if len(d.Spec.VolumeClaimTemplates) > 0 {
			byName["StatefulSet/"+ns(d.ObjectMeta)+"/"+d.Name].claimTemplates = d.Spec.VolumeClaimTemplates
		}
	}
	for _, j := range e.in.Jobs {
		tmpl := j.Spec.Template
		if err := prio.resolve(&tmpl.Spec, "Job "+j.Name+": spec.template.spec"); err != nil {
			return err
		}
		w := jobWorkload(j.Name, ns(j.ObjectMeta), tmpl, j.Spec.Completions, j.Spec.Parallelism, runtimes)
		w.spread = defaultSpreadSelector(w.namespace, tmpl.Labels, e.in.Services, nil)
		e.workloads = append(e.workloads, w)
	}
	return nil
}

// buildPods takes the bare Pods and the DaemonSets, priorities resolved.
func (e *simulation) buildPods(prio *priorities) error {
	ns := podutil.Namespace
	for _, p := range e.in.Pods {
		p = p.DeepCopy()
		p.Namespace = ns(p.ObjectMeta)
		if err := prio.resolve(&p.Spec, "Pod "+p.Name+": spec"); err != nil {
			return err
		}
		e.bare = append(e.bare, &simPod{pod: p, created: e.start, spread: defaultSpreadSelector(p.Namespace, p.Labels, e.in.Services, nil)})
	}
	for _, ds := range e.in.DaemonSets {
		ds = ds.DeepCopy()
		if err := prio.resolve(&ds.Spec.Template.Spec, "DaemonSet "+ds.Name+": spec.template.spec"); err != nil {
			return err
		}
		if podutil.HasDRARequirements(&corev1.Pod{Spec: ds.Spec.Template.Spec}) {
			why := "with device claims ignored (--ignore-dra-requests=true) its pods are left out of a new node's overhead, as upstream's, and none runs (no device is modelled)"
			if e.modelDRA() {
				why = "its claims are not allocated: its pods count on every node as their CPU and memory alone"
			}
			e.rep.note(fmt.Sprintf("DaemonSet %s asks for devices through Dynamic Resource Allocation: %s", ds.Name, why))
		}
		e.daemonSets = append(e.daemonSets, ds)
	}
	e.st.SetDaemonSets(e.daemonSets)
	e.dsPods = e.st.DaemonSetPods()
	return nil
}

// buildHPAs models the HorizontalPodAutoscalers over their targets.
func (e *simulation) buildHPAs(byName map[string]*workload, loads map[string]*scenario.LoadSpec) error {
	ns := podutil.Namespace
	for _, h := range e.in.HPAs {
		target, spec, lf, err := e.autoscaled("HorizontalPodAutoscaler", ns(h.ObjectMeta), h.Name,
			h.Spec.ScaleTargetRef.Kind+"/"+ns(h.ObjectMeta)+"/"+h.Spec.ScaleTargetRef.Name,
			"pattern: diurnal, base: 100, peak: 1000, peakHour: 14, cpuPerUnit: 5m", byName, loads)
		if err != nil {
			return err
		}
		req := scheduling.PodRequests(&corev1.Pod{Spec: target.template.Spec})
		m := &autoscale.HPA{Object: h, Load: lf, CPUPerUnit: spec.CPUPerUnit.AsApproximateFloat64(), TargetUtilization: 80, MinReplicas: 1, MaxReplicas: int(h.Spec.MaxReplicas),
			RequestCores: req.Cpu().AsApproximateFloat64()}
		if h.Spec.MinReplicas != nil {
			m.MinReplicas = int(*h.Spec.MinReplicas)
		}
		for _, metric := range h.Spec.Metrics {
			if metric.Resource != nil && metric.Resource.Name == corev1.ResourceCPU && metric.Resource.Target.AverageUtilization != nil {
				m.TargetUtilization = float64(*metric.Resource.Target.AverageUtilization)
			}
		}
		target.hpa = m
		target.replicas = autoscale.Clamp(target.replicas, m.MinReplicas, m.MaxReplicas)
		e.clk.every(e.start.Add(hpaEvery), hpaEvery, e.end, func() { e.runHPA(target) })
	}
	return nil
}

// buildScaledObjects models KEDA's ScaledObjects over their targets.
func (e *simulation) buildScaledObjects(byName map[string]*workload, loads map[string]*scenario.LoadSpec) error {
	ns := podutil.Namespace
	for _, so := range e.in.ScaledObjects {
		kind := "Deployment"
		if so.Spec.ScaleTargetRef.Kind == "StatefulSet" {
			kind = "StatefulSet"
		}
		target, _, lf, err := e.autoscaled("ScaledObject", ns(so.ObjectMeta), so.Name,
			kind+"/"+ns(so.ObjectMeta)+"/"+so.Spec.ScaleTargetRef.Name, "pattern: steps, steps: [{at: 0h, value: 100}]", byName, loads)
		if err != nil {
			return err
		}
		k, err := autoscale.NewKEDA(so, lf)
		if err != nil {
			return err
		}
		target.replicas = k.Evaluate(e.start, e.start, target.replicas)
		poll := 30 * time.Second
		if so.Spec.PollingInterval != nil {
			poll = time.Duration(*so.Spec.PollingInterval) * time.Second
		}
		e.clk.every(e.start.Add(poll), poll, e.end, func() {
			if r := k.Evaluate(e.clk.now, e.start, target.replicas); r != target.replicas {
				target.replicas = r
				e.rep.scaled(target, r)
				e.reconcile(target)
			}
		})
	}
	return nil
}

// buildCronJobs schedules the CronJobs' runs.
func (e *simulation) buildCronJobs(prio *priorities, runtimes map[string]time.Duration) error {
	ns := podutil.Namespace
	for _, cj := range e.in.CronJobs {
		sched, err := cron.ParseStandard(cj.Spec.Schedule)
		if err != nil {
			return fmt.Errorf("CronJob %s: spec.schedule %q: %v (use 5 fields, e.g. \"0 2 * * *\")", cj.Name, cj.Spec.Schedule, err)
		}
		cm := &cronModel{name: cj.Name, namespace: ns(cj.ObjectMeta), schedule: sched, template: cj.Spec.JobTemplate.Spec.Template}
		if err := prio.resolve(&cm.template.Spec, "CronJob "+cj.Name+": spec.jobTemplate.spec.template.spec"); err != nil {
			return err
		}
		e.scheduleCron(cm, cj.Spec.JobTemplate.Spec.Completions, cj.Spec.JobTemplate.Spec.Parallelism, runtimes)
	}
	return nil
}
