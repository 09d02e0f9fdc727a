package sim

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// bufferResync is how often the simulated controller looks at its
// CapacityBuffers again, as upstream's buffer controller requeues each
// buffer (and triggers provisioning) every 30 s: pods that bound into a
// buffer's room are replaced by new room within it.
const bufferResync = 30 * time.Second

// buffers is the simulated controller's CapacityBuffers: resolved at each
// provisioning pass and disruption pass against the workloads as they
// are then (a percentage follows its Deployment's HPA).
type buffers struct {
	resolved []buffer.Resolved
	pods     []*corev1.Pod
	stats    map[string]*report.BufferStat
}

// resolveBuffers resolves the scenario's CapacityBuffers and hands their
// virtual pods to the Store.
func (e *simulation) resolveBuffers() {
	if len(e.in.CapacityBuffers) == 0 {
		return
	}
	if e.buf.stats == nil {
		e.buf.stats = map[string]*report.BufferStat{}
	}
	e.buf.resolved = e.buf.resolved[:0]
	var pods []*corev1.Pod
	for _, cb := range e.in.CapacityBuffers {
		r := buffer.Resolve(cb, e.bufferLookup)
		e.buf.resolved = append(e.buf.resolved, r)
		pods = append(pods, buffer.VirtualPods(r)...)
		key := cb.Namespace + "/" + cb.Name
		st := e.buf.stats[key]
		if st == nil {
			st = &report.BufferStat{Name: key}
			e.buf.stats[key] = st
		}
		st.Chunks, st.MaxChunks = r.Replicas, max(st.MaxChunks, r.Replicas)
		st.Ready, st.ReadyMessage = r.Ready.Reason, r.Ready.Message
		if r.Ready.Status != metav1.ConditionTrue {
			st.Chunks = 0
		}
	}
	e.buf.pods = pods
	e.st.SetBufferPods(pods)
}

// bufferLookup finds a buffer's PodTemplate or workload in the run.
func (e *simulation) bufferLookup(kind, namespace, name string) (*buffer.Target, error) {
	if kind == "PodTemplate" {
		for _, pt := range e.in.PodTemplates {
			if pt.Namespace == namespace && pt.Name == name {
				t, _ := buffer.TargetOf(pt)
				return t, nil
			}
		}
		return nil, fmt.Errorf("podtemplates %q %w", name, buffer.ErrNotFound)
	}
	for _, w := range e.workloads {
		if w.kind == kind && w.namespace == namespace && w.name == name {
			n := int32(w.replicas)
			return &buffer.Target{Template: w.template, Replicas: &n}, nil
		}
	}
	return nil, fmt.Errorf("%s %q %w in the scenario", kind, name, buffer.ErrNotFound)
}

// placedBuffers records where a provisioning pass put the virtual pods:
// the nodes emptiness must leave alone, and each buffer's Provisioning
// condition.
func (e *simulation) placedBuffers(res *provisioning.Results) {
	if len(e.buf.resolved) == 0 {
		return
	}
	byBuffer, onNodes := buffer.Place(res)
	e.st.SetBufferPlacement(onNodes)
	for _, r := range e.buf.resolved {
		key := r.Buffer.Namespace + "/" + r.Buffer.Name
		if c := buffer.ProvisioningCondition(r, byBuffer[key]); c != nil {
			st := e.buf.stats[key]
			st.Provisioning, st.ProvisioningMessage = c.Reason, c.Message
		}
	}
}

// bufferReport is the run's BufferReport, without the second run's
// figures.
func (e *simulation) bufferReport(rep *report.Report) *report.BufferReport {
	if len(e.in.CapacityBuffers) == 0 {
		return nil
	}
	br := &report.BufferReport{CostUSD: rep.Cost.Total, StartupP50: rep.Pods.StartupP50, StartupP99: rep.Pods.StartupP99}
	for _, st := range e.buf.stats {
		br.Buffers = append(br.Buffers, *st)
	}
	sort.Slice(br.Buffers, func(i, j int) bool { return br.Buffers[i].Name < br.Buffers[j].Name })
	return br
}

// withoutBuffers runs the scenario again without its CapacityBuffers (and
// the PodTemplates only they read) and puts what that run cost and how
// fast its pods started beside this one's.
func withoutBuffers(ctx context.Context, in *scenario.Input, fsys fs.FS, dir string, opts Options, rep *report.Report) error {
	bare := *in
	bare.CapacityBuffers, bare.PodTemplates = nil, nil
	opts.Progress, opts.Trace, opts.OnProvision, opts.NoBufferBaseline = nil, nil, nil, true
	other, err := Run(ctx, &bare, fsys, dir, opts)
	if err != nil {
		return fmt.Errorf("running the scenario without its CapacityBuffers: %w", err)
	}
	b := rep.Buffers
	b.WithoutCostUSD, b.WithoutStartupP50, b.WithoutStartupP99 = other.Cost.Total, other.Pods.StartupP50, other.Pods.StartupP99
	return nil
}
