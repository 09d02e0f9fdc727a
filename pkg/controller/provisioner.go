package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// provisioner turns the Store's pending pods into NodeClaims, a batch at a
// time.
type provisioner struct {
	gate      *syncGate
	batch     *Batcher
	store     *state.Store
	offerings *offerings
	decider   *decide.Decider
	claims    claimCreator
	events    recorder
	clock     clock.WithTicker
	// missAfter: how long after a claim's node is initialized a pod it
	// was launched for and that is still pending counts as having missed
	// it (the launch-loop guard, state.MaxLaunchRounds).
	missAfter time.Duration
	// buffers, with the CapacityBuffer gate, is told where each pass put
	// the buffers' chunks.
	buffers *capacityBuffers
	// bindings says whether kube-scheduler is still binding pods to the
	// nodes launched for pending pods (state.Store.AwaitedNodes): until it
	// is done there, no node is launched only for pods awaiting a launch
	// (state.Store.Unawaited). nil: never waited for.
	bindings *bindings
	// recheck, buffered 1, asks wakeForBindings for a pass at a time.
	recheck chan time.Time
}

// loop provisions after every batch until ctx ends, from the moment the
// Store is complete.
func (p *provisioner) loop(ctx context.Context) error {
	if !p.gate.wait(ctx) {
		return nil
	}
	go p.wakeForLaunches(ctx)
	if p.recheck != nil {
		go p.wakeForBindings(ctx)
	}
	go p.wakeForBacklog(ctx)
	for p.batch.Wait(ctx) {
		if p.batch.Full() {
			p.store.ReleaseBacklog() // the batch waited for the burst as long as it may
		}
		if _, err := p.provision(ctx); err != nil {
			logError(ctx, err, "provisioning")
		}
	}
	return nil
}

// provision is Controller.Provision.
func (p *provisioner) provision(ctx context.Context) ([]*v1.NodeClaim, error) {
	if !p.gate.synced() {
		return nil, ErrNotSynced
	}
	ctx = withController(ctx, "provisioner")
	if err := p.offerings.refresh(ctx); err != nil {
		logError(ctx, err, "refreshing instance types")
	}
	p.settleLaunches(ctx)
	version := p.store.ConfigVersion()
	snap, repacked := p.store.ProvisioningSnapshots()
	schedulingQueueDepth.WithLabelValues("provisioner").Set(float64(len(snap.Pods)))
	if len(snap.Pods) == 0 {
		return nil, nil
	}
	start := p.clock.Now()
	res := p.decider.ProvisionPinned(ctx, snap, repacked, version)
	schedulingDuration.WithLabelValues("provisioner").Observe(p.clock.Since(start).Seconds())
	if p.buffers != nil {
		byBuffer, onNodes := buffer.Place(res)
		p.buffers.provisioned(ctx, byBuffer, onNodes)
	}
	var created []*v1.NodeClaim
	var errs []error
	binding, quietAt := false, time.Time{}
	if p.bindings != nil {
		binding, quietAt = p.bindings.busy(p.clock.Now(), p.store.AwaitedNodes())
	}
	plans := p.store.Unawaited(res.NewNodeClaims, binding)
	if binding && len(plans) < len(res.NewNodeClaims) {
		// Held for kube-scheduler: look again once it is done binding.
		log.FromContext(ctx).V(1).Info("waiting for kube-scheduler to finish binding before launching for pods awaiting a launch", "nodeclaims", len(res.NewNodeClaims)-len(plans))
		p.passAt(quietAt)
	}
	if len(plans) > 0 {
		n := 0
		for _, plan := range plans {
			n += len(plan.Pods)
		}
		log.FromContext(ctx).Info("computed new nodeclaim(s) to fit pod(s)", "nodeclaims", len(plans), "pods", n, "pending", len(snap.Pods))
	}
	cohort := ""
	if len(plans) > 1 && p.decider.Policy().LaunchCohorts() {
		cohort = strconv.FormatInt(start.UnixNano(), 36)
	}
	// All at once, as upstream creates a batch's NodeClaims: one after
	// the other, 22 creates took 5 s of a 1,000-pod scale-out on a busy
	// API server.
	ncs, cerrs := make([]*v1.NodeClaim, len(plans)), make([]error, len(plans))
	workqueue.ParallelizeUntil(ctx, len(plans), len(plans), func(i int) {
		ncs[i], cerrs[i] = p.claims.createIn(ctx, plans[i], "provisioning", cohort)
	})
	for i, plan := range plans {
		nc, err := ncs[i], cerrs[i]
		if nc == nil && err == nil {
			err = ctx.Err() // not tried: ctx ended first
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating a NodeClaim of NodePool %s: %w", plan.NodePool.Name, err))
			continue
		}
		created = append(created, nc)
		log.FromContext(ctx).Info("created nodeclaim", "NodeClaim", nc.Name, "NodePool", plan.NodePool.Name, "pods", len(plan.Pods), "instance-types", instanceTypeNames(plan, 5))
		p.store.LaunchedFor(nc.Name, plan.Pods)
		for _, pod := range plan.Pods {
			if !buffer.IsVirtual(pod) { // a buffer's chunk is no object to tell
				p.events.nominated(pod, nc)
			}
		}
	}
	// The engine's reason, per NodePool, for each pod nothing can hold; a
	// NodePool whose limits stop it is told once a pass.
	atLimit := map[string]string{}
	deferred := 0
	for _, pe := range res.Unschedulable {
		if pe.Deferred() {
			// Waiting for the next pass, when the cloud says what the
			// launches left of the reservations: as upstream, no event.
			deferred++
			continue
		}
		if !buffer.IsVirtual(pe.Pod) { // its buffer's Provisioning condition says it
			p.events.event(pe.Pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod: %s", pe.Reason)
		}
		for pool, code := range pe.CodeByNodePool {
			if code == provisioning.ReasonLimits {
				atLimit[pool] = pe.ByNodePool[pool]
			}
		}
	}
	if deferred > 0 {
		log.FromContext(ctx).V(1).Info("deferring scheduling decision for provisionable pod(s) to future simulation due to limited reserved offering capacity", "pods", deferred)
		p.batch.Trigger()
	}
	for _, np := range snap.NodePools {
		if why, ok := atLimit[np.Name]; ok {
			p.events.event(np, nil, corev1.EventTypeWarning, "NodePoolLimitReached", "Pending pods cannot get a node from this NodePool: it %s", why)
		}
	}
	return created, errors.Join(errs...)
}

// passAt asks for a provisioning pass at t (wakeForBindings); an earlier
// request not yet due gives way to it.
func (p *provisioner) passAt(t time.Time) {
	if p.recheck == nil {
		return
	}
	select {
	case <-p.recheck:
	default:
	}
	select {
	case p.recheck <- t:
	default: // another pass asked at once; its time is as good
	}
}

// wakeForBindings starts the pass passAt asked for; a binding since then
// moves it later (the pass holds again, and asks again).
func (p *provisioner) wakeForBindings(ctx context.Context) {
	for {
		var at time.Time
		select {
		case <-ctx.Done():
			return
		case at = <-p.recheck:
		}
		t := p.clock.NewTimer(max(0, at.Sub(p.clock.Now())))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
			p.batch.Trigger()
		}
	}
}

