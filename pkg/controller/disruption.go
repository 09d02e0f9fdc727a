package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// disruptionEvery is upstream's disruption polling period.
const disruptionEvery = 10 * time.Second

// disrupter owns the disruption queue: one pass at a time.
type disrupter struct {
	mu    sync.Mutex
	queue disruption.Queue
}

// disruptionLoop runs a disruption pass every disruptionEvery until ctx ends.
func (c *Controller) disruptionLoop(ctx context.Context) error {
	return c.every(ctx, disruptionEvery, "disrupting", func(ctx context.Context) error {
		_, err := c.Disrupt(ctx)
		return err
	})
}

// Disrupt runs one disruption pass, as upstream's disruption controller:
// expired claims are deleted; unless a command is waiting for its
// validation, the engine's next commands are queued; then the queue
// advances (validate, taint, launch replacements, wait for them, delete
// the candidates' claims). It returns what the queue did.
func (c *Controller) Disrupt(ctx context.Context) ([]disruption.Event, error) {
	c.disrupt.mu.Lock()
	defer c.disrupt.mu.Unlock()
	ctx = withController(ctx, "disruption")
	var errs []error
	fresh := func() *disruption.Cluster {
		version := c.store.ConfigVersion()
		dc := c.store.DisruptionCluster(c.opts.Clock.Now(), c.drifted(ctx))
		dc.Planner = c.planner(&provisioning.Snapshot{NodePools: dc.NodePools, InstanceTypes: dc.InstanceTypes, DaemonSets: dc.DaemonSets}, version)
		dc.Memo = c.memo
		return dc
	}
	if !c.disrupt.queue.Validating() {
		d := disruption.Compute(ctx, fresh(), c.disrupt.queue.Options)
		for pool, as := range d.Allowances {
			for _, a := range as {
				allowedDisruptions.WithLabelValues(pool, string(a.Reason)).Set(float64(a.Allowed))
			}
		}
		for _, cand := range d.Expired {
			log.FromContext(ctx).Info("deleting an expired NodeClaim", "nodeclaim", cand.NodeClaim.Name)
			if err := c.client.Delete(ctx, cand.NodeClaim); client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
				continue
			}
			nodeClaimsDisrupted.WithLabelValues(cand.NodePool, "expired", cand.CapacityType).Inc()
		}
		for _, cmd := range d.Commands {
			log.FromContext(ctx).Info("disruption command", "command", cmd.String())
			c.disrupt.queue.Add(cmd, c.opts.Clock.Now())
		}
	}
	events := c.disrupt.queue.Step(ctx, c.opts.Clock.Now(), apiActions{c, ctx}, fresh)
	for _, ev := range events {
		log.FromContext(ctx).Info("disruption", "event", string(ev.What), "command", ev.Command.String(), "detail", ev.Detail)
		if ev.Err != nil {
			errs = append(errs, ev.Err)
		}
		if ev.What == disruption.EventExecuted {
			decision := "delete"
			if len(ev.Command.Replacements) > 0 {
				decision = "replace"
			}
			reason := snakeCase(string(ev.Command.Reason))
			disruptionDecisions.WithLabelValues(decision, reason, consolidationType(ev.Command.Method)).Inc()
			for _, cand := range ev.Command.Candidates {
				nodeClaimsDisrupted.WithLabelValues(cand.NodePool, reason, cand.CapacityType).Inc()
			}
		}
	}
	return events, errors.Join(errs...)
}

// drifted is the cloud provider's drift check for the Store.
func (c *Controller) drifted(ctx context.Context) func(*v1.NodeClaim) cloudprovider.DriftReason {
	return func(nc *v1.NodeClaim) cloudprovider.DriftReason {
		why, err := c.cloud.IsDrifted(ctx, nc)
		if err != nil {
			return ""
		}
		return why
	}
}

// apiActions carry out the queue's steps as API writes.
type apiActions struct {
	c   *Controller
	ctx context.Context
}

func (a apiActions) Launch(plan *provisioning.NodeClaimPlan) (string, error) {
	nc := state.NewNodeClaim(plan, "", metav1.Time{})
	if err := a.c.client.Create(a.ctx, nc); err != nil {
		return "", err
	}
	a.c.store.SetNodeClaim(nc)
	nodeClaimsCreated.WithLabelValues(plan.NodePool.Name, "disruption").Inc()
	return nc.Name, nil
}

// Replacement reads the claim from the Store, which Launch put it in: the
// informer's cache may not have it yet, and a claim missing there is not a
// failed one. The Store loses it when the informer sees it deleted.
func (a apiActions) Replacement(name string) disruption.ReplacementState {
	nc := a.c.store.NodeClaim(name)
	if nc == nil || nc.DeletionTimestamp != nil {
		return disruption.ReplacementFailed
	}
	if conditionTrue(nc, v1.ConditionInitialized) {
		return disruption.ReplacementInitialized
	}
	return disruption.ReplacementPending
}

func (a apiActions) DeleteReplacement(name string) error {
	return client.IgnoreNotFound(a.c.client.Delete(a.ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

func (a apiActions) Taint(node string) error   { return a.setDisrupted(node, true) }
func (a apiActions) Untaint(node string) error { return a.setDisrupted(node, false) }

// setDisrupted adds or removes karpenter.sh/disrupted:NoSchedule.
func (a apiActions) setDisrupted(name string, on bool) error {
	for _, n := range a.c.store.Nodes() {
		if n.Name() != name || n.Node == nil {
			continue
		}
		node := n.Node.DeepCopy()
		has := hasTaint(node.Spec.Taints, v1.DisruptedTaint)
		switch {
		case on && !has:
			node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedTaint)
		case !on && has:
			kept := node.Spec.Taints[:0]
			for _, t := range node.Spec.Taints {
				if !t.MatchTaint(&v1.DisruptedTaint) {
					kept = append(kept, t)
				}
			}
			node.Spec.Taints = kept
		default:
			return nil
		}
		return a.c.client.Update(a.ctx, node)
	}
	return fmt.Errorf("node %s is not known", name)
}

// Terminate deletes the node's claim: its finalizer drains the node.
func (a apiActions) Terminate(name string) error {
	for _, n := range a.c.store.Nodes() {
		if n.Name() == name && n.NodeClaim != nil {
			return client.IgnoreNotFound(a.c.client.Delete(a.ctx, n.NodeClaim))
		}
	}
	return fmt.Errorf("node %s has no NodeClaim", name)
}
