package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// interruption acts on the cloud's interruption notices.
type interruption struct {
	notices <-chan cloudprovider.Interruption // the provider's (nil: none)
	client  client.Client
	store   *state.Store
	events  recorder
}

// loop handles the notices until ctx ends (the leader's alone, like every
// loop of the manager's).
func (i *interruption) loop(ctx context.Context) error {
	ctx = withController(ctx, "interruption")
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-i.notices:
			if err := i.handle(ctx, n); err != nil {
				logError(ctx, err, "handling an interruption notice")
				continue
			}
			if n.Handled != nil {
				n.Handled()
			}
		}
	}
}

// handle is Controller.Interrupted.
func (i *interruption) handle(ctx context.Context, n cloudprovider.Interruption) error {
	var claim *v1.NodeClaim
	pods := 0
	for _, node := range i.store.Nodes() {
		if node.NodeClaim != nil && node.NodeClaim.Status.ProviderID == n.ProviderID {
			claim = node.NodeClaim
			for _, p := range node.Pods {
				if podutil.IsReschedulable(p) {
					pods++
				}
			}
		}
	}
	if claim == nil || claim.DeletionTimestamp != nil {
		return nil
	}
	if !n.Kind.Disrupts() {
		i.events.event(claim, nil, corev1.EventTypeNormal, string(n.Kind), "%s: the cloud recommends rebalancing instance %s (no action, as upstream)", n.Kind, n.ProviderID)
		return nil
	}
	log.FromContext(ctx).Info("deleting an interrupted NodeClaim", "nodeclaim", claim.Name, "kind", string(n.Kind))
	i.events.event(claim, nil, corev1.EventTypeWarning, string(n.Kind), "%s: instance %s goes away; draining its node", n.Kind, n.ProviderID)
	if err := i.client.Delete(ctx, claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	countDisrupted(claim, snakeCase(string(n.Kind)), "", pods)
	return nil
}
