package aws

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// messageQueue is what the provider needs of the interruption queue
// (interruption.Queue's methods).
type messageQueue interface {
	Receive(ctx context.Context) ([]queueMessage, error)
	Delete(ctx context.Context, m queueMessage) error
}

// emptyPollPause is the pause after a receive that returned nothing (a
// long poll returns after 20 s; a fake one at once) or failed.
const emptyPollPause = 5 * time.Second

// pollInterruptions turns the queue's messages into Interruptions until
// ctx ends.
func (p *Provider) pollInterruptions(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := p.queue.Receive(ctx)
		if err != nil && ctx.Err() == nil {
			logError(ctx, err, "receiving interruption messages")
		}
		for _, m := range msgs {
			p.handleMessage(ctx, m)
		}
		if len(msgs) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-p.opts.Clock.After(emptyPollPause):
		}
	}
}

// handleMessage sends an Interruption for each instance of the message
// this cluster runs; the message is deleted once every one is Handled,
// or at once when it names none of the cluster's instances. A spot
// interruption's offering is left out of launches for UnavailableFor.
func (p *Provider) handleMessage(ctx context.Context, m queueMessage) {
	var ours []*ec2types.Instance
	for _, id := range m.InstanceIDs {
		in, err := p.describer.get(ctx, id)
		if err != nil {
			logError(ctx, err, "describing an interrupted instance")
			return // the message comes back after its visibility timeout
		}
		if in != nil && p.owns(in) {
			ours = append(ours, in)
		}
	}
	del := func() {
		if err := p.queue.Delete(context.WithoutCancel(ctx), m); err != nil {
			logError(ctx, err, "deleting an interruption message")
		}
	}
	if len(ours) == 0 {
		log.FromContext(ctx).V(1).Info("deleting an interruption message about no instance of this cluster", "message", m.ID, "instances", m.InstanceIDs)
		del()
		return
	}
	var mu sync.Mutex
	left := len(ours)
	for _, in := range ours {
		var zone string
		if in.Placement != nil {
			zone = aws.ToString(in.Placement.AvailabilityZone)
		}
		if m.Kind == cloudprovider.SpotInterruption {
			p.unavailable.MarkUnavailable(string(in.InstanceType), zone, "spot")
		}
		if res := p.instanceReservation(in); m.Kind == cloudprovider.CapacityReservationInterrupted && res != nil {
			p.markFull(res.ID) // as upstream, until the next describe says otherwise
		}
		var once sync.Once
		handled := func() {
			once.Do(func() {
				mu.Lock()
				left--
				last := left == 0
				mu.Unlock()
				if last {
					del()
				}
			})
		}
		notice := cloudprovider.Interruption{ProviderID: ProviderIDPrefix + zone + "/" + aws.ToString(in.InstanceId), Kind: m.Kind, Handled: handled}
		select {
		case p.interruptions <- notice:
		case <-ctx.Done():
			return
		}
	}
}

// owns reports whether the instance is this cluster's provider's.
func (p *Provider) owns(in *ec2types.Instance) bool {
	for _, t := range in.Tags {
		if aws.ToString(t.Key) == tagManagedBy && aws.ToString(t.Value) == p.opts.ClusterName {
			return true
		}
	}
	return false
}
