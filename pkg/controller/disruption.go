package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// disruptionEvery is upstream's disruption polling period.
const disruptionEvery = 10 * time.Second

// disrupter is the disruption loop and its queue, one pass at a time:
// expiration, drift, consolidation and static NodePools' scaling.
type disrupter struct {
	gate      *syncGate
	client    client.Client
	store     *state.Store
	cloud     CloudProvider // its drift check (metered)
	offerings *offerings
	decider   *decide.Decider
	claims    claimCreator
	events    recorder
	clock     clock.WithTicker

	// wake, buffered 1 (nil: never woken), is sent to when a NodeClaim
	// is gone: the budget it held is free, and the next pass comes at
	// once rather than at the next poll.
	wake chan struct{}

	mu    sync.Mutex
	queue disruption.Queue
	// held: the last decision left a candidate to a budget (see
	// afterHeldExecuted).
	held bool
	// leaving are the NodeClaims of the consolidation commands carried out
	// since the last decision: while one is left, the budget it holds is
	// not free, and a NodeClaim gone does not bring the next pass forward
	// (holding).
	leaving []string
	// tainted are the nodes this process's queue put karpenter.sh/disrupted
	// on and has not taken it off: any other node carrying it, its claim not
	// being deleted, was left so by a controller that stopped mid-command.
	tainted map[string]bool
}

// afterExecuted is how soon the pass after one that carried a command out
// runs: upstream requeues at once; a second lets the informers deliver the
// deletions the command made, so the next pass does not choose its
// candidates again.
const afterExecuted = time.Second

// afterHeldExecuted is how long the pass after one that carried a command
// out waits, at most, when the decision that chose the command left a
// candidate to a NodePool's budget, or the command was a consolidation's
// (the next decision may be held): the command's nodes hold that budget
// until their NodeClaims are gone, a few seconds later, and the last of
// them gone wakes the loop (claimGone, holding). A second after, the pass
// found the budget still held and took one node where it could take two:
// the middle of the 1,000-pod scale-in went one node every 16 s, each
// pass one node and a 15 s validation. Woken by the first of them gone,
// the pass still found the others holding their part: at 5,000 pods the
// scale-in's rounds took 4–6 nodes of a budget of 10, the other 4–6 of
// the round before still being deleted.
const afterHeldExecuted = disruptionEvery

// queueEvery is how often a command waiting for its replacements is looked
// at between passes, as upstream's orchestration queue requeues it.
const queueEvery = time.Second

// loop runs disruption passes until ctx ends: every disruptionEvery, as
// upstream polls; soon after a pass that carried a command out, as
// upstream's controller goes on at once after a success; and when a
// command's validation is due, as upstream's waits exactly
// disruption.ValidationDelay. Between passes, a command waiting for its
// replacements is stepped every queueEvery without a new decision. On the
// polling period alone, every round of a budget-limited scale-in took
// 30 s (its validation seen 20 s after it began, the next decision 10 s
// after that) and every replacement waited up to 10 s more. A NodeClaim
// gone frees the budget it held: the next pass comes then (no sooner than
// afterExecuted after the last), not at the next poll — on the 1,000-pod
// scale-in each budget-limited round began up to 10 s after the previous
// round's nodes were gone.
func (d *disrupter) loop(ctx context.Context) error {
	if !d.gate.wait(ctx) {
		return nil
	}
	next := d.clock.Now()
	var last time.Time // the last full pass
	for {
		var events []disruption.Event
		var err error
		if d.clock.Now().Before(next) {
			events, err = d.step(ctx)
		} else {
			events, err = d.disrupt(ctx)
			last = d.clock.Now()
			next = last.Add(disruptionEvery)
		}
		if err != nil {
			logError(ctx, err, "disrupting")
		}
		next = d.nextPass(events, next)
		wait := next.Sub(d.clock.Now())
		d.mu.Lock()
		if d.queue.AwaitingReplacements() {
			wait = min(wait, queueEvery)
		}
		d.mu.Unlock()
		woken, done := d.await(ctx, d.clock.NewTimer(max(0, wait)))
		if done {
			return nil
		}
		if woken {
			next = d.woken(last, next)
		}
	}
}