// settleLaunches counts the misses of pods whose nodes have been
// initialized for missAfter (the Store's launch-loop guard) and tells each
// pod given up on why.
func (p *provisioner) settleLaunches(ctx context.Context) {
	for _, g := range p.store.SettleLaunches(p.clock.Now(), p.missAfter) {
		podsGivenUp.Inc()
		p.events.event(g.Pod, nil, corev1.EventTypeWarning, "LaunchLoop", "Provisioning stopped launching nodes for this pod: %s", g.Reason())
		log.FromContext(ctx).Info("launch loop: no more nodes are launched for the pod", "pod", g.Pod.Namespace+"/"+g.Pod.Name, "nodeclaims", g.Claims, "why", g.Why)
	}
}

// wakeForLaunches starts a pass when a launch is due to settle: its pods,
// held back from a second node until then (Store.Unawaited), may need one
// now, and nothing else may be about to start a pass.
func (p *provisioner) wakeForLaunches(ctx context.Context) {
	t := p.clock.NewTicker(max(time.Second, min(p.missAfter, 5*time.Second)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if p.store.LaunchesDue(p.clock.Now(), p.missAfter) {
				p.batch.Trigger()
			}
		}
	}
}

// wakeForBacklog starts a pass when an untried pod's scheduler backlog
// runs out (state.Store.SetSchedulerBacklog): the pod became provisionable
// with no event of its own. Checked every backlogCheck; nothing is due
// with the backlog off.
func (p *provisioner) wakeForBacklog(ctx context.Context) {
	t := p.clock.NewTicker(backlogCheck)
	defer t.Stop()
	last := p.clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			now := p.clock.Now()
			if p.store.BacklogDue(last, now) {
				p.batch.Trigger()
			}
			last = now
		}
	}
}

// backlogCheck is how often wakeForBacklog looks: well within a batch's
// idle second.
const backlogCheck = 250 * time.Millisecond

// instanceTypeNames are the plan's first n instance types, cheapest
// first, and how many more there are — as upstream's "created nodeclaim"
// line names them.
func instanceTypeNames(plan *provisioning.NodeClaimPlan, n int) string {
	names := make([]string, 0, n)
	for _, it := range plan.InstanceTypes {
		if len(names) == n {
			return fmt.Sprintf("%s and %d other(s)", strings.Join(names, ", "), len(plan.InstanceTypes)-n)
		}
		names = append(names, it.Name)
	}
	return strings.Join(names, ", ")
}