// await waits for the timer, for ctx to end (done), or for a NodeClaim
// gone that frees a budget (woken): one gone while another of the
// consolidation commands carried out since the last decision is still
// there frees too little for the pass to take what the budget will allow
// a moment later, and is waited past.
func (d *disrupter) await(ctx context.Context, t clock.Timer) (woken, done bool) {
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return false, true
		case <-t.C():
			return false, false
		case <-d.wake:
			if d.holding() {
				continue
			}
			t.Stop()
			return true, false
		}
	}
}

// holding: a NodeClaim a consolidation's command carried out since the
// last decision deleted is still there — it holds part of the budget the
// next pass would have.
func (d *disrupter) holding() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range d.leaving {
		if d.store.NodeClaim(name) != nil {
			return true
		}
	}
	return false
}

// woken is when the next full pass is due after a NodeClaim went, given
// the last pass and when the next was due: now, but not sooner than
// afterExecuted after the last.
func (d *disrupter) woken(last, due time.Time) time.Time {
	at := d.clock.Now()
	if soonest := last.Add(afterExecuted); at.Before(soonest) {
		at = soonest
	}
	if due.Before(at) {
		return due
	}
	return at
}

// claimGone wakes the loop: a NodeClaim was deleted.
func (d *disrupter) claimGone() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// nextPass is when the next full pass is due, given the events of the
// last pass or step and the time it was due so far: afterExecuted after a
// command was carried out — afterHeldExecuted when its decision was held
// by a budget or it was a consolidation's, a NodeClaim gone waking it
// sooner (holding: for a consolidation's, the last of its NodeClaims).
// A consolidation's decision not held by a budget may still be followed
// by one that is: at 5,000 pods the scale-in's first round took 4 nodes,
// the others inside their consolidateAfter, and the pass a second after
// took 6 of a budget of 10, the 4 still being deleted.
func (d *disrupter) nextPass(events []disruption.Event, due time.Time) time.Time {
	d.mu.Lock()
	ready, held := d.queue.NextValidation(), d.held
	d.mu.Unlock()
	for _, ev := range events {
		if ev.What == disruption.EventExecuted {
			if held || (ev.Command != nil && disruption.Validates(ev.Command.Method)) {
				return d.clock.Now().Add(afterHeldExecuted)
			}
			return d.clock.Now().Add(afterExecuted)
		}
	}
	if !ready.IsZero() && ready.Before(due) {
		return ready
	}
	return due
}

// disrupt is Controller.Disrupt.
func (d *disrupter) disrupt(ctx context.Context) ([]disruption.Event, error) {
	if !d.gate.synced() {
		return nil, ErrNotSynced
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx = withController(ctx, "disruption")
	var errs []error
	if err := d.offerings.refresh(ctx); err != nil {
		errs = append(errs, fmt.Errorf("refreshing instance types: %w", err))
	}
	errs = append(errs, d.untaintStale(ctx))
	if !d.queue.Validating() {
		dc := d.fresh(ctx)
		dec := disruption.Compute(ctx, dc, d.queue.Options)
		d.held, d.leaving = dec.HeldByBudget(), nil
		for pool, as := range dec.Allowances {
			for _, a := range as {
				allowedDisruptions.WithLabelValues(pool, string(a.Reason)).Set(float64(a.Allowed))
			}
		}
		d.blockedEvents(dc, dec)
		d.moves(dc, dec.Moves)
		for _, cand := range dec.Expired {
			log.FromContext(ctx).Info("deleting an expired NodeClaim", "nodeclaim", cand.NodeClaim.Name)
			if err := d.client.Delete(ctx, cand.NodeClaim); client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
				continue
			}
			countDisrupted(cand.NodeClaim, "expired", "", len(cand.Reschedulable))
		}
		for _, cmd := range dec.Commands {
			log.FromContext(ctx).Info("disruption command", "command", cmd.String())
			d.queue.Add(cmd, d.clock.Now())
		}
		if dec.LeavingKnown {
			errs = append(errs, d.markLeaving(ctx, dec.Marks()))
		}
		errs = append(errs, d.scaleStatic(ctx, dc))
	}
	events, err := d.stepQueue(ctx)
	return events, errors.Join(append(errs, err)...)
}

// step advances the queued commands without a new decision.
func (d *disrupter) step(ctx context.Context) ([]disruption.Event, error) {
	if !d.gate.synced() {
		return nil, ErrNotSynced
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.queue.Len() == 0 {
		return nil, nil
	}
	return d.stepQueue(withController(ctx, "disruption"))
}

// fresh is the cluster as disruption decides over it now.
func (d *disrupter) fresh(ctx context.Context) *disruption.Snapshot {
	version := d.store.ConfigVersion()
	return d.decider.Prepare(d.store.DisruptionSnapshot(d.clock.Now(), d.drifted(ctx)), version)
}

// stepQueue advances the queued commands, logs and counts what they did.
// d.mu is held.
func (d *disrupter) stepQueue(ctx context.Context) ([]disruption.Event, error) {
	var errs []error
	events := d.queue.Step(ctx, d.clock.Now(), apiActions{d, ctx}, func() *disruption.Snapshot { return d.fresh(ctx) })
	for _, ev := range events {
		log.FromContext(ctx).Info("disruption", "event", string(ev.What), "command", ev.Command.String(), "detail", ev.Detail)
		if ev.Err != nil {
			errs = append(errs, ev.Err)
		}
		if ev.What == disruption.EventExecuted {
			d.carriedOut(ev.Command)
			decision := "delete"
			if len(ev.Command.Replacements) > 0 {
				decision = "replace"
			}
			reason := snakeCase(string(ev.Command.Reason))
			disruptionDecisions.WithLabelValues(decision, reason, consolidationType(ev.Command.Method)).Inc()
			for _, cand := range ev.Command.Candidates {
				countDisrupted(cand.NodeClaim, reason, d.policyOf(ev.Command.Method, cand.NodePool), len(cand.Reschedulable))
			}
		}
		if m := ev.Command.Method; ev.What == disruption.EventCancelled && (m == disruption.MethodSingleNode || m == disruption.MethodMultiNode) {
			for _, cand := range ev.Command.Candidates {
				d.events.event(cand.NodeClaim, nil, corev1.EventTypeNormal, "ConsolidationRejected", "Consolidation rejected: %s, reason: %s (savings: $%.2f)",
					ev.Command, ev.Detail, ev.Command.Savings)
			}
		}
	}
	return events, errors.Join(errs...)
}

// carriedOut notes the NodeClaims a consolidation command carried out
// deletes as leaving (see holding). d.mu is held. Only consolidation's:
// a pass that finds one spends a validation (15 s) on what it takes, and
// is better waited for until it can take the whole budget; a drift or
// interruption command acts at once, and a pass for each NodeClaim gone
// costs nothing — waiting for the last made the 5,000-pod drift 11 s
// slower, its drained nodes going over 6–7 s.
func (d *disrupter) carriedOut(cmd *disruption.Command) {
	if !disruption.Validates(cmd.Method) {
		return
	}
	for _, cand := range cmd.Candidates {
		if cand.NodeClaim != nil {
			d.leaving = append(d.leaving, cand.NodeClaim.Name)
		}
	}
}

// policyOf is the consolidation policy a command's metrics carry: its
// NodePool's, for a consolidation; "" for any other method.
func (d *disrupter) policyOf(m disruption.Method, pool string) v1.ConsolidationPolicy {
	if consolidationType(m) == "" {
		return ""
	}
	for _, np := range d.store.ProvisioningSnapshot().NodePools {
		if np.Name == pool {
			return np.Spec.Disruption.ConsolidationPolicy
		}
	}
	return ""
}

// moves counts the consolidation moves a pass judged, as upstream's
// karpenter_consolidation_moves_total and, for Balanced pools,
// karpenter_consolidation_score; an approved Balanced move gets a
// ConsolidationApproved event with its score — on the node's claim for a
// single node, on the NodePool for several — before its validation.
func (d *disrupter) moves(dc *disruption.Snapshot, moves []disruption.Move) {
	claims, pools := byName(dc)
	word := map[bool]string{true: "approved", false: "rejected"}
	for _, m := range moves {
		policy := string(m.Policy)
		consolidationMoves.WithLabelValues(word[m.Approved], m.NodePool, policy).Inc()
		if !m.Scored {
			continue
		}
		consolidationScore.WithLabelValues(word[m.Score.Approved()], m.NodePool, policy).Observe(m.Score.Value())
		if !m.Score.Approved() || !m.Approved {
			continue
		}
		switch {
		case m.Method == disruption.MethodSingleNode && claims[m.Nodes[0]] != nil:
			d.events.event(claims[m.Nodes[0]], nil, corev1.EventTypeNormal, "ConsolidationApproved", "%s", m.Score)
		case m.Method == disruption.MethodMultiNode && pools[m.NodePool] != nil:
			d.events.event(pools[m.NodePool], nil, corev1.EventTypeNormal, "ConsolidationApproved", "%s", m.Score)
		}
	}
}

// byName are the cluster's NodeClaims by node name and NodePools by name,
// for the events a pass's decision gives rise to.
func byName(dc *disruption.Snapshot) (map[string]*v1.NodeClaim, map[string]*v1.NodePool) {
	claims := make(map[string]*v1.NodeClaim, len(dc.Nodes))
	for _, cand := range dc.Nodes {
		claims[cand.Node.Name] = cand.NodeClaim
	}
	pools := make(map[string]*v1.NodePool, len(dc.NodePools))
	for _, np := range dc.NodePools {
		pools[np.Name] = np
	}
	return claims, pools
}

// scaleStatic keeps static NodePools (spec.replicas) at their replicas,
// as upstream's static provisioning and deprovisioning controllers: claims
// created for the missing nodes, the surplus claims deleted (their
// termination drains them) as far as the NodePool's budgets allow (all of
// them with decisions karpenter); a NodePool whose budget holds some back
// gets a DisruptionBlocked event saying so.
func (d *disrupter) scaleStatic(ctx context.Context, dc *disruption.Snapshot) error {
	var errs []error
	for _, s := range disruption.StaticScale(dc) {
		if len(s.Held) > 0 {
			d.events.event(s.NodePool, nil, corev1.EventTypeNormal, "DisruptionBlocked", "%s", s.String())
		}
		for i := 0; i < s.Launch && s.Plan != nil; i++ {
			if _, err := d.claims.create(ctx, s.Plan, "static"); err != nil {
				errs = append(errs, fmt.Errorf("creating a NodeClaim of static NodePool %s: %w", s.NodePool.Name, err))
				break
			}
		}
		for _, cand := range s.Remove {
			if cand.NodeClaim == nil {
				continue
			}
			log.FromContext(ctx).Info("deleting a static NodePool's surplus NodeClaim", "nodeclaim", cand.NodeClaim.Name, "replicas", *s.NodePool.Spec.Replicas)
			if err := d.client.Delete(ctx, cand.NodeClaim); client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// blockedEvents tells, as upstream's DisruptionBlocked events do, why nodes
// the pass would have disrupted are held: on each held node's NodeClaim
// the engine's reason, and on a NodePool whose budget holds nodes back the
// budget, what it allows and until when. The event recorder folds the
// repeats of later passes into one event's series.
func (d *disrupter) blockedEvents(dc *disruption.Snapshot, dec *disruption.Decision) {
	claims, pools := byName(dc)
	byBudget := map[[2]string]bool{}
	for _, b := range dec.Blocked {
		if nc := claims[b.Node]; nc != nil {
			d.events.event(nc, nil, corev1.EventTypeNormal, "DisruptionBlocked", "Cannot disrupt NodeClaim: %s", b.Reason)
		}
		if b.ByBudget != "" {
			byBudget[[2]string{b.NodePool, string(b.ByBudget)}] = true
		}
	}
	for pool, as := range dec.Allowances {
		np := pools[pool]
		for _, a := range as {
			if np != nil && byBudget[[2]string{pool, string(a.Reason)}] {
				d.events.event(np, nil, corev1.EventTypeNormal, "DisruptionBlocked", "No allowed disruptions for reason %s: %s", a.Reason, a.Explain(np, dc.Now))
			}
		}
	}
}

// drifted is the cloud provider's drift check for the Store.
func (d *disrupter) drifted(ctx context.Context) func(*v1.NodeClaim) cloudprovider.DriftReason {
	return func(nc *v1.NodeClaim) cloudprovider.DriftReason {
		why, err := d.cloud.IsDrifted(ctx, nc)
		if err != nil {
			return ""
		}
		return why
	}
}

// apiActions carry out the queue's steps as API writes.
type apiActions struct {
	d   *disrupter
	ctx context.Context
}

func (a apiActions) Launch(plan *provisioning.NodeClaimPlan) (string, error) {
	nc, err := a.d.claims.create(a.ctx, plan, "disruption")
	if err != nil {
		return "", err
	}
	return nc.Name, nil
}

// Replacement reads the claim from the Store, which Launch put it in: the
// informer's cache may not have it yet, and a claim missing there is not a
// failed one. The Store loses it when the informer sees it deleted.
func (a apiActions) Replacement(name string) disruption.ReplacementState {
	nc := a.d.store.NodeClaim(name)
	if nc == nil || nc.DeletionTimestamp != nil {
		return disruption.ReplacementFailed
	}
	if conditionTrue(nc, v1.ConditionInitialized) {
		return disruption.ReplacementInitialized
	}
	return disruption.ReplacementPending
}

func (a apiActions) DeleteReplacement(name string) error {
	return client.IgnoreNotFound(a.d.client.Delete(a.ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

func (a apiActions) Taint(node string) error   { return a.setDisrupted(node, true) }
func (a apiActions) Untaint(node string) error { return a.setDisrupted(node, false) }

// setDisrupted adds or removes karpenter.sh/disrupted:NoSchedule.
func (a apiActions) setDisrupted(name string, on bool) error {
	if err := a.d.setTaint(a.ctx, name, v1.DisruptedTaint, on); err != nil {
		return err
	}
	a.d.recordTaint(name, on)
	return nil
}

// setTaint adds (on) or removes a taint of the named Node, writing only
// when that changes it.
func (d *disrupter) setTaint(ctx context.Context, name string, taint corev1.Taint, on bool) error {
	current := d.store.Node(name)
	if current == nil {
		return fmt.Errorf("node %s is not known", name)
	}
	taints, changed := scheduling.WithTaint(current.Spec.Taints, taint, on)
	if !changed {
		return nil
	}
	node := current.DeepCopy()
	node.Spec.Taints = taints
	return d.client.Update(ctx, node)
}

// markLeaving puts disruption.ConsolidatingTaint on the nodes
// consolidation expects to take (disruption.Decision.Marks: the commands'
// candidates while they are validated, and the later rounds'), and
// disruption.ConsolidatingNextTaint on those that leave first, so
// kube-scheduler places the pods this round evicts elsewhere — on a later
// round's node before the next round's — and takes them off every other
// Node, one write a Node.
func (d *disrupter) markLeaving(ctx context.Context, marks map[string]bool) error {
	var errs []error
	for _, n := range d.store.Nodes() {
		if n.Node == nil || n.MarkedForDeletion() {
			continue
		}
		next, marked := marks[n.Name()]
		taints, changed := disruption.WithMarks(n.Node.Spec.Taints, marked, next)
		if !changed {
			continue
		}
		node := n.Node.DeepCopy()
		node.Spec.Taints = taints
		if err := d.client.Update(ctx, node); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("marking node %s for a later consolidation round: %w", n.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// recordTaint notes that this process's queue tainted the node (on) or
// untainted it.
func (d *disrupter) recordTaint(node string, on bool) {
	if d.tainted == nil {
		d.tainted = map[string]bool{}
	}
	if on {
		d.tainted[node] = true
	} else {
		delete(d.tainted, node)
	}
}

// untaintStale takes karpenter.sh/disrupted off the nodes that carry it
// though no command of this process's queue tainted them and their claim
// is not being deleted, as upstream's disruption controller does before
// every pass. The queue lives in memory: a controller killed (or a leader
// deposed) between tainting a command's candidates and terminating them
// leaves the taint behind, and the node would take no new pods and count
// against its NodePool's budgets as disrupting for good — with a budget of
// one, no other node of the pool would ever be disrupted again.
func (d *disrupter) untaintStale(ctx context.Context) error {
	var errs []error
	known := map[string]bool{}
	for _, n := range d.store.Nodes() {
		known[n.Name()] = true
		if n.Node == nil || d.tainted[n.Name()] || n.MarkedForDeletion() || !scheduling.HasTaint(n.Node.Spec.Taints, v1.DisruptedTaint) {
			continue
		}
		log.FromContext(ctx).Info("removing a disruption taint no command holds, left by a controller stopped mid-command", "node", n.Name())
		if err := (apiActions{d, ctx}).Untaint(n.Name()); err != nil {
			errs = append(errs, fmt.Errorf("removing the stale disruption taint of node %s: %w", n.Name(), err))
		}
	}
	for name := range d.tainted {
		if !known[name] {
			delete(d.tainted, name)
		}
	}
	return errors.Join(errs...)
}

// Terminate deletes the node's claim: its finalizer drains the node.
func (a apiActions) Terminate(name string) error {
	for _, n := range a.d.store.Nodes() {
		if n.Name() == name && n.NodeClaim != nil {
			return client.IgnoreNotFound(a.d.client.Delete(a.ctx, n.NodeClaim))
		}
	}
	return fmt.Errorf("node %s has no NodeClaim", name)
}
